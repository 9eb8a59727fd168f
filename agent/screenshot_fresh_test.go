package agent_test

import (
	"image"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/hybroutetest"
	"github.com/hybroute/hybroute/internal/agenttest"
)

// freshPage fills the viewport with one red box and a button whose click
// paints it green a task later and blue a frame later: what a screenshot
// right after the click must show is what the click's handlers queued.
const freshPage = `document.body.innerHTML = '<div id=box style="position:fixed;inset:0;background:rgb(255,0,0)"></div>' +
	'<button id=go style="position:fixed;left:10px;top:10px;z-index:1">Paint</button>' +
	'<p id=note style="position:fixed;left:10px;top:40px;z-index:1"></p>';
document.getElementById('go').onclick = () => {
	setTimeout(() => { box.style.background = 'rgb(0,255,0)'; }, 0);
	requestAnimationFrame(() => { box.style.borderBottom = '20px solid rgb(0,0,255)'; });
};
'ready'`

// TestScreenshotShowsTheLastAction: browser_screenshot right after an
// action, back to back, shows what the action did (Chromium captures a
// frame drawn after the request, and the action's own settle lets the
// work its handlers queued run), and the same after a script.
func TestScreenshotShowsTheLastAction(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewSite(t)
	ts := newToolset(t, agenttest.NewRouter(t, nil))
	const s = "fresh"
	mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": site.URL("127.0.0.1", "/")}))
	mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": freshPage}))
	before, _ := decodeShot(t, mustOK(t, callTool(t, ts, s, "browser_screenshot", nil)))
	assertRGB(t, before, 640, 360, [3]uint8{255, 0, 0}, "before the click")

	snap := mustOK(t, callTool(t, ts, s, "browser_snapshot", nil))
	paint := refOf(`button "Paint"`, snap.Text)
	require.NotEmpty(t, paint, snap.Text)
	mustOK(t, callTool(t, ts, s, "browser_click", map[string]string{"ref": paint}))
	after, _ := decodeShot(t, mustOK(t, callTool(t, ts, s, "browser_screenshot", nil)))
	assertRGB(t, after, 640, 360, [3]uint8{0, 255, 0}, "the click's task ran before the capture")
	assertRGB(t, after, 640, 710, [3]uint8{0, 0, 255}, "the click's frame callback ran before the capture")

	mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": "box.style.background = 'rgb(255,255,0)'; 1"}))
	script, _ := decodeShot(t, mustOK(t, callTool(t, ts, s, "browser_screenshot", nil)))
	assertRGB(t, script, 640, 360, [3]uint8{255, 255, 0}, "the script's change")

	// A change the page makes on its own, seen by browser_wait_for as it
	// happens (before the browser draws it): the capture draws it first.
	mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": "setTimeout(() => { box.style.background = 'rgb(0,255,255)'; note.textContent = 'painted'; }, 50); 1"}))
	waited := mustOK(t, callTool(t, ts, s, "browser_wait_for", map[string]any{"text": "painted"}))
	require.Contains(t, waited.Text, "is on the page", waited.Text)
	own, _ := decodeShot(t, mustOK(t, callTool(t, ts, s, "browser_screenshot", nil)))
	assertRGB(t, own, 640, 360, [3]uint8{0, 255, 255}, "the page's own change, not yet drawn when the capture was asked for")
}

// assertRGB checks the colour of the pixel at x, y, within a small
// tolerance for the encoder.
func assertRGB(t *testing.T, img image.Image, x, y int, want [3]uint8, msg string) {
	t.Helper()
	r, g, b, _ := img.At(img.Bounds().Min.X+x, img.Bounds().Min.Y+y).RGBA()
	got := [3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8)}
	for i := range got {
		if d := int(got[i]) - int(want[i]); d > 8 || d < -8 {
			assert.Failf(t, "wrong colour", "%s: pixel (%d,%d) is %v, want %v", msg, x, y, got, want)
			return
		}
	}
}
