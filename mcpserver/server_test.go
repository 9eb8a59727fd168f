package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hybroute/hybroute/hybroutetest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent"
	"github.com/hybroute/hybroute/internal/agenttest"
	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/mcpserver"
	"github.com/hybroute/hybroute/mcpserver/mcptest"
)

func TestMCPInProcess(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewSite(t)
	r := agenttest.NewRouter(t, nil)
	ts := agent.New(r)
	t.Cleanup(func() { require.NoError(t, ts.Close()) })
	srv := mcpserver.New(ts, mcpserver.Options{})

	c := mcptest.ConnectInMemory(t, srv)
	mcptest.Exercise(t, c, site.Port)

	// Two client sessions are two browser sessions.
	c2 := mcptest.ConnectInMemory(t, srv)
	_, text := c2.OK("browser_snapshot", nil)
	assert.Contains(t, text, "Page: about:blank", "a second client session starts on a page of its own")

	// The end of a client session releases its browser session.
	require.NoError(t, c.CS.Close())
	require.Eventually(t, func() bool {
		return srv.KeyedSessions() == 1
	}, 20*time.Second, 50*time.Millisecond)
	require.NoError(t, srv.Close())
}

// TestMCPReportsTheFallback: a provider answering 429 gives the session a
// local browser, and the tool result says it is a fallback from the cloud.
func TestMCPReportsTheFallback(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewSite(t)
	cloud := agenttest.NewCloud(t)
	cloud.API.OnCreate(cloudtest.RateLimited("17"))
	r := agenttest.NewRouter(t, cloud.Provider)
	ts := agent.New(r)
	t.Cleanup(func() { require.NoError(t, ts.Close()) })
	srv := mcpserver.New(ts, mcpserver.Options{})
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	c := mcptest.ConnectInMemory(t, srv)

	res, text := c.OK("browser_navigate", map[string]any{"url": site.URL(agenttest.PublicHost, "/")})
	assert.Contains(t, text, "fallback from cloud")
	assert.Contains(t, text, `Page: "Corner Shop"`)
	where := res.Meta[mcpserver.MetaWhere].(map[string]any)
	assert.Equal(t, true, where["fallback_from_cloud"])
	assert.Contains(t, where["fallback_reason"], "429", "the model is told why")
	assert.Equal(t, "local", where["route"])
	assert.Equal(t, true, where["navigated"], "a navigation is reported as one")
	assert.Equal(t, false, where["browser_changed"], "the session's first page")
	assert.NotContains(t, where, "page_changed")
	assert.EqualValues(t, 1, cloud.API.Creates())
}

func TestHostGuard(t *testing.T) {
	hybroutetest.Parallel(t)
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	bound, err := net.ResolveTCPAddr("tcp", "127.0.0.1:8931")
	require.NoError(t, err)
	h := mcpserver.HostGuard([]string{"mcp.internal.example"}, next)
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
		req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, net.Addr(bound)))
		req.Host = tc.host
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		assert.Equal(t, tc.want, w.Code, "Host %s Origin %q", tc.host, tc.origin)
	}
}

// TestHostGuardOffLoopback: on an address that is not loopback, the
// loopback names are not the server's; with no local address in the
// request (a handler called outside an http.Server), only the allowed
// hosts that carry a port are.
func TestHostGuardOffLoopback(t *testing.T) {
	hybroutetest.Parallel(t)
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	h := mcpserver.HostGuard([]string{"mcp.internal.example", "named.example:9000"}, next)
	lan, err := net.ResolveTCPAddr("tcp", "192.0.2.7:8931")
	require.NoError(t, err)
	for _, tc := range []struct {
		local net.Addr
		host  string
		want  int
	}{
		{lan, "192.0.2.7:8931", http.StatusTeapot},
		{lan, "mcp.internal.example:8931", http.StatusTeapot},
		{lan, "localhost:8931", http.StatusForbidden},
		{lan, "127.0.0.1:8931", http.StatusForbidden},
		{nil, "named.example:9000", http.StatusTeapot},
		{nil, "mcp.internal.example:8931", http.StatusForbidden},
		{nil, "127.0.0.1:8931", http.StatusForbidden},
	} {
		req := httptest.NewRequest(http.MethodPost, "http://"+tc.host+"/", nil)
		if tc.local != nil {
			req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, tc.local))
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		assert.Equal(t, tc.want, w.Code, "local %v Host %s", tc.local, tc.host)
	}
}

// TestMCPOverHTTP: the SDK's client over streamable HTTP, through the
// host guard, each client session with a browser session of its own.
func TestMCPOverHTTP(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewSite(t)
	_, hs := newHTTPServer(t, mcpserver.Options{})
	a, b := mcptest.ConnectHTTP(t, hs.URL), mcptest.ConnectHTTP(t, hs.URL)
	_, text := a.OK("browser_navigate", map[string]any{"url": site.URL("127.0.0.1", "/page2")})
	assert.Contains(t, text, `Page: "Page two"`)
	_, text = b.OK("browser_snapshot", nil)
	assert.Contains(t, text, "Page: about:blank", "the second client has a browser session of its own")
	_, text = a.OK("browser_snapshot", nil)
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
	hybroutetest.Parallel(t)
	site := agenttest.NewSite(t)
	r := agenttest.NewRouter(t, nil)
	ts := agent.New(r)
	t.Cleanup(func() { require.NoError(t, ts.Close()) })
	srv := mcpserver.New(ts, mcpserver.Options{})
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	c := mcptest.ConnectInMemory(t, srv)

	secrets := []string{"qTokenSecret1234", "apiKeySecret5678", "fragTokenSecret90"}
	page := site.URL("127.0.0.1", "/?token="+secrets[0]+"&api_key="+secrets[1]+"&view=full#access_token="+secrets[2]+"&state=x")
	noSecret := func(what string, res *mcp.CallToolResult) {
		t.Helper()
		meta, err := json.Marshal(res.Meta)
		require.NoError(t, err)
		for _, s := range secrets {
			assert.NotContains(t, mcptest.TextOf(res), s, "%s: the text shows a credential", what)
			assert.NotContains(t, string(meta), s, "%s: _meta shows a credential", what)
		}
	}
	res, text := c.OK("browser_navigate", map[string]any{"url": page})
	noSecret("navigate", res)
	assert.Contains(t, text, "/?token=REDACTED&api_key=REDACTED&view=full#access_token=REDACTED&state=x", "the rest of the URL is shown")
	assert.Equal(t, site.URL("127.0.0.1", "/?token=REDACTED&api_key=REDACTED&view=full#access_token=REDACTED&state=x"),
		res.Meta[mcpserver.MetaWhere].(map[string]any)["url"])
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
		res, text := c.OK(call.name, call.args)
		noSecret(call.name, res)
		assert.Contains(t, text, "token=REDACTED", call.name)
		if call.name == "browser_console" {
			assert.Contains(t, text, "[log] shop ready (http://127.0.0.1:"+site.Port+"/?token=REDACTED", "a console line's URL is redacted too")
		}
	}

	// The page sends itself to a metadata address: the guard refuses it and
	// the tab goes to about:blank, which is where the result says it is.
	res = c.Call("browser_exec", map[string]any{"code": `location.href = "http://" + ["169", "254", "169", "254"].join(".") + "/latest/?token=` + secrets[0] + `"`})
	require.True(t, res.IsError, mcptest.TextOf(res))
	noSecret("refused exec", res)
	assert.Contains(t, mcptest.TextOf(res), "sent to about:blank")
	assert.Contains(t, mcptest.TextOf(res), "\nPage: about:blank", "the Page line is where the tab is")
	assert.Equal(t, "about:blank", res.Meta[mcpserver.MetaWhere].(map[string]any)["url"])
	_, text = c.OK("browser_snapshot", nil)
	assert.Contains(t, text, "Page: about:blank")
}

// newHTTPServer is an MCP server over a toolset on a local-only router,
// served over streamable HTTP on loopback.
func newHTTPServer(t *testing.T, opts mcpserver.Options) (*mcpserver.Server, *httptest.Server) {
	t.Helper()
	r := agenttest.NewRouter(t, nil)
	ts := agent.New(r)
	t.Cleanup(func() { require.NoError(t, ts.Close()) })
	srv := mcpserver.New(ts, opts)
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	return srv, serveMCPHTTP(t, srv)
}

// serveMCPHTTP serves srv over streamable HTTP on loopback as "hybroute mcp
// --http" does.
func serveMCPHTTP(t *testing.T, srv *mcpserver.Server) *httptest.Server {
	t.Helper()
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return hs
}

// TestMCPHangUpCancelsTheCall: an HTTP client that hangs up, with no word
// of cancellation, ends its call, and the calls it had queued in the same
// session are dropped without running: the session's next call runs while
// the abandoned script is still awaiting, and sees none of the queued
// calls' effects.
func TestMCPHangUpCancelsTheCall(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewSite(t)
	r := agenttest.NewRouter(t, nil)
	ts := agent.New(r)
	t.Cleanup(func() { require.NoError(t, ts.Close()) })
	srv := mcpserver.New(ts, mcpserver.Options{})
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	hs := serveMCPHTTP(t, srv)
	c := mcptest.ConnectHTTP(t, hs.URL)
	c.OK("browser_navigate", map[string]any{"url": site.URL("127.0.0.1", "/")})

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
		req.Header.Set("Mcp-Session-Id", c.CS.ID())
		req.Header.Set("Mcp-Protocol-Version", c.CS.InitializeResult().ProtocolVersion)
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
	require.Eventually(t, func() bool { return srv.Running() == 1+queued }, 60*time.Second, 10*time.Millisecond,
		"the calls queue behind the long one")

	cancel()
	wg.Wait()
	require.Eventually(t, func() bool { return srv.Running() == 0 }, 60*time.Second, 10*time.Millisecond,
		"the calls of the client that hung up end")
	_, text := c.OK("browser_exec", map[string]any{"code": `[window.phase, window.ran ?? 0]`})
	assert.Contains(t, text, `Result: ["waiting",0]`,
		"the session's next call runs while the abandoned script still awaits, and no queued call ran")
}

// TestMCPUnusedHTTPSessionsEnd: HTTP client sessions that never make a
// tool call are ended after the unused timeout, well before the idle
// timeout; a session that made a call stays.
//
// It runs before the package's parallel tests, and its timeout is long
// enough for forty handshakes on a loaded machine: a session the sweep
// ends during its own handshake fails the connect.
func TestMCPUnusedHTTPSessionsEnd(t *testing.T) {
	srv, hs := newHTTPServer(t, mcpserver.Options{UnusedTimeout: 3 * time.Second})

	used := mcptest.ConnectHTTP(t, hs.URL)
	used.OK("browser_close", nil)
	for range 40 {
		mcptest.ConnectHTTP(t, hs.URL) // initialize, then nothing
	}
	count := srv.Sessions
	require.GreaterOrEqual(t, count(), 2)
	require.Eventually(t, func() bool { return count() == 1 }, 30*time.Second, 50*time.Millisecond,
		"the unused sessions end; the one that made a call stays")
	used.OK("browser_close", nil)
}

// TestMCPUnusedSweepSparesInProcessSessions: the sweep ends HTTP sessions
// that made no tool call, never an in-memory (or stdio) one, whose
// client alone ends it.
func TestMCPUnusedSweepSparesInProcessSessions(t *testing.T) {
	hybroutetest.Parallel(t)
	srv, hs := newHTTPServer(t, mcpserver.Options{})
	mcptest.ConnectHTTP(t, hs.URL)
	inMemory := mcptest.ConnectInMemory(t, srv)
	require.Equal(t, 2, srv.Sessions())
	srv.SweepTwice()
	require.Eventually(t, func() bool { return srv.Sessions() == 1 }, 30*time.Second, 50*time.Millisecond,
		"the unused HTTP session ends")
	_, text := inMemory.OK("browser_close", nil)
	assert.Contains(t, text, "Closed", "the in-memory session that made no call is still served")
}

func TestMCPInputToolsOverHTTP(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewInputSite(t)
	r := agenttest.NewRouter(t, nil, hybroute.WithDialogPolicy(hybroute.DialogPolicy{Hold: true}))
	ts := agent.New(r, agent.WithUploadDir(mcptest.FilesToUpload(t)))
	t.Cleanup(func() { require.NoError(t, ts.Close()) })
	srv := mcpserver.New(ts, mcpserver.Options{})
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	mcptest.ExerciseInput(t, mcptest.ConnectHTTP(t, serveMCPHTTP(t, srv).URL), site.URL)
}

// TestMCPInputToolsOnCloud: the tools run in the cloud browser where the
// page is; an upload is refused there; a tab at a local address opens in
// the local browser and says so; a popup to a private address is refused.
func TestMCPInputToolsOnCloud(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewInputSite(t)
	public := regexp.MustCompile(`127\.0\.0\.1`).ReplaceAllString(site.URL, agenttest.PublicHost)
	cloud := agenttest.NewCloud(t)
	r := agenttest.NewRouter(t, cloud.Provider)
	ts := agent.New(r, agent.WithUploadDir(mcptest.FilesToUpload(t)))
	t.Cleanup(func() { require.NoError(t, ts.Close()) })
	srv := mcpserver.New(ts, mcpserver.Options{})
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	c := mcptest.ConnectInMemory(t, srv)

	_, text := c.OK("browser_navigate", map[string]any{"url": public + "/"})
	assert.Contains(t, text, "Browser: the cloud browser")
	_, snap := c.OK("browser_snapshot", nil)
	c.OK("browser_fill_form", map[string]any{"fields": []map[string]any{
		{"ref": mcptest.RefIn(t, snap, `textbox "Name"`), "type": "textbox", "value": "Cloud"},
		{"ref": mcptest.RefIn(t, snap, `combobox "Size"`), "type": "combobox", "value": "Medium"},
	}})
	c.OK("browser_select_option", map[string]any{"ref": mcptest.RefIn(t, snap, `listbox "Toppings"`), "values": []string{"Olives"}})
	c.OK("browser_drag", map[string]any{"start_ref": mcptest.RefIn(t, snap, `button "Card"`), "end_ref": mcptest.RefIn(t, snap, `button "Done column"`)})
	out := mcptest.PageOut(c)
	assert.Contains(t, out, `"out":"dropped Card","name":"Cloud","sub":false,"plan":"basic","size":"m","tops":["Olives"]`)
	assert.Contains(t, out, "Browser: the cloud browser")
	c.OK("browser_hover", map[string]any{"ref": mcptest.RefIn(t, snap, `button "Account"`)})
	_, text = c.OK("browser_resize", map[string]any{"width": 700, "height": 500})
	assert.Contains(t, text, "Browser: the cloud browser")
	_, text = c.OK("browser_exec", map[string]any{"code": "[innerWidth, innerHeight]"})
	assert.Contains(t, text, "Result: [700,500]")
	_, text = c.OK("browser_reload", nil)
	assert.Contains(t, text, "Browser: the cloud browser")

	res := c.Call("browser_file_upload", map[string]any{"ref": mcptest.RefIn(t, snap, `button "Attachment"`), "paths": []string{"a.txt"}})
	assert.True(t, res.IsError)
	assert.Contains(t, mcptest.TextOf(res), "the cloud browser, which cannot read this machine's files")

	_, snap = c.OK("browser_snapshot", nil)
	c.OK("browser_click", map[string]any{"ref": mcptest.RefIn(t, snap, `link "Open popup"`)})
	popup := mcptest.TabID(t, c, `"Popup page" .*\(cloud browser\)`)
	_, text = c.OK("browser_tabs", map[string]any{"action": "new", "url": site.URL + "/popup?who=local"})
	assert.Contains(t, text, "It opened in the local browser")
	assert.Contains(t, text, "Browser: the local browser")
	_, text = c.OK("browser_tabs", map[string]any{"action": "select", "id": popup})
	assert.Contains(t, text, "Browser: the cloud browser")
	_, text = c.OK("browser_exec", map[string]any{"code": "document.getElementById('who').textContent"})
	assert.Contains(t, text, `Result: "one"`)

	// No literal names the private address, so the call stays in the cloud
	// browser, whose guard refuses the popup.
	res = c.Call("browser_exec", map[string]any{"code": "window.open(location.origin.replace('" + agenttest.PublicHost + "', '127.0.0.1') + '/popup'); return 1"})
	assert.True(t, res.IsError)
	assert.Contains(t, mcptest.TextOf(res), "targets a private or internal address")
	assert.Contains(t, mcptest.TextOf(res), "Browser: the cloud browser")
}
