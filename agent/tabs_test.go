package agent_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/hybroute/hybroute/hybroutetest"

	"github.com/hybroute/hybroute/agent"
	"github.com/hybroute/hybroute/internal/agenttest"
	"github.com/hybroute/hybroute/route"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tabLine finds the id of the tab whose list line matches re.
func tabLine(t *testing.T, list, re string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^- (t\d+)\b.*` + re).FindStringSubmatch(list)
	require.NotNil(t, m, "no tab matching %q in\n%s", re, list)
	return m[1]
}

func tabs(t *testing.T, ts *agent.Toolset, s string) string {
	t.Helper()
	return mustOK(t, callTool(t, ts, s, "browser_tabs", map[string]string{"action": "list"})).Text
}

// TestTabsOnLocalChromium: a popup the page opens becomes a tab; tabs are
// selected, opened and closed; refused URLs open no tab.
func TestTabsOnLocalChromium(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewInputSite(t)
	r := agenttest.NewRouter(t, nil)
	ts := newToolset(t, r)
	const s = "tabs"

	assert.Contains(t, tabs(t, ts, s), "No tabs yet")
	mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": site.URL + "/"}))
	snap := mustOK(t, callTool(t, ts, s, "browser_snapshot", nil)).Text
	mustOK(t, callTool(t, ts, s, "browser_click", map[string]string{"ref": refOf(`link "Open popup"`, snap)}))
	// The click returns before the popup has loaded: it is listed as
	// loading until it has.
	var list string
	require.Eventually(t, func() bool {
		list = tabs(t, ts, s)
		return regexp.MustCompile(`"Popup page"`).MatchString(list)
	}, 30*time.Second, 100*time.Millisecond)
	first := tabLine(t, list, `\[current\] "Inputs"`)
	popup := tabLine(t, list, `"Popup page" .*/popup\?who=one \(local browser`)

	sel := mustOK(t, callTool(t, ts, s, "browser_tabs", map[string]string{"action": "select", "id": popup}))
	assert.Equal(t, "Popup page", sel.Where.Title)
	assert.NotContains(t, sel.Text, "Note:", "a chosen switch is no surprise")
	ex := mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": "document.getElementById('who').textContent"}))
	assert.Contains(t, ex.Text, `Result: "one"`)
	stale := callTool(t, ts, s, "browser_click", map[string]string{"ref": refOf(`link "Open popup"`, snap)})
	assert.True(t, stale.IsError, "refs of another tab do not resolve")

	nt := mustOK(t, callTool(t, ts, s, "browser_tabs", map[string]string{"action": "new", "url": site.URL + "/popup?who=two"}))
	assert.Contains(t, nt.Text, "Opened a new tab t3")
	assert.Equal(t, "Popup page", nt.Where.Title)
	ex = mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": "document.getElementById('who').textContent"}))
	assert.Contains(t, ex.Text, `Result: "two"`)
	assert.Contains(t, tabs(t, ts, s), "- t3 [current]")

	// Refused URLs: no tab opens.
	res := callTool(t, ts, s, "browser_tabs", map[string]string{"action": "new", "url": "169.254.169.254/latest/"})
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text, "targets a cloud metadata endpoint")
	assert.False(t, res.Where.Ran)
	sel = mustOK(t, callTool(t, ts, s, "browser_tabs", map[string]string{"action": "select", "id": first}))
	assert.Equal(t, "Inputs", sel.Where.Title)
	snap = mustOK(t, callTool(t, ts, s, "browser_snapshot", nil)).Text
	res = callTool(t, ts, s, "browser_click", map[string]string{"ref": refOf(`link "Metadata popup"`, snap)})
	assert.True(t, res.IsError, res.Text)
	assert.Contains(t, res.Text, "169.254.169.254")
	list = tabs(t, ts, s)
	assert.NotContains(t, list, "169.254")
	assert.Len(t, regexp.MustCompile(`(?m)^- t\d+`).FindAllString(list, -1), 3, list)

	// Closing the current tab makes another current; the last is kept.
	closed := mustOK(t, callTool(t, ts, s, "browser_tabs", map[string]string{"action": "close", "id": "t3"}))
	assert.Contains(t, closed.Text, "Closed tab t3.")
	list = tabs(t, ts, s)
	assert.NotContains(t, list, "- t3")
	assert.Contains(t, list, "[current]")
	mustOK(t, callTool(t, ts, s, "browser_tabs", map[string]string{"action": "close", "id": popup}))
	res = callTool(t, ts, s, "browser_tabs", map[string]string{"action": "close", "id": first})
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text, "is the only tab of its browser")
	res = callTool(t, ts, s, "browser_tabs", map[string]string{"action": "select", "id": "t9"})
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text, `there is no tab "t9"`)
}

// TestTabsAcrossRoutes: a tab opened at a local address while the session
// is in the cloud browser opens in the local browser, and says so; the
// cloud tabs stay, and selecting one takes the session back there.
func TestTabsAcrossRoutes(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewSite(t)
	cloud := agenttest.NewCloud(t)
	r := agenttest.NewRouter(t, cloud.Provider)
	ts := newToolset(t, r)
	const s = "tabs-hybrid"

	nav := mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": site.URL(agenttest.PublicHost, "/")}))
	assert.Equal(t, route.Cloud, nav.Where.Route)
	mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": "window.open('/page2'); return 1"}))
	var list string
	require.Eventually(t, func() bool {
		list = tabs(t, ts, s)
		return regexp.MustCompile(`"Page two"`).MatchString(list)
	}, 30*time.Second, 100*time.Millisecond)
	cloudPopup := tabLine(t, list, `"Page two" .*\(cloud browser\)`)

	nt := mustOK(t, callTool(t, ts, s, "browser_tabs", map[string]string{"action": "new", "url": site.URL("localhost", "/page2")}))
	assert.Equal(t, route.Local, nt.Where.Route)
	assert.Contains(t, nt.Text, "It opened in the local browser")
	list = tabs(t, ts, s)
	tabLine(t, list, `\[current\] "Page two" .*localhost.*\(local browser`)
	tabLine(t, list, `"Corner Shop" .*\(cloud browser\)`)

	sel := mustOK(t, callTool(t, ts, s, "browser_tabs", map[string]string{"action": "select", "id": cloudPopup}))
	assert.Equal(t, route.Cloud, sel.Where.Route)
	assert.Equal(t, "Page two", sel.Where.Title)
	snap := mustOK(t, callTool(t, ts, s, "browser_snapshot", nil))
	assert.Equal(t, route.Cloud, snap.Where.Route)
	assert.Contains(t, snap.Text, "Second page")

	// A popup to a private address from the cloud page is refused there,
	// and closed: it never becomes a tab.
	res := callTool(t, ts, s, "browser_exec", map[string]string{"code": "window.open(location.origin.replace('" + agenttest.PublicHost + "', '127.0.0.1')); return 1"})
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text, "targets a private or internal address")
	assert.Equal(t, route.Cloud, res.Where.Route)
	assert.NotContains(t, tabs(t, ts, s), "127.0.0.1")
}
