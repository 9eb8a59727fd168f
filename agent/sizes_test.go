package agent_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/agent"
	"github.com/hybroute/hybroute/internal/agenttest"
)

// TestModelTextSizes measures what a model reads from the toolset (issue
// 36): the tool list as an MCP server sends it, a snapshot of the
// 1,500-node catalogue, and the answers of a click and a type. It logs the
// figures (go test -run TestModelTextSizes -v ./agent/) and bounds each, so
// that text which grows back is a failure, not a surprise.
func TestModelTextSizes(t *testing.T) {
	type mcpTool struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	var tools []mcpTool
	for _, c := range agent.Catalog() {
		tools = append(tools, mcpTool{c.Name, c.Description, c.InputSchema})
	}
	list, err := json.Marshal(tools)
	require.NoError(t, err)

	site := agenttest.NewSite(t)
	ts := newToolset(t, agenttest.NewRouter(t, nil))
	const s = "sizes"
	mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": site.URL("127.0.0.1", "/")}))
	shop := mustOK(t, callTool(t, ts, s, "browser_snapshot", nil)).Text
	button, box := refOf(`button "Add to cart"`, shop), refOf(`searchbox "Search products"`, shop)
	require.NotEmpty(t, button, shop)
	require.NotEmpty(t, box, shop)
	click := mustOK(t, callTool(t, ts, s, "browser_click", map[string]string{"ref": button})).Text
	typed := mustOK(t, callTool(t, ts, s, "browser_type", map[string]string{"ref": box, "text": "shoes"})).Text
	mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": site.URL("127.0.0.1", "/big?n=300")}))
	catalogue := mustOK(t, callTool(t, ts, s, "browser_snapshot", nil)).Text

	t.Logf("tool list: %d characters (%d tools)", len(list), len(tools))
	t.Logf("snapshot of the 1,500-node catalogue: %d bytes", len(catalogue))
	t.Logf("click answer: %d bytes:\n%s", len(click), click)
	t.Logf("type answer: %d bytes:\n%s", len(typed), typed)
	t.Logf("catalogue:\n%s", catalogue)
	t.Logf("shop:\n%s", shop)
	// The bounds: a sixth to a tenth above the figures of issue 36 (9.6k,
	// 0.6k, 0.2k and 0.2k), none near the 17.2k, 31.6k, 0.3k and 0.3k
	// before it.
	assert.Less(t, len(list), 11000, "the tool list")
	assert.Less(t, len(catalogue), 1000, "the catalogue's snapshot")
	assert.Less(t, len(click), 230, "the click's answer")
	assert.Less(t, len(typed), 200, "the type's answer")
	assert.Contains(t, catalogue, `{"expand":"f1"}`, "what the snapshot folds is one call away")
	assert.Contains(t, click, "Cart: 1 item", "the click's answer carries what it changed")
	assert.Contains(t, typed, "shoes", "the type's answer carries what it changed")
}
