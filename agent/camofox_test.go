package agent_test

import (
	"bytes"
	"image/png"
	"strings"
	"testing"

	"github.com/hybroute/hybroute/hybroutetest"

	"github.com/hybroute/hybroute/internal/agenttest"
	"github.com/hybroute/hybroute/internal/camofoxtest"
	"github.com/hybroute/hybroute/internal/testenv"
	"github.com/hybroute/hybroute/provider"
	"github.com/hybroute/hybroute/route"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCamofoxToolset: the toolset drives a page on Camofox (a stand-in of
// its REST endpoints on a real Chromium) through its REST API, private
// addresses still run on the local browser, metadata is refused before any
// request, and browser_exec, which needs CDP, gets the no-CDP message.
func TestCamofoxToolset(t *testing.T) {
	hybroutetest.Parallel(t)
	testenv.RequireChromium(t)
	site := agenttest.NewSite(t)
	cf := camofoxtest.New(t, "", "--user-agent="+agenttest.CloudUA, "--host-resolver-rules="+agenttest.HostRules)
	r := agenttest.NewRouter(t, provider.NewCamofox("", provider.WithBaseURL(cf.URL)))
	ts := newToolset(t, r)
	const s = "fox"

	nav := mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": site.URL(agenttest.PublicHost, "/")}))
	assert.Equal(t, route.Cloud, nav.Where.Route)
	assert.Equal(t, site.URL(agenttest.PublicHost, "/"), nav.Where.URL)
	hits := site.Hits()
	require.NotEmpty(t, hits)
	assert.Equal(t, agenttest.CloudUA, hits[len(hits)-1].UA, "the Camofox browser loaded it")

	snap := mustOK(t, callTool(t, ts, s, "browser_snapshot", nil))
	assert.Contains(t, snap.Text, "Corner Shop")
	add := refOf(`button "Add to cart"`, snap.Text)
	search := refOf(`searchbox "Search products"`, snap.Text)
	require.NotEmpty(t, add, snap.Text)
	require.NotEmpty(t, search, snap.Text)

	stale := callTool(t, ts, s, "browser_click", map[string]string{"ref": "e999"})
	assert.True(t, stale.IsError)
	assert.Contains(t, stale.Text, `the browser server refused the click: "Unknown ref: e999 (take a new snapshot)"`)

	mustOK(t, callTool(t, ts, s, "browser_click", map[string]string{"ref": add}))
	snap = mustOK(t, callTool(t, ts, s, "browser_snapshot", nil))
	assert.Contains(t, snap.Text, "Cart: 1 item", "the click ran in the page")

	scr := mustOK(t, callTool(t, ts, s, "browser_scroll", map[string]string{"direction": "down"}))
	assert.Contains(t, scr.Text, "Scrolled down.")
	mustOK(t, callTool(t, ts, s, "browser_press", map[string]string{"key": "Tab"}))

	shot := mustOK(t, callTool(t, ts, s, "browser_screenshot", nil))
	require.Len(t, shot.Images, 1)
	cfg, err := png.DecodeConfig(bytes.NewReader(shot.Images[0].Data))
	require.NoError(t, err)
	assert.Positive(t, cfg.Width)
	// The REST server's PNG is scaled and re-encoded here.
	small := mustOK(t, callTool(t, ts, s, "browser_screenshot", map[string]any{"format": "jpeg", "max_width": 100}))
	smallImg, mime := decodeShot(t, small)
	assert.Equal(t, "image/jpeg", mime)
	assert.Equal(t, min(100, cfg.Width), smallImg.Bounds().Dx())
	el := callTool(t, ts, s, "browser_screenshot", map[string]any{"ref": search})
	assert.True(t, el.IsError, "an element screenshot needs CDP")
	assert.Contains(t, el.Text, "leave ref out")
	for _, tool := range []string{"browser_network_requests", "browser_pdf_save"} {
		res := callTool(t, ts, s, tool, nil)
		assert.True(t, res.IsError, tool)
	}

	typed := mustOK(t, callTool(t, ts, s, "browser_type", map[string]any{"ref": search, "text": "socks", "submit": true}))
	assert.Contains(t, typed.Text, "The page navigated")
	assert.Equal(t, site.URL(agenttest.PublicHost, "/search?q=socks"), typed.Where.URL)

	back := mustOK(t, callTool(t, ts, s, "browser_back", nil))
	assert.Equal(t, site.URL(agenttest.PublicHost, "/"), back.Where.URL)
	assert.Equal(t, route.Cloud, back.Where.Route)

	con := callTool(t, ts, s, "browser_console", nil)
	assert.True(t, con.IsError)
	assert.Contains(t, con.Text, "without CDP")

	ex := callTool(t, ts, s, "browser_exec", map[string]string{"code": "document.title"})
	assert.True(t, ex.IsError)
	assert.Contains(t, ex.Text, "Cloud browser provider Camofox returned no CDP endpoint, so Browser Use mode cannot drive it.")

	// The verdicts still decide: private runs locally, metadata nowhere.
	before := len(cf.Requests())
	loc := mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": site.URL("127.0.0.1", "/page2")}))
	assert.Equal(t, route.Local, loc.Where.Route)
	hits = site.Hits()
	assert.NotEqual(t, agenttest.CloudUA, hits[len(hits)-1].UA, "the local browser loaded it")
	meta := callTool(t, ts, s, "browser_navigate", map[string]string{"url": "http://169.254.169.254/latest/meta-data/"})
	assert.True(t, meta.IsError)
	assert.Contains(t, meta.Text, "cloud metadata")
	assert.Len(t, cf.Requests(), before, "neither reached the Camofox server")

	// Back on the cloud page: the same Camofox tab, its page kept.
	nav = mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": site.URL(agenttest.PublicHost, "/page2")}))
	assert.Equal(t, route.Cloud, nav.Where.Route)
	assert.True(t, nav.Where.BrowserChanged)

	mustOK(t, callTool(t, ts, s, "browser_close", nil))
	assert.Equal(t, 0, cf.OpenTabs())
	for _, req := range cf.Requests() {
		assert.False(t, strings.Contains(req, "169.254"), req)
	}
}
