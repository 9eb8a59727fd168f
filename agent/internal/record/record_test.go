package record

import (
	"bytes"
	"encoding/json"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jpegOf is a JPEG of w×h pixels of one colour, padded to at least n
// bytes with a comment-free tail the decoder ignores.
func jpegOf(t testing.TB, w, h int, c color.Color, n int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	require.NoError(t, jpeg.Encode(&b, img, &jpeg.Options{Quality: 80}))
	if b.Len() < n {
		b.Write(make([]byte, n-b.Len()))
	}
	return b.Bytes()
}

// recordOf reads the JSON the player reads back out of a replay file.
func recordOf(t *testing.T, html []byte) data {
	t.Helper()
	_, after, ok := bytes.Cut(html, []byte(`<script type="application/json" id="record">`))
	require.True(t, ok, "the file embeds the record")
	js, _, ok := bytes.Cut(after, []byte("</script>"))
	require.True(t, ok)
	var d data
	require.NoError(t, json.Unmarshal(js, &d))
	return d
}

// TestBounds proves a record holds its bounds whatever it is handed: at
// most one frame per FrameInterval, its count of frames and its bytes of
// them (the oldest thinned out, the first and the newest kept), its count
// of calls (the newest), each text cut where its encoding (< takes six
// bytes) passes its share, and the file within the bound its limits give.
// The limits are the constants scaled down, so the test stays small.
func TestBounds(t *testing.T) {
	t.Parallel()
	require.Equal(t, MaxFileBytes, limits{MaxFrames, MaxFrameBytes, MaxEntries}.fileBytes())
	for _, c := range []struct {
		name      string
		frameSize int
		lim       limits
	}{
		{"the count of frames", 1 << 10, limits{frames: 60, frameBytes: 1 << 20, entries: 50}},
		{"the bytes of frames", 32 << 10, limits{frames: 60, frameBytes: 1 << 20, entries: 50}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			boundsOf(t, c.frameSize, c.lim)
		})
	}
}

func boundsOf(t *testing.T, frameSize int, lim limits) {
	dir := t.TempDir()
	r := New(dir)
	r.lim = lim
	t0 := r.started
	frame := jpegOf(t, 64, 48, color.White, frameSize)
	const sent = 400
	for i := range sent {
		r.AddFrame(Frame{At: t0.Add(time.Duration(i) * 250 * time.Millisecond), JPEG: frame})
	}
	r.mu.Lock()
	assert.LessOrEqual(t, len(r.frames), lim.frames)
	assert.LessOrEqual(t, r.frameBytes, lim.frameBytes)
	assert.Positive(t, r.thinned)
	assert.Equal(t, t0, r.frames[0].At, "the first frame stays")
	assert.Equal(t, t0.Add((sent-2)*250*time.Millisecond), r.frames[len(r.frames)-1].At, "the newest kept frame is the last at 2 a second")
	for i := 1; i < len(r.frames); i++ {
		assert.GreaterOrEqual(t, r.frames[i].At.Sub(r.frames[i-1].At), FrameInterval)
	}
	frames, thinned := len(r.frames), r.thinned
	r.mu.Unlock()
	assert.Equal(t, sent/2, frames+thinned, "every frame at 2 a second is kept or counted")

	nasty := strings.Repeat("<&>", 5000)
	for i := range lim.entries + 10 {
		r.Begin()
		r.End(Entry{Start: t0.Add(time.Duration(i) * time.Millisecond), End: t0.Add(time.Duration(i+1) * time.Millisecond),
			Tool: "browser_exec", Args: `{"code":"` + nasty + `"}`, Result: nasty, URL: "http://x/" + nasty, Title: nasty})
	}
	var files Files
	r.Finish(Info{Session: "s/1 <b>"}, func(f Files, err error) {
		require.NoError(t, err)
		files = f
	})
	require.NotEmpty(t, files.HTML)
	assert.Equal(t, dir, filepath.Dir(files.HTML))
	assert.Regexp(t, `^hybroute-s_1__b_-\d{8}T\d{6}\.\d{3}Z\.html$`, filepath.Base(files.HTML))
	st, err := os.Stat(files.HTML)
	require.NoError(t, err)
	assert.LessOrEqual(t, st.Size(), int64(lim.fileBytes()))
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "the owner's only")
	html, err := os.ReadFile(files.HTML)
	require.NoError(t, err)
	assert.NotContains(t, string(html), "<&>", "the page's text cannot be markup in the file")
	assert.Contains(t, string(html), "<title>hybroute record: s/1 &lt;b&gt;</title>")
	d := recordOf(t, html)
	assert.Len(t, d.Entries, lim.entries)
	assert.Equal(t, 10, d.Dropped, "the oldest calls are counted")
	assert.Equal(t, int64(10), d.Entries[0].T, "the newest are kept")
	assert.True(t, strings.HasSuffix(d.Entries[0].Result, "… (cut)"))
	assert.LessOrEqual(t, encodedLen(d.Entries[0].Result), MaxResultBytes)
	assert.Len(t, d.Frames, frames)
	assert.Equal(t, thinned, d.Thinned)
	assert.True(t, strings.HasPrefix(d.Frames[0].Src, "data:image/jpeg;base64,"))

	r.AddFrame(Frame{At: time.Now().Add(time.Hour), JPEG: frame})
	r.Begin()
	r.End(Entry{Tool: "late"})
	r.mu.Lock()
	assert.Len(t, r.frames, frames, "nothing is kept once written")
	r.mu.Unlock()
}

// TestNewestPicture proves a frame that comes sooner than FrameInterval
// after the last one kept takes its picture: the record ends on the page
// as it was last drawn, and its frames stay FrameInterval apart.
func TestNewestPicture(t *testing.T) {
	t.Parallel()
	r := New(t.TempDir())
	a, b := jpegOf(t, 8, 8, color.White, 0), jpegOf(t, 8, 8, color.Black, 0)
	r.AddFrame(Frame{At: r.started, JPEG: a})
	r.AddFrame(Frame{At: r.started.Add(100 * time.Millisecond), JPEG: b})
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Len(t, r.frames, 1)
	assert.Equal(t, b, r.frames[0].JPEG)
	assert.Equal(t, r.started, r.frames[0].At)
	assert.Equal(t, len(b), r.frameBytes)
}

// TestClip proves a text is cut where its encoding passes the bound, at
// a rune's start, and is kept whole within it.
func TestClip(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"plain", strings.Repeat("é<\n\"", 40), strings.Repeat("x", 99), "\u2028日本語<script>"} {
		for _, max := range []int{20, 50, 100, 1000} {
			got := clip(s, max)
			b, err := json.Marshal(got)
			require.NoError(t, err)
			assert.LessOrEqual(t, len(b), max, "%q at %d", s, max)
			assert.Equal(t, encodedLen(got), len(b), "the count is json.Marshal's")
			if b0, _ := json.Marshal(s); len(b0) <= max {
				assert.Equal(t, s, got)
			} else {
				assert.True(t, strings.HasSuffix(got, "… (cut)") && utf8.ValidString(got), got)
			}
		}
	}
}

// TestWebM proves the frames become a VP8 WebM with ffmpeg, frames of
// another size included. It skips without ffmpeg.
func TestWebM(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Skip("no ffmpeg on the PATH (Debian's ffmpeg package)")
	}
	now := time.Now()
	frames := []Frame{
		{At: now, JPEG: jpegOf(t, 321, 241, color.White, 0)},
		{At: now.Add(600 * time.Millisecond), JPEG: jpegOf(t, 320, 240, color.Black, 0)},
		{At: now.Add(10 * time.Second), JPEG: jpegOf(t, 640, 200, color.Gray{Y: 128}, 0)},
	}
	path := filepath.Join(t.TempDir(), "r.webm")
	require.NoError(t, WebM(t.Context(), bin, path, frames))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Greater(t, len(b), 4)
	assert.Equal(t, []byte{0x1a, 0x45, 0xdf, 0xa3}, b[:4], "an EBML (Matroska/WebM) file")
	if probe, err := exec.LookPath("ffprobe"); err == nil {
		out, err := exec.Command(probe, "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=codec_name,width,height",
			"-of", "csv=p=0", path).Output()
		require.NoError(t, err)
		assert.Equal(t, "vp8,320,240", strings.TrimSpace(string(out)))
	}
}
