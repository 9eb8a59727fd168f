package agent_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hybroute/hybroute/hybroutetest"

	"github.com/hybroute/hybroute/agent"
	"github.com/hybroute/hybroute/internal/agenttest"
	"github.com/hybroute/hybroute/route"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// networkSite serves a page that fetches an API (with a token in its
// query), a missing image, and a URL the guard refuses (target, given
// per test), and a plain second page.
func networkSite(t *testing.T, refused string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"ok":true}`)
		case "/other":
			agenttest.ServePage(w, "other", nil)
		case "/":
			agenttest.ServePage(w, "network", strings.ReplaceAll(refused, "PORT", r.Host[strings.LastIndexByte(r.Host, ':')+1:]))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return port
}

// requestsUntil calls browser_network_requests until its text holds every
// want (the page's requests end in their own time).
func requestsUntil(t *testing.T, ts *agent.Toolset, s string, want ...string) agent.Result {
	t.Helper()
	var last agent.Result
	ok := assert.Eventually(t, func() bool {
		last = mustOK(t, callTool(t, ts, s, "browser_network_requests", nil))
		for _, w := range want {
			if !strings.Contains(last.Text, w) {
				return false
			}
		}
		return true
	}, 30*time.Second, 200*time.Millisecond, "never listed %q", want)
	require.True(t, ok, "the last list: %s", last.Text)
	return last
}

// TestNetworkRequestsOnTheLocalBrowser: the page's requests with their
// status, type and size, URLs redacted, a refusal of the guard with why,
// and a fresh list after a navigation.
func TestNetworkRequestsOnTheLocalBrowser(t *testing.T) {
	hybroutetest.Parallel(t)
	port := networkSite(t, "http://169.254.169.254/latest/meta-data/")
	r := agenttest.NewRouter(t, nil)
	ts := newToolset(t, r)
	const s = "net"
	base := "http://127.0.0.1:" + port
	mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": base + "/"}))
	res := requestsUntil(t, ts, s, "(fetch): 200, ", "(image): 404", "refused by the guard")
	t.Log(res.Text)
	assert.Regexp(t, `- GET `+base+`/ \(document\): 200, \d+ bytes`, res.Text)
	assert.Regexp(t, `- GET `+base+`/api\?x=1&token=REDACTED \(fetch\): 200, \d+ bytes`, res.Text)
	assert.NotContains(t, res.Text, "SECRET123", "the URL is redacted")
	assert.Contains(t, res.Text, "- GET "+base+"/missing.png (image): 404")
	assert.Contains(t, res.Text, "- GET http://169.254.169.254/latest/meta-data/ (fetch): refused by the guard (metadata): it targets a cloud metadata endpoint")

	only := mustOK(t, callTool(t, ts, s, "browser_network_requests", map[string]any{"filter": "/api"}))
	assert.Contains(t, only.Text, "Requests since the last navigation: 1 matching")
	assert.NotContains(t, only.Text, "missing.png")
	// The filter reads the redacted URLs: it cannot confirm a guess of
	// the token the list hides.
	for _, guess := range []string{"SECRET123", "token=S", "T123"} {
		none := mustOK(t, callTool(t, ts, s, "browser_network_requests", map[string]any{"filter": guess}))
		assert.Contains(t, none.Text, "Requests since the last navigation: 0 matching", guess)
	}
	shown := mustOK(t, callTool(t, ts, s, "browser_network_requests", map[string]any{"filter": "token=REDACTED"}))
	assert.Contains(t, shown.Text, "Requests since the last navigation: 1 matching")

	mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": base + "/other"}))
	after := mustOK(t, callTool(t, ts, s, "browser_network_requests", nil))
	assert.Contains(t, after.Text, "- GET "+base+"/other (document): 200")
	assert.NotContains(t, after.Text, "/api")
	assert.NotContains(t, after.Text, "169.254", "the old page's refusals are not the new page's")

	bad := callTool(t, ts, s, "browser_network_requests", map[string]any{"limit": 0.5})
	assert.True(t, bad.IsError)
}

// TestNetworkRequestsOnTheCloud: on a cloud browser the guard refuses the
// page's request to a private address, and the list says why.
func TestNetworkRequestsOnTheCloud(t *testing.T) {
	hybroutetest.Parallel(t)
	port := networkSite(t, "http://127.0.0.1:PORT/api")
	cloud := agenttest.NewCloud(t)
	r := agenttest.NewRouter(t, cloud.Provider)
	ts := newToolset(t, r)
	const s = "net-cloud"
	nav := mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": "http://" + agenttest.PublicHost + ":" + port + "/"}))
	require.Equal(t, route.Cloud, nav.Where.Route)
	res := requestsUntil(t, ts, s, "(fetch): 200", "refused by the guard")
	t.Log(res.Text)
	assert.Equal(t, route.Cloud, res.Where.Route)
	assert.Contains(t, res.Text, "- GET http://127.0.0.1:"+port+"/api (fetch): refused by the guard (private_on_remote): it targets a private or internal address")
}

// TestFailuresNameTheirCause: what the egress check refused of a page on
// the local browser (a fetch to a private host no call named) is listed
// with the reason's name, not as the browser's net::ERR_EMPTY_RESPONSE; a
// fetch of browser_exec's code that the egress check or the guard refused
// is named in that call's result; and a page that went to the browser's
// error page between calls is explained at the next call.
func TestFailuresNameTheirCause(t *testing.T) {
	port := networkSite(t, "http://127.0.0.2:PORT/api")
	r := agenttest.NewRouter(t, nil)
	ts := newToolset(t, r)
	const s = "causes"
	base := "http://127.0.0.1:" + port
	egress := "refused by the egress check, which decides every connection of the local browser (private_not_named)"
	// A name with no address: the proxy's failure is not what the model
	// reads, the cause is.
	nx := callTool(t, ts, s, "browser_navigate", map[string]string{"url": "https://dashboard.example.com/"})
	assert.True(t, nx.IsError)
	assert.True(t, strings.HasPrefix(nx.Text, "the page did not load: dashboard.example.com does not resolve: the name has no address."), nx.Text)
	assert.NotContains(t, nx.Text, "ERR_TUNNEL_CONNECTION_FAILED")

	mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": base + "/"}))
	res := requestsUntil(t, ts, s, "(private_not_named)")
	assert.Contains(t, res.Text, "- GET http://127.0.0.2:"+port+"/api (fetch): failed: "+egress)
	assert.NotContains(t, res.Text, "ERR_EMPTY_RESPONSE")
	assert.NotContains(t, res.Text, "a connection to", "the refusal that explains a request is not listed again")

	// No URL literal in the code: the plan sees nothing, the page's fetch
	// is refused as it connects.
	ex := callTool(t, ts, s, "browser_exec", map[string]string{
		"code": `await fetch(location.protocol + "//" + ["127", "0", "0", "2"].join(".") + ":" + location.port + "/x")`})
	assert.True(t, ex.IsError)
	assert.Contains(t, ex.Text, "TypeError: Failed to fetch")
	assert.Contains(t, ex.Text, "- a connection to 127.0.0.2:"+port+": "+egress)
	md := mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{
		"code": `await fetch("http://" + ["169", "254", "169", "254"].join(".") + "/latest/meta-data/").then(() => "read", e => String(e))`}))
	assert.Contains(t, md.Text, `Result: "TypeError: Failed to fetch"`)
	assert.Regexp(t, `- http://169\.254\.169\.254/latest/meta-data/ \((fetch|xhr), in a tab\): refused by the guard \(metadata\): it targets a cloud metadata endpoint`, md.Text)

	// The page leaves for a host no call named after the call returned:
	// the egress check refuses it, the tab shows the error page.
	later := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		to := "http://127.0.0.2:" + port + "/gone"
		if r.URL.Path == "/metadata" {
			to = "http://169.254.169.254/latest/"
		}
		fmt.Fprintf(w, `<title>Soon</title><script>setTimeout(() => { location.href = %q }, 300)</script>`, to)
	}))
	t.Cleanup(later.Close)
	mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": later.URL + "/"}))
	var snap agent.Result
	require.Eventually(t, func() bool {
		snap = callTool(t, ts, s, "browser_snapshot", nil)
		return strings.HasPrefix(snap.Where.URL, "chrome-error:")
	}, 30*time.Second, 100*time.Millisecond, "the page never failed: %s", snap.Text)
	assert.Contains(t, snap.Text, "Note: the page is the browser's error page: its last load failed: "+egress+
		": the request for http://127.0.0.2:"+port+"/gone targets a private or internal address")

	// The guard refuses a document the page loads on its own: a call
	// running then fails with the refusal, one after it is told why the
	// page is the error page.
	mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": later.URL + "/metadata"}))
	require.Eventually(t, func() bool {
		snap = callTool(t, ts, s, "browser_snapshot", nil)
		return !strings.HasPrefix(snap.Where.Title, "Soon")
	}, 30*time.Second, 100*time.Millisecond, "the page never left: %s", snap.Text)
	assert.Regexp(t, `(?m)^(Note: the page is the browser's error page: its last load failed: refused by the security guard \(metadata\): `+
		`the request for http://169\.254\.169\.254/latest/ targets a cloud metadata endpoint\.|`+
		`blocked: the page tried to load http://169\.254\.169\.254/latest/, which targets a cloud metadata endpoint; the request was refused)`,
		snap.Text)
}

// TestARefusedFrameIsExplainedWithTheNavigation: a page whose frame is on
// a private host no call of the session named shows only the browser's
// error in the frame; the navigation's result says what was refused, why,
// and how the model can open it.
func TestARefusedFrameIsExplainedWithTheNavigation(t *testing.T) {
	hybroutetest.Parallel(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/to-metadata" {
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
			return
		}
		_, port, _ := net.SplitHostPort(r.Host)
		fmt.Fprintf(w, `<title>Framed</title><p>outer</p><iframe src="http://127.0.0.2:%s/inner"></iframe>`, port)
	}))
	t.Cleanup(srv.Close)
	ts := newToolset(t, agenttest.NewRouter(t, nil))
	res := mustOK(t, callTool(t, ts, "frame-refused", "browser_navigate", map[string]string{"url": srv.URL + "/"}))
	assert.Contains(t, res.Text, "Refused during this call (the page saw only a network error for each):")
	assert.Regexp(t, `- a connection to 127\.0\.0\.2:\d+: refused by the egress check.*\(private_not_named\)`, res.Text)
	assert.Contains(t, res.Text, "navigate to it", "the model is told how to open the frame's host")
	assert.NotContains(t, res.Text, "Failed to fetch", "a navigation ran no script of the model's")

	// A refused load of the tab's own page is the call's error, said once.
	red := callTool(t, ts, "frame-refused", "browser_navigate", map[string]string{"url": srv.URL + "/to-metadata"})
	require.True(t, red.IsError, red.Text)
	assert.Contains(t, red.Text, "169.254.169.254")
	assert.NotContains(t, red.Text, "Refused during this call", "the page's own refused load is not listed again")
}

// TestAFreshContextForAGrantIsExplained: a page whose frame started to
// load a private host no call named leaves its browser context unclean for
// the next call's grant, which then runs in a fresh context; the result
// says so, not that the browser was started afresh.
func TestAFreshContextForAGrantIsExplained(t *testing.T) {
	hybroutetest.Parallel(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, port, _ := net.SplitHostPort(r.Host)
		if r.URL.Path == "/framed" {
			fmt.Fprintf(w, `<title>Framed</title><iframe src="http://127.0.0.2:%s/inner"></iframe>`, port)
			return
		}
		fmt.Fprint(w, `<title>Intranet</title><p>hello</p>`)
	}))
	t.Cleanup(srv.Close)
	ts := newToolset(t, agenttest.NewRouter(t, nil))
	const s = "fresh-context"
	mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": srv.URL + "/framed"}))
	res := mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": srv.URL + "/"}))
	assert.Contains(t, res.Text, "Note: this call ran in a fresh browser context of the local browser")
	assert.NotContains(t, res.Text, "started afresh")
	assert.True(t, res.Where.BrowserChanged)
	again := mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": srv.URL + "/?again"}))
	assert.NotContains(t, again.Text, "fresh browser context", "a context clean for the grant is kept")
}
