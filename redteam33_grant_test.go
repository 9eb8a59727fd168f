package hybroute

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/testlog"
)

// Red team of issue 33, item 1: leftovers of a public page that
// TestGrantLeftoversOfAPublicPageReachNothing does not leave, each running
// leftoverLoopJS, before and after the session goes to its app on
// localhost (which grants localhost):
//
//   - noopener: a popup opened with noopener (no opener, its own browsing
//     context group) runs the loop;
//   - prerender: speculation rules prerender a public page that runs the
//     loop;
//   - frame-sw: a frame of another public site registers a service worker
//     that runs the loop (a partitioned registration);
//   - selfnav: the public page registers a looping service worker, then
//     navigates itself to the private app, as if to earn the grant;
//   - opentab: the call that visits the public page opens a second tab of
//     the session (Call.OpenTab, as browser_tabs does) and loads a looping
//     public page there.
//
// Held: noopener, selfnav and opentab ran their loop before the grant and
// reached nothing after it. prerender and frame-sw never ran their loop
// (no beat) on Chromium 156 here, so they show nothing either way.
var redGrantKinds = []string{"noopener", "prerender", "frame-sw", "selfnav", "opentab"}

func TestRedTeam33GrantLeftovers(t *testing.T) {
	d := inNetns(t)
	if d == nil {
		return
	}
	requireChromium(t)
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("skipping: the leftovers need Chromium itself, not a headless shell")
	}
	var s *site
	app := func() string { return s.url("localhost", "") }
	s = newSite(t, leftoverRoutes(app), func(mux *http.ServeMux, s *site) {
		html := func(w http.ResponseWriter, body string) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, "<!doctype html><title>leftover</title><body>%s", body)
		}
		mux.HandleFunc("/red/{kind}", func(w http.ResponseWriter, r *http.Request) {
			tag := r.URL.Query().Get("tag")
			switch r.PathValue("kind") {
			case "noopener":
				html(w, fmt.Sprintf(`<script>window.open("/leftover-tab?tag=%s", "_blank", "noopener"); document.title = "started";</script>`, tag))
			case "prerender":
				html(w, fmt.Sprintf(`<script type="speculationrules">{"prerender": [{"source": "list", "urls": ["/leftover-tab?tag=%s"]}]}</script><script>document.title = "started";</script>`, tag))
			case "frame-sw":
				html(w, fmt.Sprintf(`<iframe src="%s"></iframe><script>document.title = "started";</script>`, s.url(otherHost, "/leftover/sw?tag="+tag)))
			case "selfnav":
				html(w, fmt.Sprintf(`<script>navigator.serviceWorker.register("/leftover-sw.js?tag=%[1]s").then(() => { document.title = "registered"; setTimeout(() => { location.href = %[2]q; }, 300); }, e => { document.title = "failed " + e; });</script>`,
					tag, app()+"/app-"+tag))
			default:
				http.NotFound(w, r)
			}
		})
	})
	logs := &testlog.Buffer{}
	r := newRouter(t, nil, logs, append(grantOptions(), WithChromiumPath(chromium), WithChromiumFlags(map[string]any{
		"unsafely-treat-insecure-origin-as-secure": s.url(publicHost, "") + "," + s.url(otherHost, "")}))...)

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
	waitFor := func(max time.Duration, cond func() bool) bool {
		for deadline := time.Now().Add(max); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if cond() {
				return true
			}
		}
		return cond()
	}
	for _, kind := range redGrantKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := testCtx(t)
			tag := "red" + strings.ReplaceAll(kind, "-", "")
			page := s.url(publicHost, "/red/"+kind+"?tag="+tag)
			if kind == "opentab" {
				page = s.url(publicHost, "/start-"+tag)
			}
			_, err := r.Navigate(ctx, tag, page, func(ctx context.Context, c *Call) error {
				if err := chromedp.Do(ctx, chromedp.Navigate(page)); err != nil {
					return err
				}
				if kind == "opentab" {
					tab, err := c.OpenTab(ctx)
					if err != nil {
						return err
					}
					return chromedp.Do(tab, chromedp.Navigate(s.url(publicHost, "/leftover-tab?tag="+tag)))
				}
				_, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.title !== "leftover"`))
				return err
			})
			if err != nil {
				t.Logf("the public call: %v", err)
			}
			ran := waitFor(8*time.Second, func() bool { return len(reachedPrefix("/beat-"+tag)) > 0 })
			t.Logf("%s: the leftover ran before the grant: %v", kind, ran)
			assert.Empty(t, escaped(tag), "the leftover reaches nothing before the grant")

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
			// The leftovers beat every round; give them rounds to reach.
			n0 := len(reachedPrefix("/beat-" + tag))
			waitFor(3*time.Second, func() bool { return len(escaped(tag)) > 0 || len(reachedPrefix("/beat-"+tag)) > n0+20 })
			t.Logf("%s: beats after the grant: %d", kind, len(reachedPrefix("/beat-"+tag))-n0)
			assert.Empty(t, escaped(tag), "what the public page left behind reaches nothing after the grant")
		})
	}
}

// redPopupKinds are the ways a granted page of the private app opens a
// public page in a popup, on a click of the model's (a call that names no
// URL): a link with target=_blank (noopener by default), window.open with
// an opener, and window.open with noopener.
var redPopupKinds = []string{"link-blank", "open", "open-noopener"}

// TestRedTeam33GrantPublicPopupOfAGrantedPage: the session is on its app on
// localhost (granted, in a clean context); the app opens a public page in
// a popup. The docs say the grant ends when a page or popup of the session
// starts to load a document the grant does not cover: the public page's
// loop reaches nothing.
func TestRedTeam33GrantPublicPopupOfAGrantedPage(t *testing.T) {
	d := inNetns(t)
	if d == nil {
		return
	}
	requireChromium(t)
	var s *site
	s = newSite(t, leftoverRoutes(func() string { return s.url("localhost", "") }), func(mux *http.ServeMux, s *site) {
		mux.HandleFunc("/redapp/{kind}", func(w http.ResponseWriter, r *http.Request) {
			tag := r.URL.Query().Get("tag")
			pub := s.url(publicHost, "/leftover-tab?tag="+tag)
			var open string
			switch r.PathValue("kind") {
			case "link-blank":
				open = fmt.Sprintf(`const a = document.createElement("a"); a.href = %q; a.target = "_blank"; document.body.appendChild(a); a.click();`, pub)
			case "open":
				open = fmt.Sprintf(`window.open(%q);`, pub)
			case "open-noopener":
				open = fmt.Sprintf(`window.open(%q, "_blank", "noopener");`, pub)
			}
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, "<!doctype html><title>app</title><body><script>function docs() { %s }</script>", open)
		})
	})
	r := newRouter(t, nil, &testlog.Buffer{}, grantOptions()...)
	beats := func(tag string) int { return len(s.hitsPrefix("/beat-" + tag)) }
	escaped := func(tag string) []string {
		out := s.hitsPrefix("/secret-" + tag)
		for _, e := range d.escapes() {
			if strings.Contains(e.line, tag) {
				out = append(out, e.String())
			}
		}
		return out
	}
	for _, kind := range redPopupKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := testCtx(t)
			tag := "redpop" + strings.ReplaceAll(kind, "-", "")
			_, err := r.Navigate(ctx, tag, s.url("localhost", "/redapp/"+kind+"?tag="+tag), nil)
			require.NoError(t, err)
			_, err = r.Exec(ctx, tag, `docs()`, func(ctx context.Context, c *Call) error {
				_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`docs(), true`, asUserGesture))
				return err
			})
			if err != nil {
				t.Logf("the click: %v", err)
			}
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && beats(tag) < 20 && len(escaped(tag)) == 0; time.Sleep(20 * time.Millisecond) {
			}
			t.Logf("%s: %d beats of the public popup", kind, beats(tag))
			require.Positive(t, beats(tag), "the public popup ran: without it the check below holds of nothing")
			assert.Empty(t, escaped(tag), "the public popup of a granted page reached the app or a decoy")
		})
	}
}

// hitsPrefix returns host+path of the requests whose path starts with prefix.
func (s *site) hitsPrefix(prefix string) []string {
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

// TestRedTeam33GrantByExecOnAPublicPage: the session's page is a public
// page that registered a looping service worker; the next call names the
// private app only in its code (a fetch of localhost from the page, no
// navigation). The call earns the grant: what the public page left must
// still reach nothing.
func TestRedTeam33GrantByExecOnAPublicPage(t *testing.T) {
	d := inNetns(t)
	if d == nil {
		return
	}
	requireChromium(t)
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("skipping: a service worker needs Chromium itself, not a headless shell")
	}
	var s *site
	s = newSite(t, leftoverRoutes(func() string { return s.url("localhost", "") }))
	r := newRouter(t, nil, &testlog.Buffer{}, append(grantOptions(), WithChromiumPath(chromium), WithChromiumFlags(map[string]any{
		"unsafely-treat-insecure-origin-as-secure": s.url(publicHost, "")}))...)
	ctx := testCtx(t)
	const tag = "redexec"
	page := s.url(publicHost, "/leftover/sw?tag="+tag)
	_, err = r.Navigate(ctx, tag, page, func(ctx context.Context, c *Call) error {
		if err := chromedp.Do(ctx, chromedp.Navigate(page)); err != nil {
			return err
		}
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.title !== "leftover"`))
		return err
	})
	require.NoError(t, err)
	for deadline := time.Now().Add(8 * time.Second); time.Now().Before(deadline) && len(s.hitsPrefix("/beat-"+tag)) == 0; time.Sleep(20 * time.Millisecond) {
	}
	require.NotEmpty(t, s.hitsPrefix("/beat-"+tag), "the worker runs")
	api := s.url("localhost", "/api-"+tag)
	var got, where string
	_, err = r.Exec(ctx, tag, `fetch("`+api+`")`, func(ctx context.Context, c *Call) error {
		var err error
		where, _ = chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`))
		got, err = chromedp.Run(ctx, chromedp.Evaluate[string](`fetch(`+fmt.Sprintf("%q", api)+`, {mode: "no-cors"}).then(r => "fetched " + r.type, e => "network error: " + e)`, chromedp.EvalAwaitPromise))
		return err
	})
	t.Logf("the call: err %v, page %q, fetch %q", err, where, got)
	n0 := len(s.hitsPrefix("/beat-" + tag))
	escaped := func() []string {
		out := s.hitsPrefix("/secret-" + tag)
		for _, e := range d.escapes() {
			if strings.Contains(e.line, tag) {
				out = append(out, e.String())
			}
		}
		return out
	}
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline) && len(escaped()) == 0 && len(s.hitsPrefix("/beat-"+tag)) < n0+20; time.Sleep(20 * time.Millisecond) {
	}
	t.Logf("beats after the call: %d", len(s.hitsPrefix("/beat-"+tag))-n0)
	assert.Empty(t, escaped(), "the public page's worker reached the app or a decoy after a grant by code")
}
