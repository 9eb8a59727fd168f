package main

import (
	"testing"

	"github.com/hybroute/hybroute/hybroutetest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/agenttest"
	"github.com/hybroute/hybroute/internal/camofoxtest"
	"github.com/hybroute/hybroute/internal/testenv"
	"github.com/hybroute/hybroute/mcpserver"
	"github.com/hybroute/hybroute/mcpserver/mcptest"
)

// TestMCPOverStdioBinaryOnCamofox: "hybroute mcp --provider camofox"
// drives the page through the server's REST API ($CAMOFOX_URL, with its
// access key), and browser_exec, which needs CDP, gets the no-CDP message.
func TestMCPOverStdioBinaryOnCamofox(t *testing.T) {
	hybroutetest.Parallel(t)
	testenv.RequireChromium(t)
	site := agenttest.NewSite(t)
	const access = "cf_stdio_access_0123456789"
	cf := camofoxtest.New(t, access, "--user-agent="+agenttest.CloudUA, "--host-resolver-rules="+agenttest.HostRules)
	c, stderr := startBinary(t, []string{"CAMOFOX_URL=" + cf.URL, "CAMOFOX_ACCESS_KEY=" + access}, "--provider", "camofox")

	res, text := c.OK("browser_navigate", map[string]any{"url": site.URL(agenttest.PublicHost, "/")})
	assert.Equal(t, "cloud", res.Meta[mcpserver.MetaWhere].(map[string]any)["route"])
	hits := site.Hits()
	require.NotEmpty(t, hits)
	assert.Equal(t, agenttest.CloudUA, hits[len(hits)-1].UA, "the Camofox browser loaded it: %s", text)
	_, text = c.OK("browser_snapshot", nil)
	mcptest.RefIn(t, text, `button "Add to cart"`)

	ex := c.Call("browser_exec", map[string]any{"code": "document.title"})
	assert.True(t, ex.IsError)
	assert.Contains(t, mcptest.TextOf(ex), "Cloud browser provider Camofox returned no CDP endpoint")

	c.OK("browser_close", nil)
	assert.Equal(t, 0, cf.OpenTabs())
	require.NoError(t, c.CS.Close())
	assert.Contains(t, stderr.String(), "cloud provider camofox")
	assert.NotContains(t, stderr.String(), access, "the access key never reaches the logs")
}
