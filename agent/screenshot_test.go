package agent_test

import (
	"bytes"
	"image"
	"image/jpeg"
	"image/png"
	"testing"

	"github.com/hybroute/hybroute/hybroutetest"

	"github.com/hybroute/hybroute/agent"
	"github.com/hybroute/hybroute/internal/agenttest"
	"github.com/hybroute/hybroute/route"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// decodeShot decodes the one image of a screenshot result in the format
// its MIME type names, and checks the reported size against the image.
func decodeShot(t *testing.T, r agent.Result) (image.Image, string) {
	t.Helper()
	require.Len(t, r.Images, 1, r.Text)
	im := r.Images[0]
	var img image.Image
	var err error
	switch im.MIMEType {
	case "image/png":
		img, err = png.Decode(bytes.NewReader(im.Data))
	case "image/jpeg":
		img, err = jpeg.Decode(bytes.NewReader(im.Data))
	default:
		t.Fatalf("unexpected MIME type %q", im.MIMEType)
	}
	require.NoError(t, err)
	assert.Equal(t, [2]int{im.Width, im.Height}, [2]int{img.Bounds().Dx(), img.Bounds().Dy()}, "the reported size is the image's")
	return img, im.MIMEType
}

// TestScreenshotShapes: an element, JPEG with a quality, and a maximum
// width or height, on the local browser.
func TestScreenshotShapes(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewSite(t)
	r := agenttest.NewRouter(t, nil)
	ts := newToolset(t, r)
	const s = "shots"
	mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": site.URL("127.0.0.1", "/")}))
	snap := mustOK(t, callTool(t, ts, s, "browser_snapshot", nil))
	add := refOf(`button "Add to cart"`, snap.Text)
	require.NotEmpty(t, add, snap.Text)

	full := mustOK(t, callTool(t, ts, s, "browser_screenshot", nil))
	fullImg, _ := decodeShot(t, full)
	assert.Equal(t, 1280, fullImg.Bounds().Dx())
	assert.Equal(t, snap.Where.Title, full.Where.Title, "the where-line has the page's title")
	assert.NotEmpty(t, full.Where.Title)

	el := mustOK(t, callTool(t, ts, s, "browser_screenshot", map[string]any{"ref": add}))
	elImg, mime := decodeShot(t, el)
	assert.Equal(t, "image/png", mime)
	assert.Contains(t, el.Text, `Screenshot of `+add+` (button "Add to cart")`)
	assert.Less(t, elImg.Bounds().Dx(), 300, "only the button")
	assert.Less(t, elImg.Bounds().Dy(), 80, "only the button")
	assert.Greater(t, elImg.Bounds().Dx(), 40)

	jp := mustOK(t, callTool(t, ts, s, "browser_screenshot", map[string]any{"format": "jpeg", "quality": 30}))
	jpImg, mime := decodeShot(t, jp)
	assert.Equal(t, "image/jpeg", mime)
	assert.Equal(t, fullImg.Bounds(), jpImg.Bounds())
	assert.Contains(t, jp.Text, "1280x720 JPEG")
	hi := mustOK(t, callTool(t, ts, s, "browser_screenshot", map[string]any{"format": "jpeg", "quality": 95}))
	assert.Less(t, len(jp.Images[0].Data), len(hi.Images[0].Data), "a lower quality makes a smaller file")

	small := mustOK(t, callTool(t, ts, s, "browser_screenshot", map[string]any{"max_width": 640}))
	smallImg, _ := decodeShot(t, small)
	assert.Equal(t, [2]int{640, 360}, [2]int{smallImg.Bounds().Dx(), smallImg.Bounds().Dy()})

	tall := mustOK(t, callTool(t, ts, s, "browser_screenshot", map[string]any{"full_page": true, "max_height": 1000, "format": "jpeg"}))
	tallImg, _ := decodeShot(t, tall)
	assert.LessOrEqual(t, tallImg.Bounds().Dy(), 1000)
	assert.GreaterOrEqual(t, tallImg.Bounds().Dy(), 990, "scaled to fit, not cut")
	assert.Less(t, tallImg.Bounds().Dx(), 1280/2, "the whole page is over twice as high as wide, so it is scaled under half its width")

	for _, bad := range []map[string]any{
		{"format": "gif"},
		{"quality": 50},
		{"format": "jpeg", "quality": 0},
		{"max_width": 3},
		{"ref": add, "full_page": true},
	} {
		res := callTool(t, ts, s, "browser_screenshot", bad)
		assert.True(t, res.IsError, "%v: %s", bad, res.Text)
		assert.False(t, res.Where.Ran, "%v: a bad argument runs nothing", bad)
	}
	stale := callTool(t, ts, s, "browser_screenshot", map[string]any{"ref": "e9999"})
	assert.True(t, stale.IsError)
}

// TestScreenshotShapesOnTheCloud: the same options on the cloud browser.
func TestScreenshotShapesOnTheCloud(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewSite(t)
	cloud := agenttest.NewCloud(t)
	r := agenttest.NewRouter(t, cloud.Provider)
	ts := newToolset(t, r)
	const s = "cloud-shots"
	nav := mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": site.URL(agenttest.PublicHost, "/")}))
	require.Equal(t, route.Cloud, nav.Where.Route)
	base, _ := decodeShot(t, mustOK(t, callTool(t, ts, s, "browser_screenshot", nil)))
	res := mustOK(t, callTool(t, ts, s, "browser_screenshot", map[string]any{"format": "jpeg", "max_width": base.Bounds().Dx() / 2}))
	assert.Equal(t, route.Cloud, res.Where.Route)
	img, mime := decodeShot(t, res)
	assert.Equal(t, "image/jpeg", mime)
	assert.LessOrEqual(t, img.Bounds().Dx(), base.Bounds().Dx()/2)
	assert.GreaterOrEqual(t, img.Bounds().Dx(), base.Bounds().Dx()/2-1, "scaled to the width asked, not below")
	assert.Less(t, img.Bounds().Dy(), base.Bounds().Dy()*6/10, "the height scales with it")
	snap := mustOK(t, callTool(t, ts, s, "browser_snapshot", nil))
	add := refOf(`button "Add to cart"`, snap.Text)
	el := mustOK(t, callTool(t, ts, s, "browser_screenshot", map[string]any{"ref": add}))
	elImg, _ := decodeShot(t, el)
	assert.Less(t, elImg.Bounds().Dx(), 300)
}
