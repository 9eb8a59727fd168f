package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/agent"
	"github.com/hybroute/hybroute/mcpserver/mcptest"
)

var updateDocs = flag.Bool("update", false, "rewrite the generated tool lists of README.md and docs/server.md")

// TestToolListsMatchTheCatalog: every tool of the catalog is in the help
// of hybroute mcp once, under the flag that offers it, and the tool lists
// of the docs are the ones made from the catalog (-update rewrites them).
func TestToolListsMatchTheCatalog(t *testing.T) {
	for _, tool := range agent.Catalog() {
		flag, ok := needFlags[tool.Needs]
		require.True(t, ok, "%s needs %q, which no flag of hybroute mcp meets", tool.Name, tool.Needs)
		if flag != "" {
			assert.NotEmpty(t, needOptions[tool.Needs], "%s: the option that meets %q", tool.Name, tool.Needs)
		}
	}

	code, _, help := runCmd(t, nil, "", "mcp", "-h")
	require.Equal(t, exitOK, code)
	require.Contains(t, help, toolsHelp())
	for _, tool := range agent.Catalog() {
		assert.Equal(t, 1, strings.Count(help, tool.Name+",")+strings.Count(help, tool.Name+"\n"), "%s in the help", tool.Name)
	}

	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	want := toolsMarkdown()
	for _, doc := range []string{"README.md", "docs/server.md"} {
		path := filepath.Join(root, doc)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		text := string(b)
		i := strings.Index(text, toolsBegin)
		j := strings.Index(text, toolsEnd)
		require.True(t, i >= 0 && j > i, "%s has no generated tool list (its markers)", doc)
		got := text[i+len(toolsBegin) : j]
		if *updateDocs && got != want {
			text = text[:i+len(toolsBegin)] + want + text[j:]
			require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
			got = want
		}
		assert.Equal(t, want, got, "%s: the tool list is stale: go test ./cmd/hybroute -run TestToolListsMatchTheCatalog -update", doc)
	}
}

// TestMCPOffersTheToolsItsHelpSays: the server, started with each flag
// that offers tools, lists the tools always offered and those of the flag,
// and no other, as its help says.
func TestMCPOffersTheToolsItsHelpSays(t *testing.T) {
	groups := toolGroups()
	dir := t.TempDir()
	secretsFile := filepath.Join(dir, "secrets.json")
	require.NoError(t, os.WriteFile(secretsFile, []byte(`{"pw": {"value": "pass-word", "origins": ["https://example.com"]}}`), 0o600))
	args := map[string][]string{
		"--state-dir":     {"--state-dir", dir},
		"--upload-dir":    {"--upload-dir", dir},
		"--download-dir":  {"--download-dir", dir},
		"--dialogs model": {"--dialogs", "model"},
		"--secrets":       {"--secrets", secretsFile},
		"--http":          nil, // served over HTTP below
	}
	for _, g := range groups {
		t.Run(g.flag, func(t *testing.T) {
			extra, ok := args[g.flag]
			require.True(t, ok || g.flag == "", "no arguments for %s", g.flag)
			var c *mcptest.Client
			if g.flag == "--http" {
				c = mcptest.ConnectHTTP(t, startHTTPBinary(t, "--provider", "none").String())
			} else {
				c, _ = startBinary(t, nil, append([]string{"--provider", "none"}, extra...)...)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			lt, err := c.CS.ListTools(ctx, nil)
			require.NoError(t, err)
			var got []string
			for _, tool := range lt.Tools {
				got = append(got, tool.Name)
			}
			want := groups[0].names
			if g.flag != "" {
				want = append(append([]string(nil), want...), g.names...)
			}
			assert.ElementsMatch(t, want, got)
		})
	}
}
