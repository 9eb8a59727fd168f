package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/agent"
	"github.com/hybroute/hybroute/internal/agenttest"
	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/testenv"
	"github.com/hybroute/hybroute/internal/testlog"
)

var wantTools = []string{"browser_navigate", "browser_snapshot", "browser_click", "browser_type", "browser_press",
	"browser_scroll", "browser_back", "browser_screenshot", "browser_console", "browser_exec", "browser_network_requests", "browser_downloads", "browser_pdf_save", "browser_close", "browser_status",
	"browser_state_save", "browser_state_load", "browser_tabs",
	"browser_forward", "browser_reload", "browser_resize",
	"browser_select_option", "browser_fill_form", "browser_hover", "browser_drag", "browser_file_upload", "browser_wait_for", "browser_handle_dialog"}

// client is an MCP client session with helpers that fail the test.
type client struct {
	t  *testing.T
	cs *mcp.ClientSession
}

func (c *client) call(name string, args map[string]any) *mcp.CallToolResult {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if args == nil {
		args = map[string]any{}
	}
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(c.t, err, name)
	return res
}

func (c *client) ok(name string, args map[string]any) (*mcp.CallToolResult, string) {
	c.t.Helper()
	res := c.call(name, args)
	text := textOf(res)
	require.False(c.t, res.IsError, "%s: tool error: %s", name, text)
	return res, text
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func refIn(t *testing.T, snapshot, line string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s*- ` + regexp.QuoteMeta(line) + `.*\[ref=(e\d+)\]`).FindStringSubmatch(snapshot)
	require.NotNil(t, m, "no %q with a ref in:\n%s", line, snapshot)
	return m[1]
}

// exercise drives the toolset over an MCP client session the way a model
// does, on the test site, and checks each step's effect.
func exercise(t *testing.T, c *client, site *agenttest.Site) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lt, err := c.cs.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range lt.Tools {
		names = append(names, tool.Name)
		assert.NotEmpty(t, tool.Description, tool.Name)
		assert.NotNil(t, tool.InputSchema, tool.Name)
	}
	assert.ElementsMatch(t, wantTools, names)

	res, text := c.ok("browser_navigate", map[string]any{"url": "127.0.0.1:" + site.Port})
	assert.Contains(t, text, `Page: "Corner Shop" http://127.0.0.1:`+site.Port+`/`)
	assert.Contains(t, text, "Browser: the local browser")
	where, _ := res.Meta[MetaWhere].(map[string]any)
	require.NotNil(t, where, "the result's _meta says where it ran")
	assert.Equal(t, "local", where["route"])

	_, snap := c.ok("browser_snapshot", nil)
	assert.Contains(t, snap, "- paragraph: Cart: 0 items")
	add := refIn(t, snap, `button "Add to cart"`)
	search := refIn(t, snap, `searchbox "Search products"`)

	c.ok("browser_click", map[string]any{"ref": add})
	_, snap = c.ok("browser_snapshot", nil)
	assert.Contains(t, snap, "- paragraph: Cart: 1 item", "the click had its effect on the page")

	_, text = c.ok("browser_exec", map[string]any{"code": "await new Promise(r => setTimeout(r, 10)); return cart * 10"})
	assert.Contains(t, text, "Result: 10")

	res, text = c.ok("browser_screenshot", nil)
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

	_, text = c.ok("browser_type", map[string]any{"ref": search, "text": "blue hat", "submit": true})
	assert.Contains(t, text, `Page: "Results for blue hat"`)

	res = c.call("browser_navigate", map[string]any{"url": "http://169.254.169.254/latest/meta-data/iam/"})
	assert.True(t, res.IsError)
	assert.Contains(t, textOf(res), "blocked: http://169.254.169.254/latest/meta-data/iam/ targets a cloud metadata endpoint")
	assert.NotContains(t, textOf(res), "::local")
}

func TestMCPInProcess(t *testing.T) {
	site := agenttest.NewSite(t)
	r := agenttest.NewRouter(t, nil)
	ts := agent.New(r)
	t.Cleanup(func() { require.NoError(t, ts.Close()) })
	srv := newMCPServer(ts)

	c := connectInMemory(t, srv)
	exercise(t, &client{t: t, cs: c}, site)

	// Two client sessions are two browser sessions.
	c2 := &client{t: t, cs: connectInMemory(t, srv)}
	_, text := c2.ok("browser_snapshot", nil)
	assert.Contains(t, text, "Page: about:blank", "a second client session starts on a page of its own")

	// The end of a client session releases its browser session.
	require.NoError(t, c.Close())
	require.Eventually(t, func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return len(srv.keys) == 1
	}, 20*time.Second, 50*time.Millisecond)
	srv.close()
}

func connectInMemory(t *testing.T, srv *mcpServer) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ss, err := srv.server.Connect(ctx, st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "v0"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestMCPReportsTheFallback: a provider answering 429 gives the session a
// local browser, and the tool result says it is a fallback from the cloud.
func TestMCPReportsTheFallback(t *testing.T) {
	site := agenttest.NewSite(t)
	cloud := agenttest.NewCloud(t)
	cloud.API.OnCreate(cloudtest.RateLimited("17"))
	r := agenttest.NewRouter(t, cloud.Provider)
	ts := agent.New(r)
	t.Cleanup(func() { require.NoError(t, ts.Close()) })
	srv := newMCPServer(ts)
	t.Cleanup(srv.close)
	c := &client{t: t, cs: connectInMemory(t, srv)}

	res, text := c.ok("browser_navigate", map[string]any{"url": site.URL(agenttest.PublicHost, "/")})
	assert.Contains(t, text, "fallback from cloud")
	assert.Contains(t, text, `Page: "Corner Shop"`)
	where := res.Meta[MetaWhere].(map[string]any)
	assert.Equal(t, true, where["fallback_from_cloud"])
	assert.Contains(t, where["fallback_reason"], "429", "the model is told why")
	assert.Equal(t, "local", where["route"])
	assert.EqualValues(t, 1, cloud.API.Creates())
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built {
		if bin, err := buildBinary(); err == nil {
			_ = os.RemoveAll(filepath.Dir(bin))
		}
	}
	os.Exit(code)
}

// built is set once buildBinary ran, so TestMain knows to remove its output.
var built bool

// buildBinary builds the command with the test hooks (loopback-only
// egress, a static resolver) once per test binary.
var buildBinary = sync.OnceValues(func() (string, error) {
	built = true
	dir, err := os.MkdirTemp("", "hybroute-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "hybroute")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "hybroutetest", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", &buildError{out: string(out), err: err}
	}
	return bin, nil
})

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

// startBinary runs "hybroute mcp args..." over stdio and connects the SDK's
// client to it.
func startBinary(t *testing.T, envv []string, args ...string) (*client, *testlog.Buffer) {
	t.Helper()
	testenv.RequireChromium(t)
	bin, err := buildBinary()
	require.NoError(t, err)
	cmd := exec.Command(bin, append([]string{"mcp"}, args...)...)
	cmd.Env = append(os.Environ(), envv...)
	stderr := &testlog.Buffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "v0"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	require.NoError(t, err, "stderr: %s", stderr)
	t.Cleanup(func() {
		_ = cs.Close()
		assert.NotContains(t, stderr.String(), "TEST EGRESS VIOLATION", "the local browser reached beyond loopback")
	})
	return &client{t: t, cs: cs}, stderr
}

func TestMCPOverStdioBinary(t *testing.T) {
	site := agenttest.NewSite(t)
	c, stderr := startBinary(t, nil, "--provider", "none")
	exercise(t, c, site)
	_, text := c.ok("browser_close", nil)
	assert.Contains(t, text, "Closed")
	require.NoError(t, c.cs.Close())
	assert.Contains(t, stderr.String(), "hybroute mcp: no cloud provider: every call runs on the local Chromium")
}

func TestMCPOverStdioBinaryReportsTheFallback(t *testing.T) {
	site := agenttest.NewSite(t)
	// No cloud browser is needed: every create answers 429.
	api := cloudtest.NewServer(t, cloudtest.Browserbase, "ws://127.0.0.1:9/devtools/browser/none",
		cloudtest.WithAPIKey("bb_stdio_test_key_0123456789"), cloudtest.WithProjectID("proj-stdio"))
	api.OnCreate(cloudtest.RateLimited("17"))
	c, stderr := startBinary(t, []string{"BROWSERBASE_API_KEY=bb_stdio_test_key_0123456789", "BROWSERBASE_PROJECT_ID=proj-stdio"},
		"--provider", "browserbase", "--provider-url", api.URL)
	res, text := c.ok("browser_navigate", map[string]any{"url": site.URL(agenttest.PublicHost, "/")})
	assert.Contains(t, text, "fallback from cloud")
	assert.Contains(t, text, `Page: "Corner Shop"`)
	assert.Equal(t, true, res.Meta[MetaWhere].(map[string]any)["fallback_from_cloud"])
	assert.EqualValues(t, 1, api.Creates())
	require.NoError(t, c.cs.Close())
	logs := stderr.String()
	assert.Contains(t, logs, "falling back to local Chromium")
	assert.NotContains(t, logs, "bb_stdio_test_key_0123456789", "the API key never reaches the logs")
}

func TestHostGuard(t *testing.T) {
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	bound := mustTCPAddr(t, "127.0.0.1:8931")
	h := hostGuard("127.0.0.1:8931", bound, []string{"mcp.internal.example"}, next)
	for _, tc := range []struct {
		host, origin string
		want         int
	}{
		{"127.0.0.1:8931", "", http.StatusTeapot},
		{"localhost:8931", "http://localhost:8931", http.StatusTeapot},
		{"[::1]:8931", "", http.StatusTeapot},
		{"mcp.internal.example:8931", "", http.StatusTeapot},
		{"evil.example:8931", "", http.StatusForbidden},                 // DNS rebinding: the attacker's name
		{"localhost:8932", "", http.StatusForbidden},                    // another port
		{"127.0.0.1:8931", "http://evil.example", http.StatusForbidden}, // a page of another site
		{"127.0.0.1:8931", "null", http.StatusForbidden},
		{"127.0.0.1:8931", "http://localhost:3000", http.StatusForbidden},
	} {
		req := httptest.NewRequest(http.MethodPost, "http://"+tc.host+"/", nil)
		req.Host = tc.host
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		assert.Equal(t, tc.want, w.Code, "Host %s Origin %q", tc.host, tc.origin)
	}
}

// TestMCPOverHTTP: the SDK's client over streamable HTTP, through the
// host guard, each client session with a browser session of its own.
func TestMCPOverHTTP(t *testing.T) {
	site := agenttest.NewSite(t)
	_, hs := newHTTPServer(t)
	a, b := connectHTTP(t, hs.URL), connectHTTP(t, hs.URL)
	_, text := a.ok("browser_navigate", map[string]any{"url": site.URL("127.0.0.1", "/page2")})
	assert.Contains(t, text, `Page: "Page two"`)
	_, text = b.ok("browser_snapshot", nil)
	assert.Contains(t, text, "Page: about:blank", "the second client has a browser session of its own")
	_, text = a.ok("browser_snapshot", nil)
	assert.Contains(t, text, `heading "Second page"`)

	// A request naming another host is refused before the MCP handler.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL, strings.NewReader(`{}`))
	require.NoError(t, err)
	req.Host = "rebound.example"
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
}

// TestMCPResultsRedactPageURLs: a page whose URL carries credentials (a
// token in the query, an OAuth access_token in the fragment) is shown
// with them redacted, in the result's text and in its _meta, on every
// tool; a page refused after it landed is reported where the tab really
// is, about:blank.
func TestMCPResultsRedactPageURLs(t *testing.T) {
	site := agenttest.NewSite(t)
	r := agenttest.NewRouter(t, nil)
	ts := agent.New(r)
	t.Cleanup(func() { require.NoError(t, ts.Close()) })
	srv := newMCPServer(ts)
	t.Cleanup(srv.close)
	c := &client{t: t, cs: connectInMemory(t, srv)}

	secrets := []string{"qTokenSecret1234", "apiKeySecret5678", "fragTokenSecret90"}
	page := site.URL("127.0.0.1", "/?token="+secrets[0]+"&api_key="+secrets[1]+"&view=full#access_token="+secrets[2]+"&state=x")
	noSecret := func(what string, res *mcp.CallToolResult) {
		t.Helper()
		meta, err := json.Marshal(res.Meta)
		require.NoError(t, err)
		for _, s := range secrets {
			assert.NotContains(t, textOf(res), s, "%s: the text shows a credential", what)
			assert.NotContains(t, string(meta), s, "%s: _meta shows a credential", what)
		}
	}
	res, text := c.ok("browser_navigate", map[string]any{"url": page})
	noSecret("navigate", res)
	assert.Contains(t, text, "/?token=REDACTED&api_key=REDACTED&view=full#access_token=REDACTED&state=x", "the rest of the URL is shown")
	assert.Equal(t, site.URL("127.0.0.1", "/?token=REDACTED&api_key=REDACTED&view=full#access_token=REDACTED&state=x"),
		res.Meta[MetaWhere].(map[string]any)["url"])
	for _, call := range []struct {
		name string
		args map[string]any
	}{
		{"browser_snapshot", nil},
		{"browser_exec", map[string]any{"code": "console.log('from', location.pathname); return 1"}},
		{"browser_console", nil},
		{"browser_scroll", map[string]any{"direction": "down"}},
		{"browser_screenshot", nil},
	} {
		res, text := c.ok(call.name, call.args)
		noSecret(call.name, res)
		assert.Contains(t, text, "token=REDACTED", call.name)
		if call.name == "browser_console" {
			assert.Contains(t, text, "[log] shop ready (http://127.0.0.1:"+site.Port+"/?token=REDACTED", "a console line's URL is redacted too")
		}
	}

	// The page sends itself to a metadata address: the guard refuses it and
	// the tab goes to about:blank, which is where the result says it is.
	res = c.call("browser_exec", map[string]any{"code": `location.href = "http://" + ["169", "254", "169", "254"].join(".") + "/latest/?token=` + secrets[0] + `"`})
	require.True(t, res.IsError, textOf(res))
	noSecret("refused exec", res)
	assert.Contains(t, textOf(res), "sent to about:blank")
	assert.Contains(t, textOf(res), "\nPage: about:blank", "the Page line is where the tab is")
	assert.Equal(t, "about:blank", res.Meta[MetaWhere].(map[string]any)["url"])
	_, text = c.ok("browser_snapshot", nil)
	assert.Contains(t, text, "Page: about:blank")
}

// newHTTPServer is an MCP server over a toolset on a local-only router,
// served over streamable HTTP on loopback.
func newHTTPServer(t *testing.T) (*mcpServer, *httptest.Server) {
	t.Helper()
	r := agenttest.NewRouter(t, nil)
	ts := agent.New(r)
	t.Cleanup(func() { require.NoError(t, ts.Close()) })
	srv := newMCPServer(ts)
	t.Cleanup(srv.close)
	return srv, serveMCPHTTP(t, srv)
}

// serveMCPHTTP serves srv over streamable HTTP on loopback as "hybroute mcp
// --http" does.
func serveMCPHTTP(t *testing.T, srv *mcpServer) *httptest.Server {
	t.Helper()
	hs := httptest.NewUnstartedServer(nil)
	bound := mustTCPAddr(t, hs.Listener.Addr().String())
	hs.Config.Handler = srv.httpHandler(bound.String(), bound, nil, 0)
	hs.Start()
	t.Cleanup(hs.Close)
	return hs
}

// connectHTTP connects the SDK's client over streamable HTTP.
func connectHTTP(t *testing.T, url string) *client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-client", Version: "v0"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return &client{t: t, cs: cs}
}

// TestMCPHangUpCancelsTheCall: an HTTP client that hangs up, with no word
// of cancellation, ends its call, and the calls it had queued in the same
// session are dropped without running: the session's next call runs while
// the abandoned script is still awaiting, and sees none of the queued
// calls' effects.
func TestMCPHangUpCancelsTheCall(t *testing.T) {
	site := agenttest.NewSite(t)
	r := agenttest.NewRouter(t, nil)
	ts := agent.New(r)
	t.Cleanup(func() { require.NoError(t, ts.Close()) })
	srv := newMCPServer(ts)
	t.Cleanup(srv.close)
	hs := serveMCPHTTP(t, srv)
	c := connectHTTP(t, hs.URL)
	c.ok("browser_navigate", map[string]any{"url": site.URL("127.0.0.1", "/")})

	// rawCall posts a tools/call in c's session and hangs up when ctx ends,
	// as a client process that dies does: no cancellation is sent.
	var wg sync.WaitGroup
	rawCall := func(ctx context.Context, id int, code string) {
		body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
			"params": map[string]any{"name": "browser_exec", "arguments": map[string]any{"code": code}}})
		require.NoError(t, err)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", c.cs.ID())
		req.Header.Set("Mcp-Protocol-Version", c.cs.InitializeResult().ProtocolVersion)
		wg.Go(func() {
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	hangUp, cancel := context.WithCancel(context.Background())
	defer cancel()
	rawCall(hangUp, 9001, `window.phase = "waiting"; await fetch("/page2?started"); await new Promise(r => setTimeout(r, 30000)); window.phase = "done"; return 1`)
	require.Eventually(t, func() bool {
		for _, h := range site.Hits() {
			if h.Query == "started" {
				return true
			}
		}
		return false
	}, 60*time.Second, 20*time.Millisecond, "the long script never started")
	const queued = 5
	for i := range queued {
		rawCall(hangUp, 9100+i, `window.ran = (window.ran || 0) + 1`)
	}
	require.Eventually(t, func() bool { return srv.running.Load() == 1+queued }, 60*time.Second, 10*time.Millisecond,
		"the calls queue behind the long one")

	cancel()
	wg.Wait()
	require.Eventually(t, func() bool { return srv.running.Load() == 0 }, 60*time.Second, 10*time.Millisecond,
		"the calls of the client that hung up end")
	_, text := c.ok("browser_exec", map[string]any{"code": `[window.phase, window.ran ?? 0]`})
	assert.Contains(t, text, `Result: ["waiting",0]`,
		"the session's next call runs while the abandoned script still awaits, and no queued call ran")
}

// TestMCPMaxResultBytesFlag: --max-result-bytes sets where browser_exec's
// result is cut.
func TestMCPMaxResultBytesFlag(t *testing.T) {
	site := agenttest.NewSite(t)
	c, _ := startBinary(t, nil, "--provider", "none", "--max-result-bytes", "64")
	c.ok("browser_navigate", map[string]any{"url": site.URL("127.0.0.1", "/page2")})
	_, text := c.ok("browser_exec", map[string]any{"code": `"x".repeat(1000)`})
	assert.Contains(t, text, `Result: "`+strings.Repeat("x", 63)+` [result cut at 64 of 1002 bytes;`)
}

// TestMCPUnusedHTTPSessionsEnd: HTTP client sessions that never make a
// tool call are ended after the unused timeout, well before the idle
// timeout; a session that made a call stays.
func TestMCPUnusedHTTPSessionsEnd(t *testing.T) {
	srv, hs := newHTTPServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go srv.sweepUnused(ctx, 300*time.Millisecond)

	used := connectHTTP(t, hs.URL)
	used.ok("browser_close", nil)
	for range 40 {
		connectHTTP(t, hs.URL) // initialize, then nothing
	}
	count := func() int {
		n := 0
		for range srv.server.Sessions() {
			n++
		}
		return n
	}
	require.GreaterOrEqual(t, count(), 2)
	require.Eventually(t, func() bool { return count() == 1 }, 30*time.Second, 50*time.Millisecond,
		"the unused sessions end; the one that made a call stays")
	used.ok("browser_close", nil)
}
