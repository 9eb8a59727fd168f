package download

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/browser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCleanName: a name a page suggests becomes one safe path element:
// no separator, no control character, not hidden, bounded, never empty.
func TestCleanName(t *testing.T) {
	assert.Equal(t, "_.._etc_passwd", CleanName("/../etc/passwd", ""))
	assert.Equal(t, "a_b_c.txt", CleanName(`a\b:c.txt`, ""))
	assert.Equal(t, "bashrc", CleanName("..bashrc", ""))
	assert.Equal(t, "report.pdf", CleanName("re\x00port\u200b.pdf", ""))
	assert.Equal(t, "data.csv", CleanName("", "http://x.test/files/data.csv?token=1#f"))
	assert.Equal(t, "download", CleanName("  ", ""))
	long := CleanName(strings.Repeat("é", 200)+".zip", "")
	assert.LessOrEqual(t, len(long), maxFileName)
	assert.True(t, strings.HasSuffix(long, ".zip"), long)
}

// TestReserveNeverReplaces: a second file of the same name gets a number,
// and the first stays as it was.
func TestReserveNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	first, err := Reserve(dir, "a.txt")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(first, []byte("one"), 0o644))
	second, err := Reserve(dir, "a.txt")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "a (2).txt"), second)
	got, err := os.ReadFile(first)
	require.NoError(t, err)
	assert.Equal(t, "one", string(got))
}

// tracker is a Tracker with one tab watched, fed events by hand.
func tracker(cfg Config) (*Tracker, func(guid string), func(guid string, received int64)) {
	cfg.Go = func(f func()) { f() }
	d := New(cfg)
	d.init()
	d.tabs["TAB"] = "BC"
	d.contexts["BC"] = ""
	ctx := context.Background()
	begin := func(guid string) {
		d.begins(ctx, &browser.EventDownloadWillBegin{GUID: guid, FrameID: "TAB", URL: "http://x.test/" + guid, SuggestedFilename: guid})
	}
	progress := func(guid string, received int64) {
		d.progress(ctx, &browser.EventDownloadProgress{GUID: guid, ReceivedBytes: float64(received), State: browser.DownloadProgressStateInProgress})
	}
	return d, begin, progress
}

// TestSessionBounds: past the session's files or bytes, its downloads are
// cut off: the one that passed and every later one is refused, and the
// next report says so once.
func TestSessionBounds(t *testing.T) {
	d, begin, _ := tracker(Config{MaxBytes: 10 << 20, MaxFiles: 2})
	begin("a")
	begin("b")
	assert.Empty(t, d.cutoff)
	begin("c")
	begin("d")
	assert.Contains(t, d.cutoff, "the page started more than the 2 downloads a session may make")
	assert.Equal(t, dlRefused, d.byGUID["c"].state)
	assert.Equal(t, dlRefused, d.byGUID["d"].state)
	assert.Equal(t, d.cutoff, d.contexts["BC"], "the browser context denies from now on")
	out, err := d.Settle(context.Background(), "TAB", Mark{seq: d.seq}, nil)
	require.NoError(t, err)
	assert.Contains(t, out.Report, "Refused: downloads are cut off")
	out, _ = d.Settle(context.Background(), "TAB", Mark{seq: d.seq}, nil)
	assert.NotContains(t, out.Report, "cut off", "told once")

	d, begin, progress := tracker(Config{MaxBytes: 10 << 20, MaxTotal: 2 << 20})
	begin("a")
	begin("b")
	progress("a", 1<<20)
	progress("b", 1<<20)
	assert.Empty(t, d.cutoff)
	begin("c")
	progress("c", 1)
	assert.Contains(t, d.cutoff, "passed the 2.0 MiB they may take together")
	for _, g := range []string{"a", "b", "c"} {
		assert.Equal(t, dlRefused, d.byGUID[g].state, g)
	}
}

// TestEndRemovesTheSessionsFiles: the files a session saved go when it
// ends, unless it keeps them.
func TestEndRemovesTheSessionsFiles(t *testing.T) {
	for _, keep := range []bool{false, true} {
		dir := t.TempDir()
		f := filepath.Join(dir, "saved.bin")
		require.NoError(t, os.WriteFile(f, []byte("x"), 0o600))
		d := New(Config{Dir: dir, Keep: keep, Go: func(f func()) { f() }})
		fi, err := os.Lstat(f)
		require.NoError(t, err)
		d.saved = []savedFile{{f, fi}}
		d.End()
		_, err = os.Stat(f)
		assert.Equal(t, keep, err == nil, "keep=%v: %v", keep, err)
	}

	// A file moved away and replaced under its name is not the session's.
	dir := t.TempDir()
	f := filepath.Join(dir, "report.csv")
	require.NoError(t, os.WriteFile(f, []byte("mine"), 0o600))
	fi, err := os.Lstat(f)
	require.NoError(t, err)
	require.NoError(t, os.Rename(f, filepath.Join(dir, "moved.csv")))
	require.NoError(t, os.WriteFile(f, []byte("another's"), 0o600))
	d := New(Config{Dir: dir, Go: func(f func()) { f() }})
	d.saved = []savedFile{{f, fi}}
	d.End()
	data, err := os.ReadFile(f)
	require.NoError(t, err)
	assert.Equal(t, "another's", string(data))
}
