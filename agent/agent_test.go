package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent"
	"github.com/hybroute/hybroute/hybroutetest"
	"github.com/hybroute/hybroute/internal/agenttest"
	"github.com/hybroute/hybroute/route"
)

// callTool runs one tool call with a deadline and fails the test on a Go
// error (tool errors are results).
func callTool(t *testing.T, ts *agent.Toolset, session, name string, args any) agent.Result {
	t.Helper()
	return callToolWithin(t, 90*time.Second, ts, session, name, args)
}

// callToolWithin is callTool with a deadline of d.
func callToolWithin(t *testing.T, d time.Duration, ts *agent.Toolset, session, name string, args any) agent.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	require.NoError(t, err)
	if args == nil {
		raw = nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	res, err := ts.Call(ctx, session, name, raw)
	require.NoError(t, err, "%s(%s)", name, raw)
	t.Logf("%s(%s): %v", name, raw, time.Since(start).Round(time.Millisecond))
	return res
}

func mustOK(t *testing.T, r agent.Result) agent.Result {
	t.Helper()
	require.False(t, r.IsError, "tool error: %s", r.Text)
	return r
}

func newToolset(t *testing.T, r agent.Router, opts ...agent.Option) *agent.Toolset {
	ts := agent.New(r, opts...)
	t.Cleanup(func() { require.NoError(t, ts.Close()) })
	return ts
}

var refOf = func(line string, snapshot string) string {
	re := regexp.MustCompile(`(?m)^\s*- ` + regexp.QuoteMeta(line) + `.*\[ref=(e\d+)\]`)
	m := re.FindStringSubmatch(snapshot)
	if m == nil {
		return ""
	}
	return m[1]
}

func TestToolsHaveSchemas(t *testing.T) {
	hybroutetest.Parallel(t)
	var names []string
	for _, tool := range agent.Catalog() {
		names = append(names, tool.Name)
		assert.NotEmpty(t, tool.Description, tool.Name)
		var schema map[string]any
		require.NoError(t, json.Unmarshal(tool.InputSchema, &schema), tool.Name)
		assert.Equal(t, "object", schema["type"], tool.Name)
		props, ok := schema["properties"].(map[string]any)
		require.True(t, ok, tool.Name)
		if req, ok := schema["required"].([]any); ok {
			for _, r := range req {
				assert.Contains(t, props, r, "%s requires %v, which it does not define", tool.Name, r)
			}
		}
	}
	assert.Equal(t, []string{"browser_navigate", "browser_snapshot", "browser_click", "browser_type", "browser_press",
		"browser_scroll", "browser_back", "browser_screenshot", "browser_console", "browser_exec", "browser_network_requests", "browser_downloads", "browser_pdf_save", "browser_close", "browser_status",
		"browser_state_save", "browser_state_load", "browser_tabs",
		"browser_forward", "browser_reload", "browser_resize",
		"browser_select_option", "browser_fill_form", "browser_hover", "browser_drag", "browser_file_upload", "browser_wait_for", "browser_handle_dialog",
		"browser_type_secret", "browser_handoff"}, names)
}

// TestToolsFitTheConfiguration: a tool that cannot work in the toolset's
// configuration is not offered, and a call of it says which setting is
// missing; with every setting, every tool of the catalog is offered.
func TestToolsFitTheConfiguration(t *testing.T) {
	names := func(ts *agent.Toolset) []string {
		var out []string
		for _, tool := range ts.Tools() {
			out = append(out, tool.Name)
		}
		return out
	}
	bare := agent.New(nil)
	got := names(bare)
	for _, off := range []string{"browser_state_save", "browser_state_load", "browser_file_upload", "browser_downloads", "browser_pdf_save", "browser_handle_dialog", "browser_type_secret", "browser_handoff"} {
		assert.NotContains(t, got, off)
	}
	assert.Len(t, got, len(agent.Catalog())-8)
	res, err := bare.Call(t.Context(), "s", "browser_state_save", json.RawMessage(`{"name":"x"}`))
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text, "browser_state_save is off on this server: the operator set no state directory (hybroute mcp --state-dir)")
	assert.NotContains(t, res.Text, "browser_state_load,", "the tools it lists are the offered ones")
	res, err = bare.Call(t.Context(), "s", "browser_handle_dialog", json.RawMessage(`{"accept":true}`))
	require.NoError(t, err)
	assert.Contains(t, res.Text, "--dialogs model")

	dir := t.TempDir()
	r := agenttest.NewRouter(t, nil, hybroute.WithDialogPolicy(hybroute.DialogPolicy{Hold: true}))
	views := r.LiveViews(hybroute.LiveViewOptions{})
	t.Cleanup(views.Close)
	secrets, err := agent.NewSecrets(agent.Secret{Name: "pw", Value: "pass-word", Origins: []string{"https://example.com"}})
	require.NoError(t, err)
	full := agent.New(r, agent.WithStateDir(dir), agent.WithUploadDir(dir), agent.WithDownloadDir(dir), agent.WithSecrets(secrets), agent.WithHandoff(views))
	var all []string
	for _, c := range agent.Catalog() {
		all = append(all, c.Name)
	}
	assert.Equal(t, all, names(full))

	// Each need takes away exactly the tools that need it.
	for need, opt := range map[agent.Need]agent.Option{
		agent.NeedsStateDir: agent.WithStateDir(dir), agent.NeedsUploadDir: agent.WithUploadDir(dir),
		agent.NeedsDownloadDir: agent.WithDownloadDir(dir),
	} {
		var want []string
		for _, c := range agent.Catalog() {
			if c.Needs == agent.NeedsNothing || c.Needs == need {
				want = append(want, c.Name)
			}
		}
		assert.Equal(t, want, names(agent.New(nil, opt)), need)
	}
}

func TestCallRejectsBadArgumentsAsToolErrors(t *testing.T) {
	hybroutetest.Parallel(t)
	ts := agent.New(nil)
	ctx := context.Background()
	r, err := ts.Call(ctx, "s", "browser_fly", nil)
	require.NoError(t, err)
	assert.True(t, r.IsError)
	assert.Contains(t, r.Text, `unknown tool "browser_fly"`)

	r, err = ts.Call(ctx, "s", "browser_navigate", json.RawMessage(`{"link":"x"}`))
	require.NoError(t, err)
	assert.True(t, r.IsError)
	assert.Contains(t, r.Text, `unknown field "link"`)

	r, err = ts.Call(ctx, "s", "browser_scroll", json.RawMessage(`{"direction":"sideways"}`))
	require.NoError(t, err)
	assert.True(t, r.IsError)
	assert.Contains(t, r.Text, "up, down, left or right")
	assert.False(t, r.Where.Ran)
	assert.Equal(t, route.None, r.Where.Route, "no browser ran it: it claims none")

	require.NoError(t, ts.Close())
	_, err = ts.Call(ctx, "s", "browser_snapshot", nil)
	assert.ErrorIs(t, err, agent.ErrClosed)
}

func TestCompleteURL(t *testing.T) {
	hybroutetest.Parallel(t)
	for in, want := range map[string]string{
		"localhost:3000":           "http://localhost:3000/",
		"localhost":                "http://localhost/",
		"app.localhost:8080/x":     "http://app.localhost:8080/x",
		"127.0.0.1:8080/app?x=1":   "http://127.0.0.1:8080/app?x=1",
		"192.168.1.9":              "http://192.168.1.9/",
		"[::1]:9000":               "http://[::1]:9000/",
		"0x7f.1":                   "http://0x7f.1/",
		"2130706433":               "http://2130706433/",
		"devbox:8080":              "http://devbox:8080/",
		"example.com":              "https://example.com/",
		"example.com/docs#top":     "https://example.com/docs#top",
		"docs.example.com:8443":    "https://docs.example.com:8443/",
		"  example.com  ":          "https://example.com/",
		"https://example.com":      "https://example.com",
		"http://localhost:3000/":   "http://localhost:3000/",
		"about:blank":              "about:blank",
		"data:text/html,hi":        "data:text/html,hi",
		"169.254.169.254/latest":   "http://169.254.169.254/latest",
		"metadata.google.internal": "https://metadata.google.internal/",
		"user@example.com":         "https://user@example.com/",
		"//example.com/x":          "https://example.com/x",
	} {
		assert.Equal(t, want, agent.CompleteURL(in), in)
	}
}

// TestToolsetOnLocalChromium walks the toolset the way a model does, on a
// router without a provider (everything local).
func TestToolsetOnLocalChromium(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewSite(t)
	r := agenttest.NewRouter(t, nil)
	ts := newToolset(t, r)
	const s = "walk"

	// localhost:PORT as a model writes it: completed to http://.
	nav := mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": "localhost:" + site.Port}))
	assert.Equal(t, "http://localhost:"+site.Port+"/", nav.Where.URL)
	assert.Equal(t, "Corner Shop", nav.Where.Title)
	assert.Equal(t, route.Local, nav.Where.Route)
	assert.Contains(t, nav.Text, "completed from")
	assert.Contains(t, nav.Text, "Browser: the local browser")

	snap := mustOK(t, callTool(t, ts, s, "browser_snapshot", nil))
	assert.Contains(t, snap.Text, `- heading "Corner Shop" [level=1]`)
	assert.Contains(t, snap.Text, "- paragraph: Cart: 0 items")
	add := refOf(`button "Add to cart"`, snap.Text)
	search := refOf(`searchbox "Search products"`, snap.Text)
	gift := refOf(`checkbox "Gift wrap"`, snap.Text)
	require.NotEmpty(t, add, snap.Text)
	require.NotEmpty(t, search, snap.Text)
	require.NotEmpty(t, gift, snap.Text)
	assert.Contains(t, snap.Text, "- /url: /page2")

	// A click has its effect on the page, and refs are stable across
	// snapshots of the same page.
	click := mustOK(t, callTool(t, ts, s, "browser_click", map[string]string{"ref": add}))
	assert.Contains(t, click.Text, `Clicked `+add+` (button "Add to cart")`)
	mustOK(t, callTool(t, ts, s, "browser_click", map[string]string{"ref": gift}))
	snap2 := mustOK(t, callTool(t, ts, s, "browser_snapshot", nil))
	assert.Contains(t, snap2.Text, "- paragraph: Cart: 1 item\n")
	assert.Regexp(t, `checkbox "Gift wrap" (\[focused\] )?\[checked\] \[ref=`+gift+`\]`, snap2.Text)
	assert.Equal(t, add, refOf(`button "Add to cart"`, snap2.Text))

	exec := mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": "document.getElementById('status').textContent"}))
	assert.Contains(t, exec.Text, `Result: "Cart: 1 item"`)
	exec = mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{
		"code": "const r = await fetch('/api/stock'); const j = await r.json(); return j.items.filter(i => i.left > 0).map(i => i.sku)"}))
	assert.Contains(t, exec.Text, `Result: ["A1"]`)
	exec = callTool(t, ts, s, "browser_exec", map[string]string{"code": "null.x"})
	assert.True(t, exec.IsError)
	assert.Contains(t, exec.Text, "the code threw: TypeError")
	assert.Contains(t, exec.Text, "Browser: the local browser", "a failed call still says where it ran")

	con := mustOK(t, callTool(t, ts, s, "browser_console", nil))
	assert.Contains(t, con.Text, "[log] shop ready")
	assert.Contains(t, con.Text, "[log] added to cart 1")
	assert.Contains(t, con.Text, "[uncaught exception] Uncaught Error: late widget failed")
	con = mustOK(t, callTool(t, ts, s, "browser_console", nil))
	assert.Contains(t, con.Text, "No console messages since the last read.")

	shot := mustOK(t, callTool(t, ts, s, "browser_screenshot", nil))
	require.Len(t, shot.Images, 1)
	img, err := png.Decode(bytes.NewReader(shot.Images[0].Data))
	require.NoError(t, err)
	assert.Equal(t, 1280, img.Bounds().Dx())
	assert.Equal(t, 720, img.Bounds().Dy())
	full := mustOK(t, callTool(t, ts, s, "browser_screenshot", map[string]bool{"full_page": true}))
	require.Len(t, full.Images, 1)
	fimg, err := png.Decode(bytes.NewReader(full.Images[0].Data))
	require.NoError(t, err)
	assert.Equal(t, 1280, fimg.Bounds().Dx())
	assert.Greater(t, fimg.Bounds().Dy(), 2400, "the whole page is taller than its 2400px spacer")

	sc := mustOK(t, callTool(t, ts, s, "browser_scroll", map[string]string{"direction": "down"}))
	assert.Contains(t, sc.Text, "y 576–1296")
	assert.False(t, sc.Where.Navigated, "a scroll stays on the document")

	// Type replaces the field's content; submit presses Enter, which
	// submits the form and navigates.
	mustOK(t, callTool(t, ts, s, "browser_type", map[string]any{"ref": search, "text": "old"}))
	typed := mustOK(t, callTool(t, ts, s, "browser_type", map[string]any{"ref": search, "text": "red shoes", "submit": true}))
	assert.Contains(t, typed.Text, "The page navigated")
	assert.True(t, typed.Where.Navigated, "a form submitted by Enter is a navigation")
	assert.Equal(t, "Results for red shoes", typed.Where.Title)
	assert.Contains(t, typed.Where.URL, "/search?q=red+shoes")

	// The old page's refs do not resolve on the new page.
	stale := callTool(t, ts, s, "browser_click", map[string]string{"ref": add})
	assert.True(t, stale.IsError)
	assert.Contains(t, stale.Text, "call browser_snapshot again")

	back := mustOK(t, callTool(t, ts, s, "browser_back", nil))
	assert.Equal(t, "Corner Shop", back.Where.Title)

	snap3 := mustOK(t, callTool(t, ts, s, "browser_snapshot", nil))
	more := refOf(`link "More offers"`, snap3.Text)
	require.NotEmpty(t, more, snap3.Text)
	clicked := mustOK(t, callTool(t, ts, s, "browser_click", map[string]string{"ref": more}))
	assert.Equal(t, "Page two", clicked.Where.Title)
	assert.Contains(t, clicked.Text, "The page navigated")
	assert.True(t, clicked.Where.Navigated, "a click that followed a link is a navigation")
	assert.False(t, clicked.Where.BrowserChanged, "in the same browser and tab")

	p := mustOK(t, callTool(t, ts, s, "browser_press", map[string]string{"key": "Tab"}))
	assert.Contains(t, p.Text, "Pressed Tab.")
	assert.False(t, p.Where.Navigated)
	focused := mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": "document.activeElement.textContent"}))
	assert.Contains(t, focused.Text, `Result: "Home"`)
	bad := callTool(t, ts, s, "browser_press", map[string]string{"key": "Hyperdrive"})
	assert.True(t, bad.IsError)
	assert.Contains(t, bad.Text, `unknown key "Hyperdrive"`)

	closed := mustOK(t, callTool(t, ts, s, "browser_close", nil))
	assert.Contains(t, closed.Text, "Closed")
	after := mustOK(t, callTool(t, ts, s, "browser_snapshot", nil))
	assert.Equal(t, "about:blank", after.Where.URL, "a closed session starts afresh")
}

// TestRefusedURLsAreToolErrors: what the floor refuses comes back as text
// the model can act on, without the Router's internals.
func TestRefusedURLsAreToolErrors(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewSite(t)
	r := agenttest.NewRouter(t, nil)
	ts := newToolset(t, r)
	const s = "refused"

	res := callTool(t, ts, s, "browser_navigate", map[string]string{"url": "169.254.169.254/latest/meta-data/"})
	assert.True(t, res.IsError)
	assert.False(t, res.Where.Ran)
	assert.Equal(t, "blocked: http://169.254.169.254/latest/meta-data/ targets a cloud metadata endpoint; no browser opened it. Do not retry it; no setting allows it.", res.Text)

	mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": site.URL("127.0.0.1", "/")}))
	res = callTool(t, ts, s, "browser_exec", map[string]string{"code": `await fetch("http://metadata.google.internal/computeMetadata/v1/")`})
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text, "blocked: http://metadata.google.internal/computeMetadata/v1/ targets a cloud metadata endpoint")
	assert.NotContains(t, res.Text, "hybroute:")
	assert.NotContains(t, res.Text, hybroute.LocalSuffix)

	// A page that sends itself to a metadata address is refused during
	// the call; the page is left on about:blank.
	res = callTool(t, ts, s, "browser_exec", map[string]string{"code": `location.href = "http://" + ["169", "254", "169", "254"].join(".") + "/"`})
	assert.True(t, res.IsError, res.Text)
	assert.Contains(t, res.Text, "blocked: the page tried to load http://169.254.169.254/")
	assert.Contains(t, res.Text, "sent to about:blank")
}

// TestPageChangesBrowsers: with a cloud provider, navigation picks the
// browser, content tools stay on the page's browser, and code that names a
// private address pulls the session local, which the result says.
func TestPageChangesBrowsers(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewSite(t)
	cloud := agenttest.NewCloud(t)
	r := agenttest.NewRouter(t, cloud.Provider)
	ts := newToolset(t, r)
	const s = "hybrid"

	nav := mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": site.URL(agenttest.PublicHost, "/")}))
	assert.Equal(t, route.Cloud, nav.Where.Route)
	assert.Contains(t, nav.Text, "Browser: the cloud browser")
	hits := site.Hits()
	require.NotEmpty(t, hits)
	assert.Equal(t, agenttest.CloudUA, hits[len(hits)-1].UA)

	// A URL-less content call stays where the page is.
	snap := mustOK(t, callTool(t, ts, s, "browser_snapshot", nil))
	assert.Equal(t, route.Cloud, snap.Where.Route)
	assert.False(t, snap.Where.BrowserChanged)
	assert.Contains(t, snap.Text, "Corner Shop")

	// Code naming a private address runs locally: the page changed browsers.
	ex := mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": `(await fetch("` + site.URL("127.0.0.1", "/api/stock") + `", {mode: "no-cors"})).type`}))
	assert.Contains(t, ex.Text, `Result: "opaque"`)
	hits = site.Hits()
	assert.Equal(t, "/api/stock", hits[len(hits)-1].Path)
	assert.NotEqual(t, agenttest.CloudUA, hits[len(hits)-1].UA, "the local browser fetched it")
	assert.Equal(t, route.Local, ex.Where.Route)
	assert.True(t, ex.Where.BrowserChanged)
	assert.Contains(t, ex.Text, "the page changed browsers")
	assert.Equal(t, "about:blank", ex.Where.URL, "the local tab has no page yet")

	// The session follows: the next URL-less call runs locally, no change.
	snap = mustOK(t, callTool(t, ts, s, "browser_snapshot", nil))
	assert.Equal(t, route.Local, snap.Where.Route)
	assert.False(t, snap.Where.BrowserChanged)

	// Navigating to a private page stays local; back to public moves again.
	nav = mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": site.URL("localhost", "/page2")}))
	assert.Equal(t, route.Local, nav.Where.Route)
	nav = mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": site.URL(agenttest.PublicHost, "/page2")}))
	assert.Equal(t, route.Cloud, nav.Where.Route)
	assert.True(t, nav.Where.BrowserChanged)
}

// TestFallbackIsReported: a provider answering 429 gives a local session,
// and the result tells the model it is a fallback from the cloud.
func TestFallbackIsReported(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewSite(t)
	cloud := hybroutetest.NewCloud(t, hybroutetest.Browserbase)
	cloud.AnswerNext(hybroutetest.RateLimited(17 * time.Second))
	r := hybroutetest.NewRouter(t, cloud)
	ts := newToolset(t, r)

	nav := mustOK(t, callTool(t, ts, "rl", "browser_navigate", map[string]string{"url": site.URL(agenttest.PublicHost, "/")}))
	assert.True(t, nav.Where.FallbackFromCloud)
	assert.Equal(t, route.Local, nav.Where.Route)
	assert.Contains(t, nav.Text, "fallback from cloud")
	assert.Contains(t, nav.Where.FallbackReason, "429", "the model is told why")
	assert.Contains(t, nav.Text, nav.Where.FallbackReason)
	assert.Equal(t, "Corner Shop", nav.Where.Title)
	assert.Equal(t, 1, cloud.Creates())

	shot := mustOK(t, callTool(t, ts, "rl", "browser_screenshot", nil))
	assert.True(t, shot.Where.FallbackFromCloud)
	require.Len(t, shot.Images, 1)
	assert.Equal(t, 1280, shot.Images[0].Width, "the fallback runs on the local browser, with its viewport")
}

// TestSnapshotIsCutPastTheLimit: a big page's snapshot stops at the limit
// with a note saying so.
func TestSnapshotIsCutPastTheLimit(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewSite(t)
	r := agenttest.NewRouter(t, nil)
	ts := newToolset(t, r, agent.WithSnapshotLimit(4000))
	mustOK(t, callTool(t, ts, "big", "browser_navigate", map[string]string{"url": site.URL("127.0.0.1", "/big?n=300")}))
	snap := mustOK(t, callTool(t, ts, "big", "browser_snapshot", nil))
	assert.Contains(t, snap.Text, `- link "Item 0" [ref=`)
	assert.Contains(t, snap.Text, `{"expand":"f1"}`, "the list is folded")
	// The fold's items are shown a page at a time, within the limit, the
	// rest one call away.
	rest := mustOK(t, callTool(t, ts, "big", "browser_snapshot", map[string]string{"expand": "f1"}))
	body := rest.Text[strings.Index(rest.Text, "- listitem"):]
	assert.Less(t, len(body), 4400)
	assert.Regexp(t, `- … \d+ more listitem like these: browser_snapshot \{"expand":"f1:\d+"\}$`, body)
	assert.Contains(t, body, `- link "Item 3" [ref=`)
	assert.NotContains(t, body, `"Item 299"`)
	// A snapshot without folds is cut at the limit, and says so.
	unfolded := mustOK(t, callTool(t, ts, "big", "browser_snapshot", map[string]string{"find": "item"}))
	body = unfolded.Text[strings.Index(unfolded.Text, "- list"):]
	assert.Less(t, len(body), 4400)
	assert.Regexp(t, `\[snapshot cut at 4000 bytes: \d+ of \d+ lines shown`, body)
	assert.NotContains(t, body, `"Item 299"`)
}

func TestViewportOption(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewSite(t)
	r := agenttest.NewRouter(t, nil, hybroute.WithLocalViewport(800, 600))
	ts := newToolset(t, r)
	mustOK(t, callTool(t, ts, "vp", "browser_navigate", map[string]string{"url": site.URL("127.0.0.1", "/page2")}))
	shot := mustOK(t, callTool(t, ts, "vp", "browser_screenshot", nil))
	require.Len(t, shot.Images, 1)
	assert.Equal(t, [2]int{800, 600}, [2]int{shot.Images[0].Width, shot.Images[0].Height})
}

// wrappedRouter is a router as a user wraps one: it embeds the Router and
// overrides the calls it counts. The toolset sees it through agent.Router
// alone, so every tool must still work and every read still be checked.
type wrappedRouter struct {
	*hybroute.Router
	execs, navigations *atomic.Int64
}

func (w wrappedRouter) Exec(ctx context.Context, key, code string, run func(context.Context, *hybroute.Call) error, opts ...hybroute.CallOption) (hybroute.Result, error) {
	w.execs.Add(1)
	return w.Router.Exec(ctx, key, code, run, opts...)
}

func (w wrappedRouter) Navigate(ctx context.Context, key, u string, run func(context.Context, *hybroute.Call) error, opts ...hybroute.CallOption) (hybroute.Result, error) {
	w.navigations.Add(1)
	return w.Router.Navigate(ctx, key, u, run, opts...)
}

func newWrapped(r *hybroute.Router) wrappedRouter {
	return wrappedRouter{Router: r, execs: new(atomic.Int64), navigations: new(atomic.Int64)}
}

// TestContentToolsRecheckThePage: a page that moved on its own between two
// calls, to an address the floor refuses, is never read, through a router
// the user wrapped: the read that follows is refused, or finds the error
// page the guard's refusal left, and the request log names the refusal.
func TestContentToolsRecheckThePage(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewSite(t)
	w := newWrapped(agenttest.NewRouter(t, nil))
	ts := newToolset(t, w)
	mustOK(t, callTool(t, ts, "wander", "browser_navigate", map[string]string{"url": site.URL("127.0.0.1", "/")}))
	before := mustOK(t, callTool(t, ts, "wander", "browser_snapshot", nil))
	require.Contains(t, before.Text, "[ref=", "the page has content to read")
	// The URL is made at run time: a literal would be refused before the
	// call ran.
	// The page moves 2 s later: after the call, unless the machine is so
	// loaded that the call outlasts it; then the call itself is refused.
	if ex := callTool(t, ts, "wander", "browser_exec", map[string]string{"code": `setTimeout(() => { location.href = atob("aHR0cDovLzE2OS4yNTQuMTY5LjI1NC9sYXRlc3QvbWV0YS1kYXRhLw==") }, 2000); "later"`}); ex.IsError {
		assert.Contains(t, ex.Text, "blocked: the page tried to load http://169.254.169.254/latest/meta-data/")
		assert.NotContains(t, ex.Text, "[ref=")
		return
	}
	var last agent.Result
	require.Eventually(t, func() bool {
		last = callTool(t, ts, "wander", "browser_snapshot", nil)
		return !strings.Contains(last.Text, "Corner Shop")
	}, 30*time.Second, 100*time.Millisecond, "the page never moved")
	t.Log(last.Text)
	// Whichever check saw the page first (the guard as it loaded, the page
	// check before the read), nothing of a page is read.
	assert.NotContains(t, last.Text, "[ref=", "nothing of a page is read")
	if last.IsError {
		// Refused during the read: the tab was sent to about:blank.
		assert.Contains(t, last.Text, "blocked: the page tried to load http://169.254.169.254/latest/meta-data/")
	} else {
		// Refused between calls: the read found the guard's error page,
		// and the request log names the request.
		assert.Contains(t, last.Text, "Page: chrome-error://chromewebdata/")
		netw := callTool(t, ts, "wander", "browser_network_requests", nil)
		t.Log(netw.Text)
		assert.Contains(t, netw.Text, "http://169.254.169.254/latest/meta-data/")
		assert.NotRegexp(t, `meta-data/ \(document\): 200`, netw.Text, "the address never answered")
	}
	assert.Positive(t, w.execs.Load(), "the calls went through the wrapper")
	assert.Positive(t, w.navigations.Load())
}

// TestWrappedRouterLosesNothing: every tool that needs more of the Router
// than a call (tabs, dialogs, state, status, uploads, downloads, the
// guard's refusals) works through a wrapped router as through the Router.
func TestWrappedRouterLosesNothing(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewSite(t)
	w := newWrapped(agenttest.NewRouter(t, nil, hybroute.WithDialogPolicy(hybroute.DialogPolicy{Hold: true})))
	ts := newToolset(t, w, agent.WithStateDir(t.TempDir()))
	const s = "wrapped"
	mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": site.URL("127.0.0.1", "/")}))
	st := mustOK(t, callTool(t, ts, s, "browser_status", nil))
	assert.Contains(t, st.Text, "local")
	tabs := mustOK(t, callTool(t, ts, s, "browser_tabs", map[string]string{"action": "new", "url": site.URL("127.0.0.1", "/page2")}))
	assert.Contains(t, tabs.Text, "Opened a new tab")
	list := mustOK(t, callTool(t, ts, s, "browser_tabs", map[string]string{"action": "list"}))
	assert.Contains(t, list.Text, "t2")
	saved := mustOK(t, callTool(t, ts, s, "browser_state_save", map[string]string{"name": "w"}))
	assert.Contains(t, saved.Text, "Saved this session's state")
	mustOK(t, callTool(t, ts, s, "browser_state_load", map[string]string{"name": "w"}))
	held := callTool(t, ts, s, "browser_exec", map[string]string{"code": `setTimeout(() => confirm("sure?"), 0); 1`})
	require.False(t, held.IsError, held.Text)
	var answered agent.Result
	require.Eventually(t, func() bool {
		answered = callTool(t, ts, s, "browser_handle_dialog", map[string]any{"accept": true})
		return !answered.IsError
	}, 20*time.Second, 100*time.Millisecond, "the dialog never waited for an answer")
	assert.Contains(t, answered.Text, `Accepted the confirm "sure?"`)
	netw := mustOK(t, callTool(t, ts, s, "browser_network_requests", nil))
	assert.Contains(t, netw.Text, "127.0.0.1")
}

// TestDialogsAndAWedgedTab: the model reads which dialogs the page opened
// and how they were answered, and a never-ending script whose call its
// caller ended is terminated with it: the next call runs in the same tab,
// which answers (Router.Exec quiets the page of a call its caller ended).
func TestDialogsAndAWedgedTab(t *testing.T) {
	site := agenttest.NewSite(t)
	r := agenttest.NewRouter(t, nil)
	ts := newToolset(t, r)
	const s = "wedge"
	mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": site.URL("127.0.0.1", "/")}))
	ex := mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": `[alert("saved"), confirm("delete all?")]`}))
	assert.Contains(t, ex.Text, `Result: [null,false]`)
	assert.Contains(t, ex.Text, `- alert "saved": closed`)
	assert.Contains(t, ex.Text, `- confirm "delete all?": dismissed`)
	require.Len(t, ex.Where.Dialogs, 2)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	wedge, err := ts.Call(ctx, s, "browser_exec", json.RawMessage(`{"code": "while (true) {}"}`))
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "the caller's deadline ended the call: %s", wedge.Text)
	require.True(t, wedge.IsError)

	nav := mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": site.URL("127.0.0.1", "/page2")}))
	assert.False(t, nav.Where.TabReplaced, "the script was terminated: the tab answers")
	assert.NotContains(t, nav.Text, "fresh tab of the same browser")
	snap := mustOK(t, callTool(t, ts, s, "browser_snapshot", nil))
	assert.False(t, snap.Where.TabReplaced)
	assert.Contains(t, snap.Text, "Second page")
}

// heapAfterGC is the live heap once the garbage is collected.
func heapAfterGC() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestExecResultIsCutInThePage: a 100 MB result is cut in the page, so it
// never crosses the protocol: the result says where it was cut and how
// long it was, and the process's heap is back near where it was (the
// browser connection's read buffer keeps the size of the largest message
// it read).
func TestExecResultIsCutInThePage(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewSite(t)
	r := agenttest.NewRouter(t, nil)
	ts := newToolset(t, r)
	const s = "big-result"
	mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": site.URL("127.0.0.1", "/page2")}))
	mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": `"x".repeat(1000)`}))
	base := heapAfterGC()

	const n = 100 << 20
	res := mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": fmt.Sprintf(`"x".repeat(%d)`, n)}))
	assert.Contains(t, res.Text, `Result: "xxxx`)
	assert.Contains(t, res.Text, fmt.Sprintf("[result cut at %d of %d bytes;", agent.DefaultMaxResultBytes, n+2), "the JSON text is the string and its quotes")
	assert.Less(t, len(res.Text), agent.DefaultMaxResultBytes+1000)

	after := heapAfterGC()
	t.Logf("heap: %.1f MB before, %.1f MB after", float64(base)/(1<<20), float64(after)/(1<<20))
	assert.Less(t, after, base+10<<20, "the result never crossed the protocol whole")
}

// TestWithMaxResultBytes: the limit applies to any JSON result, objects
// included, and counts UTF-8 bytes; a result within it is whole.
func TestWithMaxResultBytes(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewSite(t)
	r := agenttest.NewRouter(t, nil)
	ts := newToolset(t, r, agent.WithMaxResultBytes(100))
	const s = "small-limit"
	mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": site.URL("127.0.0.1", "/page2")}))
	res := mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": `Array.from({length: 50}, (_, i) => ({i}))`}))
	assert.Contains(t, res.Text, `Result: [{"i":0},{"i":1},`)
	assert.Contains(t, res.Text, "[result cut at 100 of 441 bytes;")
	res = mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": `"é".repeat(60)`}))
	assert.Contains(t, res.Text, "[result cut at 100 of 122 bytes;", "é is two bytes")
	res = mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": `"é".repeat(40)`}))
	assert.Contains(t, res.Text, `Result: "`+strings.Repeat("é", 40)+`"`)
	assert.NotContains(t, res.Text, "cut at")
	res = mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": `({"hybroute.cut": "forged", head: "x", bytes: 1})`}))
	assert.Contains(t, res.Text, `Result: {"hybroute.cut":"forged","head":"x","bytes":1}`, "a page value is never taken for a cut")
	res = mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": `document.body`}))
	assert.Contains(t, res.Text, "a DOM node")
}

// TestSnapshotOffersFileOnlyWithADirectory: browser_snapshot's file
// argument is in the tool list only when the operator gave a snapshot
// directory, where it can work.
func TestSnapshotOffersFileOnlyWithADirectory(t *testing.T) {
	hybroutetest.Parallel(t)
	schemaOf := func(ts *agent.Toolset) string {
		for _, tool := range ts.Tools() {
			if tool.Name == agent.ToolSnapshot {
				return string(tool.InputSchema)
			}
		}
		t.Fatal("no browser_snapshot")
		return ""
	}
	bare := schemaOf(agent.New(nil))
	assert.NotContains(t, bare, `"file"`)
	assert.True(t, json.Valid([]byte(bare)), bare)
	assert.Contains(t, bare, `"expand"`)
	assert.Contains(t, schemaOf(agent.New(nil, agent.WithSnapshotDir(t.TempDir()))), `"file"`)
}
