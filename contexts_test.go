package hybroute

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/cdp"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cdpconn"
	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/guard"
	"github.com/hybroute/hybroute/internal/remotetab"
	"github.com/hybroute/hybroute/internal/testlog"
)

// Sessions that share a remote browser (the CDP override's here) each run
// in a browser context of their own: what one stores or says, the other
// cannot see, and a session's release takes its context with every page
// in it.

// sharedRoutes are the pages of these tests: /shared, a page; /worker, a
// page that starts a shared worker and is titled once it answered.
func sharedRoutes(mux *http.ServeMux, _ *site) {
	mux.HandleFunc("/worker", staticPage("worker"))
	// Each connection counts: a second page that reaches the same worker
	// reads 2.
	mux.HandleFunc("/shared-counter.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, `let n = 0; onconnect = e => { const p = e.ports[0]; n++; p.onmessage = () => p.postMessage(n); };`)
	})
}

// overrideWorld is a router on the CDP override of a real Chromium that
// maps the test names to the site.
func overrideWorld(t *testing.T) (*Router, *site, *cloudtest.Chromium) {
	t.Helper()
	requireChromium(t)
	s := newSite(t, sharedRoutes)
	cloud := cloudtest.LaunchChromium(t, "--user-agent="+cloudUA, "--host-resolver-rules="+hostRules)
	r := newRouter(t, nil, &testlog.Buffer{}, WithCDPURL(cloud.WSURL))
	return r, s, cloud
}

// browserQuery sends one command to the browser at wsURL over a connection
// of its own (it opens no tab) and decodes the answer into result.
func browserQuery(t *testing.T, wsURL string, method cdproto.MethodType, params, result any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := cdpconn.Dial(ctx, wsURL, nil)
	require.NoError(t, err)
	defer conn.Close()
	p, err := jsonv2.Marshal(params, chromedp.DefaultMarshalOptions)
	require.NoError(t, err)
	require.NoError(t, conn.Write(ctx, &cdproto.Message{ID: 1, Method: method, Params: p}))
	for {
		var msg cdproto.Message
		require.NoError(t, conn.Read(ctx, &msg))
		if msg.ID != 1 {
			continue
		}
		require.Nil(t, msg.Error, "%s", method)
		require.NoError(t, jsonv2.Unmarshal(msg.Result, result, chromedp.DefaultUnmarshalOptions))
		return
	}
}

// remoteContexts lists the browser contexts the browser has made for its
// clients (the default context is not among them).
func remoteContexts(t *testing.T, wsURL string) []cdp.BrowserContextID {
	t.Helper()
	var res target.GetBrowserContextsResult
	browserQuery(t, wsURL, target.CommandGetBrowserContexts, cdp.Empty{}, &res)
	return res.BrowserContextIDs
}

// remotePages lists the pages of the browser context id, as "id url".
func remotePages(t *testing.T, wsURL string, id cdp.BrowserContextID) []string {
	t.Helper()
	var res target.GetTargetsResult
	browserQuery(t, wsURL, target.CommandGetTargets, target.GetTargetsParams{}, &res)
	var out []string
	for _, ti := range res.TargetInfos {
		if ti.Type == "page" && ti.BrowserContextID == id {
			out = append(out, string(ti.TargetID)+" "+ti.URL)
		}
	}
	return out
}

// contextGoneFrom waits until the browser lists neither the context id nor
// a page of it (Chromium lists a closed page a moment longer).
func contextGoneFrom(t *testing.T, wsURL string, id cdp.BrowserContextID) {
	t.Helper()
	gone := func() bool {
		return !slices.Contains(remoteContexts(t, wsURL), id) && len(remotePages(t, wsURL, id)) == 0
	}
	for deadline := time.Now().Add(20 * time.Second); !gone() && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	assert.NotContains(t, remoteContexts(t, wsURL), id, "the session's browser context is still there")
	assert.Empty(t, remotePages(t, wsURL, id), "pages of the session are left")
}

// sessionOf is the live session of key.
func sessionOf(t *testing.T, r *Router, key string) *entry {
	t.Helper()
	e := cachedEntry(r, key)
	require.NotNil(t, e, "no session %q", key)
	return e
}

// remoteContextOf is the browser context of a remote session's tab.
func remoteContextOf(t *testing.T, r *Router, key string) cdp.BrowserContextID {
	t.Helper()
	rt, ok := sessionOf(t, r, key).h.Tab().(*remotetab.Tab)
	require.True(t, ok, "session %q is not on a remote browser", key)
	return rt.BrowserContextID()
}

// Two sessions on one CDP override: A sets a cookie and localStorage on an
// origin served on loopback and posts a BroadcastChannel message; B, on the
// same origin and listening, sees no cookie, no storage and no message.
// A's release then takes its browser context and every page of it (its
// popup included); B's goes on.
func TestSessionsOnASharedBrowserAreIsolated(t *testing.T) {
	t.Parallel()
	r, s, cloud := overrideWorld(t)
	ctx := testCtx(t)
	page := s.url(publicHost, "/shared")

	// B listens first, so a message of A's would reach it.
	_, err := r.Navigate(ctx, "b", page, func(ctx context.Context, call *Call) error {
		if err := chromedp.Do(ctx, chromedp.Navigate(page)); err != nil {
			return err
		}
		_, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](
			`window.heard = []; window.bc = new BroadcastChannel("hyb"); bc.onmessage = e => heard.push(e.data);`))
		return err
	})
	require.NoError(t, err)

	// A stores, posts, and waits until a listener of its own context heard
	// the message: it was sent. Then it opens a popup on the same origin.
	var heardByA string
	_, err = r.Navigate(ctx, "a", page, func(ctx context.Context, call *Call) error {
		if err := chromedp.Do(ctx, chromedp.Navigate(page)); err != nil {
			return err
		}
		var err error
		heardByA, err = chromedp.Run(ctx, chromedp.Evaluate[string](`(async () => {
  document.cookie = "who=a; max-age=3600; path=/";
  localStorage.setItem("who", "a");
  const own = new BroadcastChannel("hyb");
  const heard = new Promise(ok => { own.onmessage = e => ok(e.data); });
  new BroadcastChannel("hyb").postMessage("from-a");
  return await heard;
})()`, chromedp.EvalAwaitPromise))
		if err != nil {
			return err
		}
		_, err = chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`void window.open("/popup-of-a")`, asUserGesture))
		return err
	})
	require.NoError(t, err)
	require.Equal(t, "from-a", heardByA)

	// In one context B would have heard A by now; it is given 2 s more,
	// and nothing of A's may be there.
	type seen struct {
		Cookie  string   `json:"cookie"`
		Storage *string  `json:"storage"`
		Heard   []string `json:"heard"`
	}
	var b seen
	_, err = r.Exec(ctx, "b", "", func(ctx context.Context, call *Call) error {
		var err error
		b, err = chromedp.Run(ctx, chromedp.Evaluate[seen](`(async () => {
  for (let i = 0; i < 40 && heard.length === 0; i++) await new Promise(ok => setTimeout(ok, 50));
  return {cookie: document.cookie, storage: localStorage.getItem("who"), heard: heard};
})()`, chromedp.EvalAwaitPromise))
		return err
	})
	require.NoError(t, err)
	assert.Empty(t, b.Cookie, "B sees A's cookie")
	assert.Nil(t, b.Storage, "B sees A's localStorage")
	assert.Empty(t, b.Heard, "B heard A's BroadcastChannel message")

	// Each session has a context of its own, and A's holds its tab and
	// its popup.
	ctxA, ctxB := remoteContextOf(t, r, "a"), remoteContextOf(t, r, "b")
	require.NotEmpty(t, ctxA, "session A has no browser context of its own")
	require.NotEqual(t, ctxA, ctxB)
	require.Subset(t, remoteContexts(t, cloud.WSURL), []cdp.BrowserContextID{ctxA, ctxB})
	for deadline := time.Now().Add(20 * time.Second); len(remotePages(t, cloud.WSURL, ctxA)) < 2 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	require.Len(t, remotePages(t, cloud.WSURL, ctxA), 2, "A's tab and its popup")

	require.NoError(t, r.Release(ctx, "a"))
	contextGoneFrom(t, cloud.WSURL, ctxA)

	// B's context and tab are untouched, and a new A starts clean.
	assert.Contains(t, remoteContexts(t, cloud.WSURL), ctxB)
	_, err = r.Exec(ctx, "b", "", func(ctx context.Context, call *Call) error {
		_, err := chromedp.Run(ctx, chromedp.Evaluate[int](`1`))
		return err
	})
	require.NoError(t, err)
	var again seen
	_, err = r.Navigate(ctx, "a", page, func(ctx context.Context, call *Call) error {
		if err := chromedp.Do(ctx, chromedp.Navigate(page)); err != nil {
			return err
		}
		var err error
		again, err = chromedp.Run(ctx, chromedp.Evaluate[seen](`({cookie: document.cookie, storage: localStorage.getItem("who"), heard: []})`))
		return err
	})
	require.NoError(t, err)
	assert.Empty(t, again.Cookie, "a released session's cookie outlived it")
	assert.Nil(t, again.Storage, "a released session's storage outlived it")
}

// A session whose connection is lost without a release (the browser's
// side of an abandoned or cut-short connection) leaves no context and no
// page: Chromium disposes of a context whose creator went.
func TestLostConnectionTakesTheSessionsContext(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	s := newSite(t)
	cloud := cloudtest.LaunchChromium(t, "--host-resolver-rules="+hostRules)
	api := cloudtest.NewServer(t, cloudtest.CDP, cloud.WSURL, cloudtest.WithAPIKey(testAPIKey), cloudtest.WithRealShapes())
	r := newRouter(t, nil, &testlog.Buffer{}, WithCDPURL(api.EndpointURL()), WithCDPHTTPClient(api.HTTPClient()))
	ctx := testCtx(t)
	_, err := r.Navigate(ctx, "a", s.url(publicHost, "/before-the-drop"), nil)
	require.NoError(t, err)
	id := remoteContextOf(t, r, "a")
	require.NotEmpty(t, id, "the session has no browser context of its own")
	require.Len(t, remotePages(t, cloud.WSURL, id), 1)

	api.Front.DropConnections()
	contextGoneFrom(t, cloud.WSURL, id)
}

// The guard of a shared browser attributes a target by its browser
// context: a shared worker, which no page opened and no page's session
// attached, is the session's whose context runs it, and not another's.
// (In one context, the two pages would share one worker: it would count
// two connections.)
func TestTargetsBelongToTheirSessionsContext(t *testing.T) {
	t.Parallel()
	r, s, cloud := overrideWorld(t)
	ctx := testCtx(t)
	for _, key := range []string{"a", "b"} {
		u := s.url(publicHost, "/worker")
		_, err := r.Navigate(ctx, key, u, func(ctx context.Context, call *Call) error {
			if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
				return err
			}
			_, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.title.startsWith("worker ")`))
			return err
		})
		require.NoError(t, err)
		var title string
		_, err = r.Exec(ctx, key, "", func(ctx context.Context, call *Call) error {
			var err error
			title, err = chromedp.Run(ctx, chromedp.Title())
			return err
		})
		require.NoError(t, err)
		assert.Equal(t, "worker 1", title, "session %s shares its worker", key)
	}
	ea, eb := sessionOf(t, r, "a"), sessionOf(t, r, "b")
	ctxA, ctxB := remoteContextOf(t, r, "a"), remoteContextOf(t, r, "b")
	require.NotEmpty(t, ctxA)

	// Each guard sees the whole browser: both workers.
	workers := func(g *guard.Guard) map[cdp.BrowserContextID]target.ID {
		out := map[cdp.BrowserContextID]target.ID{}
		for id, ti := range g.Targets() {
			if ti.Type == "shared_worker" {
				out[ti.BrowserContextID] = id
			}
		}
		return out
	}
	var seen map[cdp.BrowserContextID]target.ID
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if seen = workers(ea.bg); seen[ctxA] != "" && seen[ctxB] != "" {
			break
		}
	}
	require.NotEmpty(t, seen[ctxA], "A's guard saw no worker in A's context (browser %s)", cloud.WSURL)
	require.NotEmpty(t, seen[ctxB], "A's guard saw no worker in B's context")
	assert.Same(t, &ea.gs, ea.bg.OwnerOf(seen[ctxA]), "A's worker is A's")
	assert.Nil(t, ea.bg.OwnerOf(seen[ctxB]), "B's worker is not A's")
	assert.Same(t, &eb.gs, eb.bg.OwnerOf(seen[ctxB]), "B's worker is B's")
}
