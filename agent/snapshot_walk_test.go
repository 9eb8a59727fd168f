package agent_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hybroute/hybroute/hybroutetest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/agenttest"
)

// TestSnapshotWalk: on a page (testdata/walk.html of agenttest) with what
// the snapshot must leave out (hidden content, a password), what it must
// name from elsewhere than the text (labels, aria-label, alt) and a page
// script that cannot reach the ref registry, the snapshot read in the page names what the AX tree
// would, hides what is hidden, masks passwords, and keeps its refs out of
// the page's reach.
func TestSnapshotWalk(t *testing.T) {
	hybroutetest.Parallel(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agenttest.ServePage(w, "walk", nil)
	}))
	t.Cleanup(srv.Close)
	ts := newToolset(t, agenttest.NewRouter(t, nil))
	const s = "walk"
	mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": srv.URL + "/"}))
	snap := mustOK(t, callTool(t, ts, s, "browser_snapshot", nil))
	t.Log(snap.Text)
	assert.Contains(t, snap.Text, `Page: "Walk"`)
	assert.Contains(t, snap.Text, `- heading "Sign in" [level=2]`)
	for _, hidden := range []string{"Hidden button", "Hidden link", "Invisible text", "hunter2"} {
		assert.NotContains(t, snap.Text, hidden)
	}
	assert.Contains(t, snap.Text, "but this shows", "a visible child of a hidden element shows")
	assert.Regexp(t, `- textbox "Password" \[ref=e\d+\]: •••••••`, snap.Text)
	assert.Regexp(t, `- textbox "Your email" \[ref=e\d+\]: a@b.c`, snap.Text)
	assert.Regexp(t, `- button "Close dialog" \[ref=e\d+\]`, snap.Text)
	assert.Contains(t, snap.Text, `- img "Company logo"`)
	assert.Contains(t, snap.Text, `- table "Prices":`)
	assert.Contains(t, snap.Text, `- columnheader "Price"`)
	assert.Contains(t, snap.Text, `- cell "Tea"`)

	// The page's own scripts do not see the registry, so they cannot
	// point a ref at another element.
	probe := mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": "[document.getElementById('probe').textContent, typeof globalThis.__hybroute, typeof globalThis.__hybrouteWalk]"}))
	assert.Contains(t, probe.Text, `Result: ["registry undefined","undefined","undefined"]`)

	closeRef := refOf(`button "Close dialog"`, snap.Text)
	require.NotEmpty(t, closeRef)
	mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": "document.querySelector('[aria-label]').onclick = () => document.title = 'closed'"}))
	clicked := mustOK(t, callTool(t, ts, s, "browser_click", map[string]string{"ref": closeRef}))
	assert.Equal(t, "closed", clicked.Where.Title, "the ref of the walk clicked its element")
}
