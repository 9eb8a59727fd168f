package hybroute

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/testlog"
	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/provider"
	"github.com/hybroute/hybroute/route"
)

// hostileNames are names that both the stand-in cloud browser and the
// router's resolver map to a decoy: metadata, each private range, loopback.
var hostileNames = map[string]string{
	"imds.evil.test":    "169.254.169.254",
	"ecs.evil.test":     "169.254.170.2",
	"alibaba.evil.test": "100.100.100.200",
	"lan10.evil.test":   "10.0.0.5",
	"lan172.evil.test":  "172.16.0.5",
	"lan192.evil.test":  "192.168.1.10",
	"cgnat.evil.test":   "100.64.0.5",
	"loop.evil.test":    "127.0.0.1",
	"v6meta.evil.test":  "fd00:ec2::254",
	"ula.evil.test":     "fd12:3456::5",
}

// hostileTargets are the URLs a hostile page loads: every hostile name,
// the decoys as literals (some in the spellings a script builds at run
// time, as Chromium parses them), and subresource redirects from the
// public site to a hostile name and to a literal.
func hostileTargets(s *site) []string {
	var out []string
	for n := range hostileNames {
		out = append(out, "http://"+n+"/latest/meta-data/")
	}
	out = append(out,
		"http://169.254.169.254/latest/meta-data/", "http://0xA9FEA9FE/computeMetadata/v1/",
		"http://10.0.0.5/", "http://0x0a000005/", "http://172.16.0.5/", "http://192.168.1.10/",
		"http://100.64.0.5/", "http://127.0.0.1/", "http://[::1]/", "http://[fd00:ec2::254]/",
		"http://[::ffff:10.0.0.5]/", "https://10.0.0.5/",
		s.url(publicHost, "/redirect-to/imds.evil.test/latest/meta-data/"),
		s.url(publicHost, "/redirect-to/10.0.0.5/admin"),
		s.url(publicHost, "/redirect-to/lan192.evil.test/router"),
	)
	return out
}

// loadingMethods are the ways a page makes a request that is not its own
// document load, as JavaScript taking a URL u and returning a promise that
// settles once the attempt is over (or after 3 s).
var loadingMethods = map[string]string{
	"fetch":         `fetch(u, {mode: "no-cors"})`,
	"fetch-post":    `fetch(u, {method: "POST", body: "x", mode: "no-cors"})`,
	"xhr":           `new Promise(r => { const x = new XMLHttpRequest(); x.onloadend = r; x.open("GET", u); x.send(); })`,
	"beacon":        `Promise.resolve(navigator.sendBeacon(u, "x"))`,
	"image":         `new Promise(r => { const i = new Image(); i.onload = i.onerror = r; i.src = u; })`,
	"script":        `el("script", {src: u})`,
	"stylesheet":    `el("link", {rel: "stylesheet", href: u})`,
	"prefetch":      `el("link", {rel: "prefetch", href: u})`,
	"preload":       `el("link", {rel: "preload", as: "fetch", href: u, crossOrigin: "anonymous"})`,
	"css-url":       `new Promise(r => { const d = document.createElement("div"); d.style.backgroundImage = "url(" + JSON.stringify(u) + ")"; d.textContent = "x"; document.body.append(d); setTimeout(r, 500); })`,
	"font":          `new FontFace("f" + Math.random().toString(36).slice(2), "url(" + JSON.stringify(u) + ")").load()`,
	"audio":         `el("audio", {src: u, preload: "auto"}, "canplay")`,
	"video-poster":  `el("video", {poster: u})`,
	"event-source":  `new Promise(r => { const e = new EventSource(u); e.onerror = e.onopen = () => { e.close(); r(); }; })`,
	"object":        `el("object", {data: u})`,
	"worker-fetch":  `new Promise(r => { const w = new Worker("/hostile-worker.js"); w.onmessage = r; w.onerror = r; w.postMessage(u); })`,
	"shared-fetch":  `new Promise(r => { const w = new SharedWorker("/hostile-worker.js", Math.random().toString()); w.port.onmessage = r; w.onerror = r; w.port.postMessage(u); })`,
	"worker-import": `new Promise(r => { const w = new Worker("/hostile-import.js"); w.onmessage = r; w.onerror = r; w.postMessage(u); })`,
	"iframe":        `el("iframe", {src: u})`,
}

// hostilePages serves /hostile, whose attack(method) loads every target by
// that method of methods and resolves once every attempt is over (to their number),
// and the public control resources that must load. Each URL loaded carries
// the method in its query (via=), so a request that reached a decoy names
// the method that sent it while pages attack side by side.
func hostilePages(methods map[string]string, targets func() []string) func(*http.ServeMux, *site) {
	return func(mux *http.ServeMux, s *site) {
		mux.HandleFunc("/hostile", func(w http.ResponseWriter, r *http.Request) {
			// attack(method) is started by the test once the page has
			// loaded, so the navigation is over before any attempt starts.
			servePage(w, "hostile", struct {
				Methods map[string]string
				Targets []string
			}{methods, targets()})
		})
		mux.HandleFunc("/hostile-worker.js", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, `const answer = (p, u) => fetch(u, {mode: "no-cors"}).catch(() => {}).then(() => p.postMessage("done"));
onmessage = e => answer(self, e.data);
onconnect = c => { const p = c.ports[0]; p.onmessage = e => answer(p, e.data); };`)
		})
		mux.HandleFunc("/hostile-import.js", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, `onmessage = e => { try { importScripts(e.data); } catch (_) {} postMessage("done"); };`)
		})
	}
}

// loadsDocument reports whether the loading method loads its URL as a
// document (a frame).
func loadsDocument(method string) bool { return method == "iframe" || method == "object" }

// hostileRules maps the hostile names to their decoys in the stand-in
// cloud browser, which resolves names itself, as a provider's does.
func hostileRules() string {
	var rules []string
	for n, a := range hostileNames {
		if strings.Contains(a, ":") {
			a = "[" + a + "]"
		}
		rules = append(rules, "MAP "+n+" "+a)
	}
	return hostRules + ", " + strings.Join(rules, ", ")
}

// hostileResolver is the router's resolver: the same map.
func hostileResolver() staticResolver {
	res := testResolverWith(publicHost, "93.184.215.14")
	for n, a := range hostileNames {
		res[n] = addrs(a)
	}
	return res
}

// TestCloudGuardSeesEveryRequest loads a page on the cloud browser that
// requests every decoy (metadata, each private range, loopback; as names
// the router's resolver maps there, as literals, and through a public
// redirect) by every loading method a page has, and records what reached
// the decoys. Without the guard the same page reaches them (the recorder
// works); with it, nothing does, while the page's public subresource
// still loads.
func TestCloudGuardSeesEveryRequest(t *testing.T) {
	requireCloudGuard(t)
	d := inNetns(t)
	if d == nil {
		return
	}
	requireChromium(t)
	var s *site
	s = newSite(t, hostilePages(loadingMethods, func() []string { return hostileTargets(s) }))
	cloud := cloudtest.LaunchChromium(t, "--user-agent="+cloudUA, "--host-resolver-rules="+hostileRules())

	methods := slices.Sorted(maps.Keys(loadingMethods))
	attack := func(ctx context.Context, method string) (int, error) {
		return chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf("attack(%q)", method), chromedp.EvalAwaitPromise))
	}
	// requests is what reached the decoys carrying a request, and contacts
	// the connections that carried none (docs/security.md, Known limits).
	requests := func() (requests []escape, contacts int) {
		for _, e := range d.escapes() {
			if e.connectionOnly() {
				contacts++
				continue
			}
			requests = append(requests, e)
		}
		return requests, contacts
	}

	t.Run("guarded", func(t *testing.T) {
		api := cloudtest.NewServer(t, cloudtest.Browserbase, cloud.WSURL,
			cloudtest.WithAPIKey(testAPIKey), cloudtest.WithProjectID("proj-1"), cloudtest.WithRealShapes())
		logs := &testlog.Buffer{}
		r := newRouter(t, provider.NewBrowserbase(testAPIKey, "proj-1", provider.WithBaseURL(api.URL),
			provider.WithHTTPClient(api.HTTPClient())), logs, WithResolver(hostileResolver()))
		// A fresh page for each method: a refused frame sends the tab to
		// about:blank. The documents, whose refusal fails the call, take
		// turns on one session; the other methods attack side by side, each
		// on a session of its own. What reached the decoys is read once all
		// are over, so a request that arrives late counts as well.
		attackOn := func(t *testing.T, key, m string) {
			// A deadline for each, as on a loaded machine nineteen of
			// them outlast one.
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			res, err := r.Navigate(ctx, key, s.url(publicHost, "/hostile"), nil)
			require.NoError(t, err)
			require.Equal(t, route.Cloud, res.Route)
			var n int
			_, err = r.Exec(ctx, key, "", func(ctx context.Context, call *Call) error {
				var err error
				n, err = attack(ctx, m)
				return err
			})
			if loadsDocument(m) {
				// Documents: the call reports them, as before.
				require.ErrorIs(t, err, netpolicy.ErrMetadata, m)
			} else {
				require.NoError(t, err, m)
			}
			require.Equal(t, len(hostileTargets(s)), n, m)
		}
		for _, m := range methods {
			if loadsDocument(m) {
				attackOn(t, "hostile", m)
			}
		}
		t.Run("methods", func(t *testing.T) {
			for _, m := range methods {
				if !loadsDocument(m) {
					t.Run(m, func(t *testing.T) {
						t.Parallel()
						attackOn(t, "hostile-"+m, m)
					})
				}
			}
		})
		got, contacts := requests()
		assert.Empty(t, got, "requests that reached a decoy from the guarded cloud browser (via= names the method)")
		d.reset()
		require.True(t, s.reached("/public-control.png"), "the page's public subresource did not load")
		t.Logf("guarded: %d requests reached a decoy; %d connections carried none (Chromium's preconnects)", len(got), contacts)
		assert.Positive(t, logs.Count("browser request refused"), "the guard logged no refusal")
		// Each method's attempt, seen by the guard: a method whose requests
		// never left the page (a worker that never started) would pass the
		// check above with nothing to refuse. The control below cannot show
		// this for every method, as a dedicated worker on the unguarded
		// browser may never run.
		for _, m := range methods {
			via := regexp.MustCompile(`via=` + regexp.QuoteMeta(m) + `([^a-z-]|$)`)
			assert.True(t, via.MatchString(logs.String()), "the guard refused no request of %s: it attempted nothing", m)
		}
	})

	t.Run("control without the guard", func(t *testing.T) {
		t.Run("methods", func(t *testing.T) {
			for _, m := range methods {
				t.Run(m, func(t *testing.T) {
					t.Parallel()
					rt, err := connectRemote(testCtx(t), cloud.WSURL, "the unguarded browser", nil)
					require.NoError(t, err)
					defer func() { _ = rt.Close(context.Background()) }()
					require.NoError(t, chromedp.Do(rt.Conn(), chromedp.Navigate(s.url(publicHost, "/hostile"))))
					_, err = attack(rt.Conn(), m)
					require.NoError(t, err)
				})
			}
		})
		got, _ := requests()
		escaped := map[string]bool{}
		for _, e := range got {
			if f := strings.Fields(e.line); len(f) > 1 {
				if u, err := url.Parse(f[1]); err == nil && loadingMethods[u.Query().Get("via")] != "" {
					escaped[u.Query().Get("via")] = true
				}
			}
		}
		t.Logf("without the guard, the requests of %d of %d loading methods reached a decoy", len(escaped), len(methods))
		require.NotEmpty(t, got, "the recorder saw nothing: the test could not see an escape")
	})
}
