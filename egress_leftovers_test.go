package hybroute

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/testlog"
)

// What a public page leaves behind in its session, and what it may do
// once a later call of the session earns a grant. Each leftover reaches
// for the private app (its server on localhost) and for loopback decoys
// in a loop, and reports that it is alive to its own public site. While
// the public page is the session's page, every reach is refused; the
// session then goes to its own app on localhost, which grants localhost,
// and the leftover must still reach nothing.

// leftoverLoopJS reaches for the app (app: its base URL) and the loopback
// decoys every 50 ms, tagging each path with tag, and after each round
// tells its own site it is alive (/beat-tag).
func leftoverLoopJS(app, tag string) string {
	return fmt.Sprintf(`(async (app, tag) => {
  const targets = [app + "/secret-" + tag, "http://127.0.0.1:8080/secret-" + tag, "http://localhost:8080/secret-" + tag];
  for (let n = 0; ; n++) {
    for (const u of targets) { try { await fetch(u + "-" + n, {mode: "no-cors"}); } catch (e) {} }
    try { await fetch("/beat-" + tag + "?n=" + n); } catch (e) {}
    await new Promise(r => setTimeout(r, 50));
  }
})(%q, %q);`, app, tag)
}

// leftoverRoutes serve the public pages that leave something behind, by
// kind, each with the tag of its query:
//
//   - /leftover/sw registers a service worker whose activate never ends
//     and which runs the loop;
//   - /leftover/shared starts a shared worker that runs the loop, and opens
//     a tab that holds it too, so it outlives the page;
//   - /leftover/tab opens a second tab that runs the loop;
//   - /leftover/bfcache runs the loop once it is shown again from the
//     back-forward cache.
func leftoverRoutes(app func() string) func(mux *http.ServeMux, s *site) {
	return func(mux *http.ServeMux, s *site) {
		html := func(w http.ResponseWriter, body string) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, "<!doctype html><title>leftover</title><body><script>%s</script>", body)
		}
		js := func(w http.ResponseWriter, body string) {
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, body)
		}
		mux.HandleFunc("/leftover/{kind}", func(w http.ResponseWriter, r *http.Request) {
			tag := r.URL.Query().Get("tag")
			switch r.PathValue("kind") {
			case "sw":
				html(w, fmt.Sprintf(`navigator.serviceWorker.register("/leftover-sw.js?tag=%s").then(() => { document.title = "registered"; }, e => { document.title = "failed " + e; });`, tag))
			case "shared":
				html(w, fmt.Sprintf(`new SharedWorker("/leftover-shared.js?tag=%[1]s"); window.open("/leftover-holder?tag=%[1]s"); document.title = "started";`, tag))
			case "tab":
				html(w, fmt.Sprintf(`window.open("/leftover-tab?tag=%s"); document.title = "started";`, tag))
			case "bfcache":
				html(w, fmt.Sprintf(`addEventListener("pageshow", e => { if (e.persisted) { fetch("/shown-%[1]s"); %[2]s } }); document.title = "started";`,
					tag, leftoverLoopJS(app(), tag)))
			default:
				http.NotFound(w, r)
			}
		})
		mux.HandleFunc("/leftover-sw.js", func(w http.ResponseWriter, r *http.Request) {
			js(w, `self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", e => e.waitUntil(new Promise(() => {})));
`+leftoverLoopJS(app(), r.URL.Query().Get("tag")))
		})
		mux.HandleFunc("/leftover-shared.js", func(w http.ResponseWriter, r *http.Request) {
			js(w, `onconnect = e => e.ports[0].start();
`+leftoverLoopJS(app(), r.URL.Query().Get("tag")))
		})
		mux.HandleFunc("/leftover-holder", func(w http.ResponseWriter, r *http.Request) {
			html(w, fmt.Sprintf(`new SharedWorker("/leftover-shared.js?tag=%s"); document.title = "holding";`, r.URL.Query().Get("tag")))
		})
		mux.HandleFunc("/leftover-tab", func(w http.ResponseWriter, r *http.Request) {
			html(w, leftoverLoopJS(app(), r.URL.Query().Get("tag")))
		})
	}
}

// TestGrantLeftoversOfAPublicPageReachNothing: a public page on the local
// browser leaves something behind in its session (a service worker, a
// shared worker, a second tab, itself in the back-forward cache), which
// reaches for the private app and loopback in a loop; the session then
// goes to its own app on localhost, which grants localhost. Inside a
// network namespace with decoys: no request of the leftover reaches the
// app or a decoy, before the grant or after it, while the app, granted,
// still reads its own server.
func TestGrantLeftoversOfAPublicPageReachNothing(t *testing.T) {
	d := inNetns(t)
	if d == nil {
		return
	}
	requireChromium(t)
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("skipping: the leftovers need Chromium itself (a service worker, a back-forward cache), not a headless shell")
	}
	var s *site
	s = newSite(t, leftoverRoutes(func() string { return s.url("localhost", "") }))
	logs := &testlog.Buffer{}
	// A service worker needs a secure context: the public site is one
	// here, as an https site would be. Chromium, not its headless shell,
	// whose pages have no back-forward cache and no such flag.
	r := newRouter(t, nil, logs, append(grantOptions(), WithChromiumPath(chromium), WithChromiumFlags(map[string]any{
		"unsafely-treat-insecure-origin-as-secure": s.url(publicHost, "")}))...)

	reachedPrefix := func(prefix string) []string {
		s.mu.Lock()
		defer s.mu.Unlock()
		var out []string
		for _, h := range s.hits {
			if strings.HasPrefix(h.path, prefix) {
				out = append(out, h.host+h.path)
			}
		}
		return out
	}
	escaped := func(tag string) []string {
		out := reachedPrefix("/secret-" + tag)
		for _, e := range d.escapes() {
			if strings.Contains(e.line, tag) {
				out = append(out, e.String())
			}
		}
		return out
	}
	// waitFor polls cond for at most max: the leftovers run every 50 ms,
	// so what they would reach shows well within it.
	waitFor := func(max time.Duration, cond func() bool) bool {
		for deadline := time.Now().Add(max); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if cond() {
				return true
			}
		}
		return cond()
	}
	// disposed reports whether the browser context bc is gone from the
	// browser, and everything that ran in it.
	disposed := func(t *testing.T, key string, bc cdp.BrowserContextID) bool {
		c := chromedp.FromContext(sessionOf(t, r, key).h.Context())
		res, err := cdp.Call(testCtx(t), c.Browser, target.GetBrowserContexts, cdp.Empty{})
		return err == nil && !slices.Contains(res.BrowserContextIDs, bc)
	}

	for _, kind := range []string{"sw", "shared", "tab", "bfcache"} {
		t.Run(kind, func(t *testing.T) {
			ctx := testCtx(t)
			tag := "left" + kind
			_, err := r.Navigate(ctx, tag, s.url(publicHost, "/leftover/"+kind+"?tag="+tag), func(ctx context.Context, c *Call) error {
				if err := chromedp.Do(ctx, chromedp.Navigate(s.url(publicHost, "/leftover/"+kind+"?tag="+tag))); err != nil {
					return err
				}
				_, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.title !== "leftover"`))
				return err
			})
			require.NoError(t, err)
			if kind != "bfcache" {
				require.True(t, waitFor(10*time.Second, func() bool { return len(reachedPrefix("/beat-"+tag)) > 0 }),
					"the leftover runs before the grant")
			}
			require.Empty(t, escaped(tag), "the public page's leftover reaches nothing before the grant")

			before := sessionOf(t, r, tag).h.Tab().BrowserContextID()
			// The session goes to its own app, which grants localhost; the
			// app reads its own server.
			_, err = r.Navigate(ctx, tag, s.url("localhost", "/app-"+tag), nil)
			require.NoError(t, err)
			var own string
			_, err = r.Exec(ctx, tag, `read()`, func(ctx context.Context, c *Call) error {
				var err error
				own, err = chromedp.Run(ctx, chromedp.Evaluate[string](`fetch("/api-`+tag+`").then(r => r.text(), e => "network error: " + e)`, chromedp.EvalAwaitPromise))
				return err
			})
			require.NoError(t, err)
			assert.Contains(t, own, "<title>", "the granted app reads its own server")

			if kind == "bfcache" {
				// A call that names no URL goes back: the public page,
				// if it is there to go back to, runs its loop.
				_, err = r.Exec(ctx, tag, `back()`, func(ctx context.Context, c *Call) error {
					_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`setTimeout(() => history.back(), 0), true`))
					return err
				})
				require.NoError(t, err)
			}
			// Until the leftover reached something, or the context it ran
			// in is gone with it.
			gone := func() bool { return disposed(t, tag, before) }
			waitFor(3*time.Second, func() bool { return len(escaped(tag)) > 0 || gone() })
			assert.Empty(t, escaped(tag), "what the public page left behind reaches nothing after the grant")
		})
	}
}

// TestGrantMovesOnlyAContextThatRanOtherHosts: a session that stays on its
// app on localhost keeps its browser context call after call (its page,
// its storage); a visit to a public page earns no grant and moves
// nothing; the next call that grants localhost moves the session to a
// fresh context, with the app's cookie and none of the old history.
func TestGrantMovesOnlyAContextThatRanOtherHosts(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	s := newSite(t, func(mux *http.ServeMux, _ *site) {
		mux.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
			http.SetCookie(w, &http.Cookie{Name: "app", Value: "signed-in", Path: "/"})
			servePage(w, "revenue", r.URL.Path)
		})
	})
	r := newRouter(t, nil, nil, WithResolver(grantResolver()))
	ctx := testCtx(t)
	contextOf := func() string { return string(sessionOf(t, r, "dev").h.Tab().BrowserContextID()) }
	read := func(js string) string {
		var got string
		_, err := r.Exec(ctx, "dev", `read()`, func(ctx context.Context, c *Call) error {
			var err error
			got, err = chromedp.Run(ctx, chromedp.Evaluate[string](js))
			return err
		})
		require.NoError(t, err)
		return got
	}

	_, err := r.Navigate(ctx, "dev", s.url("localhost", "/login"), nil)
	require.NoError(t, err)
	first := contextOf()
	_, err = r.Navigate(ctx, "dev", s.url("localhost", "/orders"), nil)
	require.NoError(t, err)
	assert.Equal(t, first, contextOf(), "a context that ran only the granted host keeps its grant")
	assert.Equal(t, "3", read(`String(history.length)`), "and its history (about:blank, /login, /orders)")

	_, err = r.Navigate(ctx, "dev", s.url(publicHost, "/docs"), nil)
	require.NoError(t, err)
	assert.Equal(t, first, contextOf(), "a public page earns no grant and moves nothing")

	_, err = r.Navigate(ctx, "dev", s.url("localhost", "/orders"), nil)
	require.NoError(t, err)
	assert.NotEqual(t, first, contextOf(), "the grant is given in a fresh context")
	assert.Equal(t, "app=signed-in", read(`document.cookie`), "the app's cookie followed the session")
	assert.Equal(t, "2", read(`String(history.length)`), "the old context's history is gone with it (about:blank, /orders)")
	assert.Equal(t, "/orders", read(`location.pathname`))
}
