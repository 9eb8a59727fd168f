package mcpserver_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hybroute/hybroute/hybroutetest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent"
	"github.com/hybroute/hybroute/internal/agenttest"
	"github.com/hybroute/hybroute/mcpserver"
	"github.com/hybroute/hybroute/mcpserver/mcptest"
)

// TestMCPEveryToolOverHTTP: every tool of hybroute mcp, called by the
// SDK's client over streamable HTTP on the local Chromium, each checked
// by its effect (in the page, on disk, or in the answer). The table must
// name every tool the server lists: a new tool without a row fails it.
func TestMCPEveryToolOverHTTP(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewInputSite(t)
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/file" {
			w.Header().Set("Content-Disposition", `attachment; filename="data.csv"`)
			w.Header().Set("Content-Type", "text/csv")
			fmt.Fprint(w, "x\n1\n")
			return
		}
		fmt.Fprint(w, `<!doctype html><title>Files</title><a href="/file">Get data</a>`)
	}))
	t.Cleanup(files.Close)
	downloads, states := t.TempDir(), t.TempDir()
	r := agenttest.NewRouter(t, nil, hybroute.WithDialogPolicy(hybroute.DialogPolicy{Hold: true}))
	ts := agent.New(r, agent.WithUploadDir(mcptest.FilesToUpload(t)), agent.WithDownloadDir(downloads), agent.WithStateDir(states))
	t.Cleanup(func() { require.NoError(t, ts.Close()) })
	srv := mcpserver.New(ts, mcpserver.Options{})
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	c := mcptest.ConnectHTTP(t, serveMCPHTTP(t, srv).URL)

	var snap string
	var step *testing.T // the running step's: a ref that is missing fails it
	ref := func(line string) string { return mcptest.RefIn(step, snap, line) }
	// Each step calls one tool; args may read the last snapshot; check
	// looks at the result and, where the tool acts on the page, at the
	// page through browser_exec.
	steps := []struct {
		tool  string
		args  func() map[string]any
		want  string // a regular expression the result's text matches
		check func(c *mcptest.Client, res *mcp.CallToolResult)
	}{
		{tool: "browser_status", want: `Provider: none \(every call runs on the local browser\)`},
		{tool: "browser_navigate", args: func() map[string]any { return map[string]any{"url": site.URL + "/"} }, want: `Page: "Inputs"`},
		{tool: "browser_snapshot", want: `combobox "Size" \[ref=e\d+\]`, check: func(c *mcptest.Client, res *mcp.CallToolResult) { snap = mcptest.TextOf(res) }},
		{tool: "browser_select_option", args: func() map[string]any {
			return map[string]any{"ref": ref(`combobox "Size"`), "values": []string{"Large"}}
		}, want: `Selected "Large"`, check: out(`"size":"l"`)},
		{tool: "browser_fill_form", args: func() map[string]any {
			return map[string]any{"fields": []map[string]any{{"ref": ref(`checkbox "Subscribe"`), "type": "checkbox", "value": "true"}}}
		}, check: out(`"sub":true`)},
		{tool: "browser_type", args: func() map[string]any { return map[string]any{"ref": ref(`textbox "Name"`), "text": "Ada"} }, want: `Typed "Ada"`, check: out(`"name":"Ada"`)},
		{tool: "browser_press", args: func() map[string]any { return map[string]any{"key": "Tab"} }, want: `Pressed Tab\.`},
		{tool: "browser_hover", args: func() map[string]any { return map[string]any{"ref": ref(`button "Account"`)} }, check: out(`"out":"hovered"`)},
		{tool: "browser_drag", args: func() map[string]any {
			return map[string]any{"start_ref": ref(`button "Card"`), "end_ref": ref(`button "Done column"`)}
		}, check: out(`"out":"dropped Card"`)},
		{tool: "browser_file_upload", args: func() map[string]any {
			return map[string]any{"ref": ref(`button "Attachment"`), "paths": []string{"a.txt"}}
		}, check: out(`"out":"files a.txt:`)},
		{tool: "browser_click", args: func() map[string]any { return map[string]any{"ref": ref(`button "Load later"`)} }, want: `Clicked e\d+`},
		{tool: "browser_wait_for", args: func() map[string]any { return map[string]any{"text": "Loaded!"} }, want: `The text "Loaded!" is on the page\.`},
		{tool: "browser_exec", args: func() map[string]any { return map[string]any{"code": "console.log('from exec'); ask(); 1"} }, want: `prompt "Your name\?"`},
		{tool: "browser_handle_dialog", args: func() map[string]any { return map[string]any{"accept": true, "prompt_text": "Grace"} }, want: `Accepted the prompt`,
			check: out(`"out":"prompt \"Grace\""`)},
		{tool: "browser_console", want: `\[log\] from exec`},
		{tool: "browser_scroll", args: func() map[string]any { return map[string]any{"direction": "down"} }, want: `y \d+`},
		{tool: "browser_screenshot", check: func(c *mcptest.Client, res *mcp.CallToolResult) {
			var img *mcp.ImageContent
			for _, ct := range res.Content {
				if i, ok := ct.(*mcp.ImageContent); ok {
					img = i
				}
			}
			require.NotNil(c.T, img)
			assert.Equal(c.T, "image/png", img.MIMEType)
			assert.NotEmpty(c.T, img.Data)
		}},
		{tool: "browser_network_requests", want: `GET [^\n]*/stock\?size=l`},
		{tool: "browser_resize", args: func() map[string]any { return map[string]any{"width": 640, "height": 480} }, check: func(c *mcptest.Client, _ *mcp.CallToolResult) {
			_, text := c.OK("browser_exec", map[string]any{"code": "[innerWidth, innerHeight]"})
			assert.Contains(c.T, text, "Result: [640,480]")
		}},
		{tool: "browser_tabs", args: func() map[string]any { return map[string]any{"action": "list"} }, want: `(?m)^- t\d+\b.*"Inputs"`},
		{tool: "browser_navigate", args: func() map[string]any { return map[string]any{"url": site.URL + "/popup?who=two"} }, want: `who=two`},
		{tool: "browser_back", want: `Page: "Inputs"`},
		{tool: "browser_forward", want: `Went forward\.`},
		{tool: "browser_reload", want: `Reloaded the page\.`},
		{tool: "browser_state_save", args: func() map[string]any { return map[string]any{"name": "after"} }, check: func(c *mcptest.Client, _ *mcp.CallToolResult) {
			_, err := os.Stat(filepath.Join(states, "after.json"))
			assert.NoError(c.T, err)
		}},
		{tool: "browser_state_load", args: func() map[string]any { return map[string]any{"name": "after"} }, want: `Loaded the state "after" into this session: \d+ cookies`},
		{tool: "browser_navigate", args: func() map[string]any { return map[string]any{"url": files.URL + "/"} }, want: `Page: "Files"`},
		{tool: "browser_snapshot", want: `link "Get data"`, check: func(c *mcptest.Client, res *mcp.CallToolResult) { snap = mcptest.TextOf(res) }},
		{tool: "browser_click", args: func() map[string]any { return map[string]any{"ref": ref(`link "Get data"`)} }, want: `saved "data\.csv" \(4 bytes, text/csv`},
		{tool: "browser_downloads", want: `saved "data\.csv"`, check: func(c *mcptest.Client, _ *mcp.CallToolResult) {
			data, err := os.ReadFile(filepath.Join(downloads, "data.csv"))
			require.NoError(c.T, err)
			assert.Equal(c.T, "x\n1\n", string(data))
		}},
		{tool: "browser_pdf_save", args: func() map[string]any { return map[string]any{"filename": "page"} }, check: func(c *mcptest.Client, _ *mcp.CallToolResult) {
			pdf, err := os.ReadFile(filepath.Join(downloads, "page.pdf"))
			require.NoError(c.T, err)
			assert.Regexp(c.T, `^%PDF-`, string(pdf[:8]))
		}},
		{tool: "browser_close", want: `Closed`},
	}

	called := map[string]bool{}
	for i, st := range steps {
		ok := t.Run(fmt.Sprintf("%02d_%s", i, st.tool), func(t *testing.T) {
			step = t
			var args map[string]any
			if st.args != nil {
				args = st.args()
			}
			sc := &mcptest.Client{T: t, CS: c.CS}
			res, text := sc.OK(st.tool, args)
			if st.want != "" {
				assert.Regexp(t, regexp.MustCompile(st.want), text)
			}
			if st.check != nil {
				st.check(sc, res)
			}
		})
		require.True(t, ok, "step %d (%s) failed: the steps after it depend on it", i, st.tool)
		called[st.tool] = true
	}
	for _, tool := range agent.Catalog() { // this server offers every tool
		if tool.Name == agent.ToolHandoff {
			continue // a person acts in it: TestMCPHandoff
		}
		if tool.Name == agent.ToolTypeSecret {
			continue // it needs the operator's secrets: TestMCPSecretsFlag types one over MCP (cmd/hybroute)
		}
		assert.True(t, called[tool.Name], "%s has no step over HTTP", tool.Name)
	}
}

// out checks what the input page's controls did, as browser_exec reads it.
func out(want string) func(c *mcptest.Client, _ *mcp.CallToolResult) {
	return func(c *mcptest.Client, _ *mcp.CallToolResult) {
		assert.Contains(c.T, mcptest.PageOut(c), want)
	}
}
