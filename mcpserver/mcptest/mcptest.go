// Package mcptest drives a hybroute MCP server from tests: a client
// session of the SDK whose calls fail the test, and the walks through the
// tools that the tests of the server and of the command share. It is for
// this project's tests; its API follows their needs.
package mcptest

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/mcpserver"
)

// WantTools are the tools a server lists when its toolset has no state,
// upload or download directory and its router answers dialogs as they
// open: the tools that need nothing.
var WantTools = []string{"browser_navigate", "browser_snapshot", "browser_click", "browser_type", "browser_press",
	"browser_scroll", "browser_back", "browser_screenshot", "browser_console", "browser_exec", "browser_network_requests", "browser_close", "browser_status",
	"browser_tabs", "browser_forward", "browser_reload", "browser_resize",
	"browser_select_option", "browser_fill_form", "browser_hover", "browser_drag", "browser_wait_for"}

// Client is an MCP client session with helpers that fail the test T.
type Client struct {
	T  *testing.T
	CS *mcp.ClientSession
}

// Call calls a tool; a protocol error fails the test.
func (c *Client) Call(name string, args map[string]any) *mcp.CallToolResult {
	c.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if args == nil {
		args = map[string]any{}
	}
	res, err := c.CS.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(c.T, err, name)
	return res
}

// OK calls a tool, fails the test on a tool error, and returns the
// result and its text.
func (c *Client) OK(name string, args map[string]any) (*mcp.CallToolResult, string) {
	c.T.Helper()
	res := c.Call(name, args)
	text := TextOf(res)
	require.False(c.T, res.IsError, "%s: tool error: %s", name, text)
	return res, text
}

// TextOf is the text content of a result.
func TextOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// RefIn is the ref of the snapshot's line that begins with line.
func RefIn(t *testing.T, snapshot, line string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s*- ` + regexp.QuoteMeta(line) + `.*\[ref=(e\d+)\]`).FindStringSubmatch(snapshot)
	require.NotNil(t, m, "no %q with a ref in:\n%s", line, snapshot)
	return m[1]
}

// Exercise drives the toolset over an MCP client session the way a model
// does, on the test site (agenttest.NewSite, serving on 127.0.0.1:port),
// and checks each step's effect.
func Exercise(t *testing.T, c *Client, port string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lt, err := c.CS.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range lt.Tools {
		names = append(names, tool.Name)
		assert.NotEmpty(t, tool.Description, tool.Name)
		assert.NotNil(t, tool.InputSchema, tool.Name)
	}
	assert.ElementsMatch(t, WantTools, names)

	res, text := c.OK("browser_navigate", map[string]any{"url": "127.0.0.1:" + port})
	assert.Contains(t, text, `Page: "Corner Shop" http://127.0.0.1:`+port+`/`)
	assert.Contains(t, text, "Browser: the local browser")
	where, _ := res.Meta[mcpserver.MetaWhere].(map[string]any)
	require.NotNil(t, where, "the result's _meta says where it ran")
	assert.Equal(t, "local", where["route"])

	_, snap := c.OK("browser_snapshot", nil)
	assert.Contains(t, snap, "- paragraph: Cart: 0 items")
	add := RefIn(t, snap, `button "Add to cart"`)
	search := RefIn(t, snap, `searchbox "Search products"`)

	c.OK("browser_click", map[string]any{"ref": add})
	_, snap = c.OK("browser_snapshot", nil)
	assert.Contains(t, snap, "- paragraph: Cart: 1 item", "the click had its effect on the page")

	_, text = c.OK("browser_exec", map[string]any{"code": "await new Promise(r => setTimeout(r, 10)); return cart * 10"})
	assert.Contains(t, text, "Result: 10")

	res, text = c.OK("browser_screenshot", nil)
	var img *mcp.ImageContent
	for _, ct := range res.Content {
		if i, ok := ct.(*mcp.ImageContent); ok {
			img = i
		}
	}
	require.NotNil(t, img, text)
	assert.Equal(t, "image/png", img.MIMEType)
	decoded, err := png.Decode(bytes.NewReader(img.Data))
	require.NoError(t, err)
	assert.Equal(t, [2]int{1280, 720}, [2]int{decoded.Bounds().Dx(), decoded.Bounds().Dy()})

	_, text = c.OK("browser_type", map[string]any{"ref": search, "text": "blue hat", "submit": true})
	assert.Contains(t, text, `Page: "Results for blue hat"`)

	res = c.Call("browser_navigate", map[string]any{"url": "http://169.254.169.254/latest/meta-data/iam/"})
	assert.True(t, res.IsError)
	assert.Contains(t, TextOf(res), "blocked: http://169.254.169.254/latest/meta-data/iam/ targets a cloud metadata endpoint")
	assert.NotContains(t, TextOf(res), "::local")
}

// PageOut reads what the input page's last control did, and its form.
func PageOut(c *Client) string {
	_, text := c.OK("browser_exec", map[string]any{"code": "({out: out.textContent, ...form()})"})
	return text
}

// TabID is the id of the tab whose line of browser_tabs list matches re,
// once one does (a popup is listed as loading at first).
func TabID(t *testing.T, c *Client, re string) string {
	t.Helper()
	rx := regexp.MustCompile(`(?m)^- (t\d+)\b.*` + re)
	var m []string
	require.Eventually(t, func() bool {
		_, list := c.OK("browser_tabs", map[string]any{"action": "list"})
		m = rx.FindStringSubmatch(list)
		return m != nil
	}, 30*time.Second, 100*time.Millisecond, "no tab matching %q", re)
	return m[1]
}

// FilesToUpload is a directory with a file, and a link in it to a file
// outside it.
func FilesToUpload(t *testing.T) string {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello"), 0o600))
	outside := filepath.Join(t.TempDir(), "secret.txt")
	require.NoError(t, os.WriteFile(outside, []byte("secret"), 0o600))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "link.txt")))
	return dir
}

// ExerciseInput drives the tabs, input, navigation and dialog tools over
// an MCP client on the local browser, with uploads from a directory and
// dialogs held for the model.
func ExerciseInput(t *testing.T, c *Client, siteURL string) {
	_, text := c.OK("browser_navigate", map[string]any{"url": siteURL + "/"})
	assert.Contains(t, text, `Page: "Inputs"`)
	_, snap := c.OK("browser_snapshot", nil)

	_, text = c.OK("browser_select_option", map[string]any{"ref": RefIn(t, snap, `combobox "Size"`), "values": []string{"Large"}})
	assert.Contains(t, text, `Selected "Large"`)
	c.OK("browser_fill_form", map[string]any{"fields": []map[string]any{
		{"ref": RefIn(t, snap, `textbox "Name"`), "type": "textbox", "value": "Ada"},
		{"ref": RefIn(t, snap, `checkbox "Subscribe"`), "type": "checkbox", "value": "true"},
		{"ref": RefIn(t, snap, `radio "Pro"`), "type": "radio", "value": "true"},
		{"ref": RefIn(t, snap, `slider "Volume"`), "type": "slider", "value": "42"},
	}})
	assert.Contains(t, PageOut(c), `"name":"Ada","sub":true,"plan":"pro","size":"l","tops":[],"vol":"42"`)
	c.OK("browser_hover", map[string]any{"ref": RefIn(t, snap, `button "Account"`)})
	assert.Contains(t, PageOut(c), `"out":"hovered"`)
	c.OK("browser_drag", map[string]any{"start_ref": RefIn(t, snap, `button "Card"`), "end_ref": RefIn(t, snap, `button "Done column"`)})
	assert.Contains(t, PageOut(c), `"out":"dropped Card"`)

	c.OK("browser_file_upload", map[string]any{"ref": RefIn(t, snap, `button "Attachment"`), "paths": []string{"a.txt"}})
	assert.Contains(t, PageOut(c), `"out":"files a.txt:5"`)
	res := c.Call("browser_file_upload", map[string]any{"ref": RefIn(t, snap, `button "Attachment"`), "paths": []string{"link.txt"}})
	assert.True(t, res.IsError)
	assert.Contains(t, TextOf(res), "outside the upload directory")

	c.OK("browser_click", map[string]any{"ref": RefIn(t, snap, `button "Load later"`)})
	_, text = c.OK("browser_wait_for", map[string]any{"text": "Loaded!"})
	assert.Contains(t, text, `The text "Loaded!" is on the page.`)

	// Dialogs wait for the model.
	res, text = c.OK("browser_click", map[string]any{"ref": RefIn(t, snap, `button "Ask"`)})
	assert.Contains(t, text, `prompt "Your name?" (default "default"): open`)
	dialogs, _ := res.Meta[mcpserver.MetaWhere].(map[string]any)["dialogs"].([]any)
	require.Len(t, dialogs, 1)
	assert.Equal(t, true, dialogs[0].(map[string]any)["pending"])
	_, text = c.OK("browser_handle_dialog", map[string]any{"accept": true, "prompt_text": "Grace"})
	assert.Contains(t, text, `Accepted the prompt`)
	assert.Contains(t, PageOut(c), `"out":"prompt \"Grace\""`)

	// Tabs: a popup becomes one; a new one opens; refused URLs open none.
	c.OK("browser_click", map[string]any{"ref": RefIn(t, snap, `link "Open popup"`)})
	popup := TabID(t, c, `"Popup page"`)
	_, text = c.OK("browser_tabs", map[string]any{"action": "select", "id": popup})
	assert.Contains(t, text, `Page: "Popup page"`)
	_, text = c.OK("browser_tabs", map[string]any{"action": "new", "url": siteURL + "/popup?who=two"})
	assert.Contains(t, text, "it is the current tab")
	res = c.Call("browser_tabs", map[string]any{"action": "new", "url": "http://169.254.169.254/latest/"})
	assert.True(t, res.IsError)
	assert.Contains(t, TextOf(res), "targets a cloud metadata endpoint")
	_, text = c.OK("browser_tabs", map[string]any{"action": "close", "id": popup})
	assert.Contains(t, text, "Closed tab "+popup)

	// Navigation.
	c.OK("browser_navigate", map[string]any{"url": siteURL + "/popup?who=three"})
	c.OK("browser_back", nil)
	_, text = c.OK("browser_forward", nil)
	assert.Contains(t, text, "Went forward.")
	_, text = c.OK("browser_reload", nil)
	assert.Contains(t, text, "Reloaded the page.")
	c.OK("browser_resize", map[string]any{"width": 640, "height": 480})
	_, text = c.OK("browser_exec", map[string]any{"code": "[innerWidth, innerHeight, document.getElementById('who').textContent]"})
	assert.Contains(t, text, `Result: [640,480,"three"]`)
}

// ConnectInMemory connects the SDK's client to srv over the in-memory
// transports; the test's end closes both ends.
func ConnectInMemory(t *testing.T, srv *mcpserver.Server) *Client {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ss, err := srv.Connect(ctx, st)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "v0"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return &Client{T: t, CS: cs}
}

// ConnectHTTP connects the SDK's client over streamable HTTP.
func ConnectHTTP(t *testing.T, url string) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-client", Version: "v0"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return &Client{T: t, CS: cs}
}
