package agent_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hybroute/hybroute/hybroutetest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/agenttest"
)

// TestNavigationTools: forward, reload and resize on the local browser, and
// a forward into a page the floor refuses.
func TestNavigationTools(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewSite(t)
	r := agenttest.NewRouter(t, nil)
	ts := newToolset(t, r)
	const s = "nav"

	res := callTool(t, ts, s, "browser_forward", nil)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text, "there is no next page")

	mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": site.URL("127.0.0.1", "/")}))
	mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": site.URL("127.0.0.1", "/page2")}))
	assert.Equal(t, "Corner Shop", mustOK(t, callTool(t, ts, s, "browser_back", nil)).Where.Title)
	fwd := mustOK(t, callTool(t, ts, s, "browser_forward", nil))
	assert.Equal(t, "Page two", fwd.Where.Title)
	assert.Contains(t, fwd.Text, "Went forward.")

	mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": "window.mark = 1"}))
	hits := len(site.Hits())
	rl := mustOK(t, callTool(t, ts, s, "browser_reload", nil))
	assert.Equal(t, "Page two", rl.Where.Title)
	assert.Greater(t, len(site.Hits()), hits, "the page was requested again")
	ex := mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": "typeof window.mark"}))
	assert.Contains(t, ex.Text, `Result: "undefined"`)

	rs := mustOK(t, callTool(t, ts, s, "browser_resize", map[string]int{"width": 800, "height": 600}))
	assert.Contains(t, rs.Text, "Resized the viewport to 800x600.")
	ex = mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": "[innerWidth, innerHeight]"}))
	assert.Contains(t, ex.Text, "Result: [800,600]")
	shot := mustOK(t, callTool(t, ts, s, "browser_screenshot", nil))
	require.Len(t, shot.Images, 1)
	assert.Equal(t, [2]int{800, 600}, [2]int{shot.Images[0].Width, shot.Images[0].Height})
	for _, bad := range []map[string]int{{"width": 10, "height": 600}, {"width": 800, "height": 100000}} {
		res = callTool(t, ts, s, "browser_resize", bad)
		assert.True(t, res.IsError)
		assert.Contains(t, res.Text, "each must be from 200 to 4096")
	}

	// A page that sends itself to a metadata address is refused; going
	// forward into that entry of the history is refused again.
	res = callTool(t, ts, s, "browser_exec", map[string]string{"code": `location.href = "http://" + ["169", "254", "169", "254"].join(".") + "/latest/"`})
	assert.True(t, res.IsError, res.Text)
	// Back two entries, past the refused one, by script (the tools would
	// stop at it), then forward into it.
	// history.go returns at once and the page moves after: the call ends
	// first, or sees the page leave under it and says so.
	if res = callTool(t, ts, s, "browser_exec", map[string]string{"code": "history.go(-2)"}); res.IsError {
		assert.Contains(t, res.Text, "the page navigated away while the code ran")
	}
	assert.Eventually(t, func() bool {
		return mustOK(t, callTool(t, ts, s, "browser_snapshot", nil)).Where.Title == "Page two"
	}, 30*time.Second, 100*time.Millisecond, "back two entries")
	res = callTool(t, ts, s, "browser_forward", nil)
	assert.True(t, res.IsError, res.Text)
	assert.Contains(t, res.Text, "blocked: the page tried to load http://169.254.169.254/latest/, which targets a cloud metadata endpoint")
	assert.Equal(t, "about:blank", res.Where.URL)
}

// TestNavigateReturnsAfterTheFirstFrame: browser_navigate returns once the
// page has run its first frame after the load event, so what the page
// does in that frame is there for the next call to read.
func TestNavigateReturnsAfterTheFirstFrame(t *testing.T) {
	hybroutetest.Parallel(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agenttest.ServePage(w, "frame", nil)
	}))
	t.Cleanup(srv.Close)
	ts := newToolset(t, agenttest.NewRouter(t, nil))
	const s = "frame"
	for range 3 {
		nav := mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": srv.URL + "/"}))
		assert.Equal(t, "framed", nav.Where.Title)
	}
}
