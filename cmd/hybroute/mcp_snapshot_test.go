package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hybroute/hybroute/hybroutetest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/agenttest"
)

// TestMCPSnapshotDirFlag: --snapshot-dir is where browser_snapshot may
// write a snapshot to a file, over MCP from the SDK's client; the shaping
// options pass through.
func TestMCPSnapshotDirFlag(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewSite(t)
	dir := t.TempDir()
	c, _ := startBinary(t, nil, "--provider", "none", "--snapshot-dir", dir)
	c.OK("browser_navigate", map[string]any{"url": site.URL("127.0.0.1", "/big?n=20")})
	_, text := c.OK("browser_snapshot", map[string]any{"file": "big.txt"})
	assert.Contains(t, text, "Wrote the snapshot (")
	data, err := os.ReadFile(filepath.Join(dir, "big.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(data), `- link "Item 19"`)
	_, text = c.OK("browser_snapshot", map[string]any{"find": "Item 7", "depth": 3})
	assert.Contains(t, text, `- link "Item 7"`)
	assert.NotContains(t, text, "Item 8")
}
