package agent_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hybroute/hybroute/hybroutetest"

	"github.com/hybroute/hybroute/agent"
	"github.com/hybroute/hybroute/internal/agenttest"
	"github.com/hybroute/hybroute/state"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStateTools: a session's login saved with browser_state_save under a
// name, and loaded into a fresh session with browser_state_load, which
// then sends the cookie and has the storage. The file is 0600 in the
// state directory; no value reaches the model.
func TestStateTools(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewSite(t)
	r := agenttest.NewRouter(t, nil)
	dir := t.TempDir()
	ts := newToolset(t, r, agent.WithStateDir(dir))
	page := "http://localhost:" + site.Port + "/"

	early := callTool(t, ts, "one", "browser_state_save", map[string]string{"name": "shop"})
	assert.True(t, early.IsError)
	assert.Contains(t, early.Text, "this session has no browser yet")
	mustOK(t, callTool(t, ts, "one", "browser_navigate", map[string]string{"url": page}))
	mustOK(t, callTool(t, ts, "one", "browser_exec", map[string]string{
		"code": `document.cookie = "sid=secret-sid; path=/"; localStorage.setItem("theme", "secret-theme"); 1`}))
	saved := mustOK(t, callTool(t, ts, "one", "browser_state_save", map[string]string{"name": "shop"}))
	assert.Contains(t, saved.Text, `Saved this session's state as "shop": 1 cookies, 1 origins`)
	assert.NotContains(t, saved.Text, "secret-")
	fi, err := os.Stat(filepath.Join(dir, "shop.json"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	st, err := state.ReadFile(filepath.Join(dir, "shop.json"))
	require.NoError(t, err)
	require.Len(t, st.Cookies, 1)
	assert.Equal(t, "secret-sid", st.Cookies[0].Value)

	loaded := mustOK(t, callTool(t, ts, "two", "browser_state_load", map[string]string{"name": "shop.json"}))
	assert.NotContains(t, loaded.Text, "secret-")
	mustOK(t, callTool(t, ts, "two", "browser_navigate", map[string]string{"url": page}))
	got := mustOK(t, callTool(t, ts, "two", "browser_exec", map[string]string{"code": `document.cookie + "|" + localStorage.getItem("theme")`}))
	assert.Contains(t, got.Text, `sid=secret-sid|secret-theme`)
}

// TestStateToolsRefuseBadNames: a name is a plain file name in the state
// directory; a path, a symbolic link, a missing or malformed file, or no
// state directory at all is a tool error that says so.
func TestStateToolsRefuseBadNames(t *testing.T) {
	hybroutetest.Parallel(t)
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "outside.json")
	require.NoError(t, os.WriteFile(outside, []byte(`{"cookies":[],"origins":[]}`), 0o600))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "link.json")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "broken.json"), []byte(`{"cookies": [{"name": "a", "value": "secret-v"}]}`), 0o600))
	ts := newToolset(t, nil, agent.WithStateDir(dir))
	for name, want := range map[string]string{
		"../outside": "invalid state name",
		"a/b":        "invalid state name",
		"/etc/x":     "invalid state name",
		"..":         "invalid state name",
		".hidden":    "invalid state name",
		"link":       "symbolic link",
		"missing":    `there is no state "missing"`,
		"broken":     "bad storage state",
	} {
		res := callTool(t, ts, "s", "browser_state_load", map[string]string{"name": name})
		assert.True(t, res.IsError, name)
		assert.Contains(t, res.Text, want, name)
		assert.NotContains(t, res.Text, dir, "the directory is the operator's")
		assert.NotContains(t, res.Text, "secret-", name)
	}
	res := callTool(t, ts, "s", "browser_state_save", map[string]string{"name": "../x"})
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text, "invalid state name")

	off := newToolset(t, nil)
	res = callTool(t, off, "s", "browser_state_save", map[string]string{"name": "x"})
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text, "browser_state_save is off on this server: the operator set no state directory")
}
