package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hybroute/hybroute/hybroutetest"

	"github.com/hybroute/hybroute/agent"
	"github.com/hybroute/hybroute/internal/agenttest"
	"github.com/hybroute/hybroute/mcpserver"
	"github.com/hybroute/hybroute/mcpserver/mcptest"
	"github.com/hybroute/hybroute/state"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMCPStorageState: --storage-state logs every new MCP session in, and
// a login one client saves with browser_state_save another loads with
// browser_state_load, over the SDK's client.
func TestMCPStorageState(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewSite(t)
	dir := t.TempDir()
	start := filepath.Join(t.TempDir(), "start.json")
	require.NoError(t, state.WriteFile(start, &state.State{Cookies: []state.Cookie{
		{Name: "sid", Value: "from-flag", Domain: "127.0.0.1", Path: "/", Expires: -1, SameSite: "Lax"}}}))
	opts, err := stateOptions(start, dir)
	require.NoError(t, err)
	r := agenttest.NewRouter(t, nil, opts...)
	ts := agent.New(r, agent.WithStateDir(dir))
	t.Cleanup(func() { require.NoError(t, ts.Close()) })
	srv := mcpserver.New(ts, mcpserver.Options{})
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	page := site.URL("127.0.0.1", "/")

	a := mcptest.ConnectInMemory(t, srv)
	a.OK("browser_navigate", map[string]any{"url": page})
	_, text := a.OK("browser_exec", map[string]any{"code": `document.cookie`})
	assert.Contains(t, text, "sid=from-flag", "--storage-state loaded into the new session")
	a.OK("browser_exec", map[string]any{"code": `document.cookie = "cart=3; path=/"; 1`})
	_, text = a.OK("browser_state_save", map[string]any{"name": "shopper"})
	assert.NotContains(t, text, "from-flag")
	fi, err := os.Stat(filepath.Join(dir, "shopper.json"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	b := mcptest.ConnectInMemory(t, srv)
	b.OK("browser_state_load", map[string]any{"name": "shopper"})
	b.OK("browser_navigate", map[string]any{"url": page})
	_, text = b.OK("browser_exec", map[string]any{"code": `document.cookie`})
	assert.Contains(t, text, "cart=3", "the saved login came with browser_state_load")

	res := b.Call("browser_state_load", map[string]any{"name": "../start"})
	assert.True(t, res.IsError)
	assert.Contains(t, mcptest.TextOf(res), "invalid state name")
}

func TestStateOptionsRefuseBadInput(t *testing.T) {
	hybroutetest.Parallel(t)
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"cookies": 3}`), 0o600))
	_, err := stateOptions(bad, "")
	require.ErrorIs(t, err, state.ErrInvalid)
	assert.Contains(t, err.Error(), "--storage-state")
	_, err = stateOptions("", bad)
	assert.ErrorContains(t, err, "--state-dir")
	_, err = stateOptions("", filepath.Join(t.TempDir(), "missing"))
	assert.ErrorContains(t, err, "--state-dir")
}
