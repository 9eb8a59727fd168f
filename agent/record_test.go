package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent"
	"github.com/hybroute/hybroute/agent/internal/record"
	"github.com/hybroute/hybroute/hybroutetest"
	"github.com/hybroute/hybroute/internal/agenttest"
)

// recorded is the part of a replay file's embedded record a test reads.
type recorded struct {
	Session string `json:"session"`
	Frames  []struct {
		T   int64  `json:"t"`
		Src string `json:"src"`
	} `json:"frames"`
	Entries []struct {
		Tool   string `json:"tool"`
		Args   string `json:"args"`
		Result string `json:"result"`
		Error  bool   `json:"error"`
		Route  string `json:"route"`
		URL    string `json:"url"`
	} `json:"entries"`
}

// TestRecording runs a session with a record on the local Chromium, ends
// it with browser_close, and checks the replay file: one per session, the
// owner's only, within its bound, with frames of the page and every call
// on the timeline, the token the model put in a URL redacted everywhere in
// the file; then opens it in Chromium and plays it: the player shows a
// frame and one entry per call, and steps. With ffmpeg installed, a WebM
// of the frames is beside it. HYBROUTE_UPDATE_DOCS=1 writes the player's
// screenshot to docs/replay.png.
func TestRecording(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewSite(t)
	r := agenttest.NewRouter(t, nil)
	dir := t.TempDir()
	ts := newToolset(t, r, agent.WithRecording(dir))
	const s, secret = "rec-1", "tok-SECRET-4711"

	mustOK(t, callTool(t, ts, s, agent.ToolNavigate, map[string]string{"url": site.URL("127.0.0.1", "/?access_token="+secret)}))
	snap := mustOK(t, callTool(t, ts, s, agent.ToolSnapshot, nil))
	add := refOf(`button "Add to cart"`, snap.Text)
	require.NotEmpty(t, add, snap.Text)
	mustOK(t, callTool(t, ts, s, agent.ToolClick, map[string]string{"ref": add}))
	mustOK(t, callTool(t, ts, s, agent.ToolExec, map[string]string{"code": "location.href"}))
	refused := callTool(t, ts, s, agent.ToolNavigate, map[string]string{"url": "http://169.254.169.254/latest/?token=" + secret})
	require.True(t, refused.IsError, refused.Text)
	require.Eventually(t, func() bool { kept, _ := agent.RecordedFrames(ts, s); return kept >= 2 }, 30*time.Second, 20*time.Millisecond,
		"the tab's screencast gives the record the page")
	mustOK(t, callTool(t, ts, s, agent.ToolClose, nil))

	files, err := filepath.Glob(filepath.Join(dir, "*.html"))
	require.NoError(t, err)
	require.Len(t, files, 1, "one file per session, written when browser_close returns")
	st, err := os.Stat(files[0])
	require.NoError(t, err)
	assert.LessOrEqual(t, st.Size(), int64(record.MaxFileBytes))
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	html, err := os.ReadFile(files[0])
	require.NoError(t, err)
	assert.NotContains(t, string(html), secret, "the token is in no argument, result or page URL of the file")
	rec := embedded(t, html)
	assert.Equal(t, s, rec.Session)
	assert.NotEmpty(t, rec.Frames)
	tools := make([]string, len(rec.Entries))
	for i, e := range rec.Entries {
		tools[i] = e.Tool
	}
	assert.Equal(t, []string{agent.ToolNavigate, agent.ToolSnapshot, agent.ToolClick, agent.ToolExec, agent.ToolNavigate, agent.ToolClose}, tools)
	assert.Contains(t, rec.Entries[0].Args, "access_token=", "the arguments are kept, redacted")
	assert.Equal(t, "local", rec.Entries[0].Route)
	assert.Contains(t, rec.Entries[3].Result, "access_token=", "the results too")
	assert.True(t, rec.Entries[4].Error, "a refused call is marked")

	if _, err := exec.LookPath("ffmpeg"); err == nil {
		webm := strings.TrimSuffix(files[0], ".html") + ".webm"
		b, err := os.ReadFile(webm)
		require.NoError(t, err, "with ffmpeg, a WebM beside the file")
		require.Greater(t, len(b), 4)
		assert.Equal(t, []byte{0x1a, 0x45, 0xdf, 0xa3}, b[:4], "an EBML (WebM) file")
	} else {
		t.Log("no ffmpeg: the WebM is not checked")
	}

	// The player, in Chromium: the router's own browser opens the file
	// from loopback.
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var entries, current int
	var clockBefore, clockAfter, playing string
	var shot []byte
	viewer := srv.URL + "/" + filepath.Base(files[0])
	_, err = r.Navigate(ctx, "viewer", viewer, func(ctx context.Context, _ *hybroute.Call) error {
		eval := func(out *string, js string) error {
			v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
			*out = v
			return err
		}
		if _, err := chromedp.Run(ctx, chromedp.Navigate(viewer)); err != nil {
			return err
		}
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.body.dataset.ready === "true" && document.getElementById("frame").naturalWidth > 0`,
			chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			return err
		}
		var err error
		if entries, err = chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#timeline li.entry").length`)); err != nil {
			return err
		}
		for _, step := range []struct {
			out *string
			js  string
		}{
			{&clockBefore, `document.getElementById("clock").textContent`},
			{&clockAfter, `document.getElementById("next").click(), document.getElementById("clock").textContent`},
			{&playing, `document.getElementById("play").click(), document.getElementById("play").textContent`},
		} {
			if err := eval(step.out, step.js); err != nil {
				return err
			}
		}
		// The script's entry, after the click, as a person picks it on the
		// timeline.
		if current, err = chromedp.Run(ctx, chromedp.Evaluate[int](`document.getElementById("play").click(),
			document.querySelectorAll("#timeline li.entry")[3].click(),
			[...document.querySelectorAll("#timeline li.entry")].findIndex((e) => e.classList.contains("current"))`)); err != nil {
			return err
		}
		// The picked moment's frame is drawn before the picture is taken.
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("frame").complete`)); err != nil {
			return err
		}
		shot, err = chromedp.Run(ctx, chromedp.CaptureScreenshot())
		return err
	})
	require.NoError(t, err)
	assert.Equal(t, len(rec.Entries), entries, "one timeline entry per call")
	assert.NotEqual(t, clockBefore, clockAfter, "a step moves the time")
	assert.Equal(t, "Pause", playing, "play plays")
	assert.Equal(t, 3, current, "the picked call is the current one")
	_, err = png.Decode(bytes.NewReader(shot))
	require.NoError(t, err)
	if os.Getenv("HYBROUTE_UPDATE_DOCS") == "1" {
		require.NoError(t, os.WriteFile(filepath.Join("..", "docs", "replay.png"), shot, 0o644))
	}

	// A tab hidden from the record, as browser_type_secret hides the tab
	// it types a secret in, gives it no frame more: neither the
	// screencast's nor the call's last picture.
	const hid = "rec-2"
	mustOK(t, callTool(t, ts, hid, agent.ToolNavigate, map[string]string{"url": site.URL("127.0.0.1", "/")}))
	agent.HideFromRecord(ts, hid)
	_, taken := agent.RecordedFrames(ts, hid)
	snap = mustOK(t, callTool(t, ts, hid, agent.ToolSnapshot, nil))
	add = refOf(`button "Add to cart"`, snap.Text)
	require.NotEmpty(t, add, snap.Text)
	mustOK(t, callTool(t, ts, hid, agent.ToolClick, map[string]string{"ref": add}))
	_, after := agent.RecordedFrames(ts, hid)
	assert.Equal(t, taken, after, "no frame of the hidden tab")
}

// embedded reads the record a replay file embeds for its player.
func embedded(t *testing.T, html []byte) recorded {
	t.Helper()
	_, after, ok := bytes.Cut(html, []byte(`<script type="application/json" id="record">`))
	require.True(t, ok, "the file embeds its record")
	js, _, ok := bytes.Cut(after, []byte("</script>"))
	require.True(t, ok)
	var rec recorded
	require.NoError(t, json.Unmarshal(js, &rec))
	return rec
}
