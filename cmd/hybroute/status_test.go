package main

import (
	"regexp"
	"testing"

	"github.com/hybroute/hybroute/hybroutetest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent"
	"github.com/hybroute/hybroute/internal/agenttest"
	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/mcpserver"
	"github.com/hybroute/hybroute/mcpserver/mcptest"
)

// statusClient is an MCP client of a toolset on r, over the SDK's
// in-memory transport.
func statusClient(t *testing.T, r *hybroute.Router) (*mcptest.Client, func() *mcptest.Client) {
	t.Helper()
	ts := agent.New(r)
	t.Cleanup(func() { require.NoError(t, ts.Close()) })
	srv := mcpserver.New(ts, mcpserver.Options{})
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	another := func() *mcptest.Client { return mcptest.ConnectInMemory(t, srv) }
	return another(), another
}

// browserLine matches the Browser line of a status: a Chromium product.
var browserLine = regexp.MustCompile(`(?m)^Browser: "(Headless)?Chrome/\d+\.`)

// TestMCPBrowserStatusLocal: before any call the status says no session
// is open and opens none; after a navigation it names the local route,
// the local Chromium's version, and the rules the router was given.
func TestMCPBrowserStatusLocal(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewSite(t)
	r := agenttest.NewRouter(t, nil, hybroute.WithBlockedHosts("*.bad.test"),
		hybroute.WithDialogPolicy(hybroute.DialogPolicy{Accept: true, PromptText: "yes"}))
	c, _ := statusClient(t, r)

	_, text := c.OK("browser_status", nil)
	assert.Contains(t, text, "Route: none yet")
	assert.NotContains(t, text, "Browser:", "no browser is asked or opened")
	st, err := r.Status(t.Context(), "default")
	require.NoError(t, err)
	assert.False(t, st.Open)

	c.OK("browser_navigate", map[string]any{"url": "127.0.0.1:" + site.Port})
	_, text = c.OK("browser_status", nil)
	assert.Contains(t, text, "Route: local (Chromium on this machine)")
	assert.Contains(t, text, "Provider: none")
	assert.Contains(t, text, "Fell back to the local browser: no")
	assert.Regexp(t, browserLine, text)
	assert.Contains(t, text, "- Routing: local only")
	assert.Contains(t, text, `- Blocked hosts: "*.bad.test"`)
	assert.Contains(t, text, "- Allowed hosts: any")
	assert.Contains(t, text, `alert, confirm and prompt accepted (a prompt answers "yes")`)
	assert.Contains(t, text, "- Cloud metadata addresses: always refused")
	assert.Contains(t, text, "- Persistent local profiles: off")

	res := c.Call("browser_status", map[string]any{"verbose": true})
	assert.True(t, res.IsError, "an unknown argument is refused")
}

// TestMCPBrowserStatusCloudAndFallback: a session on the cloud browser
// reports the cloud route, the provider and the cloud Chromium's version;
// a session the provider refused reports the fallback and its reason,
// quoted.
func TestMCPBrowserStatusCloudAndFallback(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewSite(t)
	cloud := agenttest.NewCloud(t)
	r := agenttest.NewRouter(t, cloud.Provider)
	c, another := statusClient(t, r)

	c.OK("browser_navigate", map[string]any{"url": site.URL(agenttest.PublicHost, "/")})
	_, text := c.OK("browser_status", nil)
	assert.Contains(t, text, "Route: cloud")
	assert.Contains(t, text, "Provider: Browserbase")
	assert.Contains(t, text, "Fell back to the local browser: no")
	assert.Regexp(t, browserLine, text)
	assert.Contains(t, text, "- Routing: hybrid")
	assert.Contains(t, text, "- Private addresses: local browser only")
	assert.Contains(t, text, "- URLs that carry a credential: kept off the cloud browser")
	assert.Contains(t, text, "- WebRTC in cloud pages: off (no RTCPeerConnection")
	assert.Contains(t, text, "- Fallback to the local browser when the provider fails: on")

	cloud.API.OnCreate(cloudtest.RateLimited("17"))
	c2 := another()
	c2.OK("browser_navigate", map[string]any{"url": site.URL(agenttest.PublicHost, "/")})
	_, text = c2.OK("browser_status", nil)
	assert.Contains(t, text, "Route: local")
	assert.Regexp(t, `(?m)^Fell back to the local browser: yes, .*; reason: ".*429.*"$`, text)
	assert.NotContains(t, text, cloud.API.APIKey)
}
