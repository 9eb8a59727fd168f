package hybroute

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
)

// lnaTableEnv runs TestLocalNetworkAccessTable: it takes a minute or more
// a browser, so it is a measurement (make lna-table), not part of the suite.
const lnaTableEnv = "HYBROUTE_LNA_TABLE"

// lnaMinMajor is the first major whose check refused everything the table
// probes (138 takes the permission and refuses nothing).
const lnaMinMajor = 148

// lnaPublicAddr is a public address put on lo inside the namespace: a page
// served from it is a public page to the browser, as a cloud page is.
const lnaPublicAddr = "93.184.215.14"

// lnaExtraMethods are the ways beyond loadingMethods that the table probes:
// a WebSocket, and a service worker that fetches the URL while it installs.
var lnaExtraMethods = map[string]string{
	"websocket": `new Promise(r => { let w; try { w = new WebSocket(u.replace(/^http/, "ws")); } catch (_) { return r(); } w.onopen = w.onerror = () => { w.close(); r(); }; })`,
	"sw-fetch": `!navigator.serviceWorker ? Promise.resolve() : navigator.serviceWorker.register("/lna-sw.js?u=" + encodeURIComponent(u), {scope: "/sw-" + Math.random().toString(36).slice(2) + "/"}).then(g => new Promise(r => {
  const w = g.installing || g.waiting || g.active; if (!w || w.state !== "installing") return r();
  w.onstatechange = () => { if (w.state !== "installing") r(); }; }))`,
}

// lnaSetup is one way of serving the hostile page to a browser whose
// sessions' contexts deny the localNetworkAccess permission.
type lnaSetup struct {
	name string
	// addr is where the page is served from: lnaPublicAddr, or loopback
	// (as every other escape test serves its "public" site).
	addr string
	// csp adds "Content-Security-Policy: treat-as-public-address" to
	// every response of the site: the page, its workers' scripts.
	csp bool
	// secure makes the page a secure context (as an https page is).
	secure bool
	// deny sets the permission to denied for the context; false leaves
	// the browser's default (a headless browser asks no one).
	deny bool
}

var lnaSetups = []lnaSetup{
	{name: "public, secure, denied", addr: lnaPublicAddr, secure: true, deny: true},
	{name: "public, insecure, denied", addr: lnaPublicAddr, deny: true},
	{name: "loopback+treat-as-public, secure, denied", addr: "127.0.0.1", csp: true, secure: true, deny: true},
	{name: "loopback+treat-as-public, insecure, denied", addr: "127.0.0.1", csp: true, deny: true},
	{name: "loopback, secure, denied (control)", addr: "127.0.0.1", secure: true, deny: true},
	{name: "public, secure, default", addr: lnaPublicAddr, secure: true},
}

// TestLocalNetworkAccessTable measures what Chromium's own Local Network
// Access check refuses, per setup, on the browser under test (CHROMIUM):
// the page /hostile loads every hostile target (metadata, each private
// range, loopback; by name, by literal, through a public redirect) by
// every loading method of TestCloudGuardSeesEveryRequest, a WebSocket and a
// service worker, with no guard at all, in the network namespace with the
// decoys. It prints one line per setup and method: the decoys reached.
// What it asserts is what a guard that left the floor to the browser's
// check would rely on (docs/decisions, 2026-12-06), on the majors that
// have it: with the
// permission denied, a public page reaches no decoy by any method; and the
// control (a loopback page, which the check lets reach anything) shows the
// recorder hears what gets through. HYBROUTE_LNA_SETUPS and
// HYBROUTE_LNA_METHODS narrow a run to the setups and methods they name.
func TestLocalNetworkAccessTable(t *testing.T) {
	if os.Getenv(lnaTableEnv) == "" {
		t.Skipf("skipping: a measurement; set %s=1 (make lna-table)", lnaTableEnv)
	}
	d := inNetns(t)
	if d == nil {
		return
	}
	requireChromium(t)
	out, err := exec.Command("ip", "addr", "add", lnaPublicAddr+"/32", "dev", "lo").CombinedOutput()
	require.NoError(t, err, "%s", out)
	methods := maps.Clone(loadingMethods)
	maps.Copy(methods, lnaExtraMethods)
	names := slices.Sorted(maps.Keys(methods))
	var table []string
	if only := os.Getenv("HYBROUTE_LNA_METHODS"); only != "" {
		names = strings.Split(only, ",")
		for _, n := range names {
			// An unknown name would probe nothing and read as refused.
			require.Contains(t, methods, n, "HYBROUTE_LNA_METHODS names no method")
		}
	}
	for _, st := range lnaSetups {
		if only := os.Getenv("HYBROUTE_LNA_SETUPS"); only != "" && !slices.Contains(strings.Split(only, "|"), st.name) {
			continue
		}
		t.Run(st.name, func(t *testing.T) {
			got, perms := lnaProbe(t, d, st, methods, names)
			table = append(table, fmt.Sprintf("%s [permission names taken: %s]", st.name, perms))
			reached := 0
			for _, m := range names {
				table = append(table, fmt.Sprintf("  %-14s %s", m, got[m]))
				if got[m] != "-" {
					reached++
				}
			}
			// What a guard that left the floor to the check relies on, on
			// the majors that have it: with the permission denied, a public page,
			// or one treat-as-public-address makes public, reaches nothing.
			if (st.csp || st.addr == lnaPublicAddr) && st.deny && testMajor() >= lnaMinMajor {
				require.Zero(t, reached, "with the permission denied, a public page reached decoys on Chromium %d", testMajor())
			}
			if st.addr != lnaPublicAddr && !st.csp {
				require.NotZero(t, reached, "the control reached no decoy: the recorder would not see an escape")
			}
		})
	}
	t.Logf("Local Network Access on Chromium %d (%s):\n%s", testMajor(), os.Getenv("CHROMIUM"), strings.Join(table, "\n"))
}

// lnaProbe runs every method of one setup on a fresh browser and returns,
// per method, the decoys its requests reached ("-": none), and the
// permission names Browser.setPermission took.
func lnaProbe(t *testing.T, d *decoys, st lnaSetup, methods map[string]string, names []string) (map[string]string, string) {
	s := &site{}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if to, ok := strings.CutPrefix(r.URL.Path, "/redirect-to/"); ok {
			if r.URL.RawQuery != "" {
				to += "?" + r.URL.RawQuery
			}
			http.Redirect(w, r, "http://"+to, http.StatusFound)
			return
		}
		http.NotFound(w, r)
	})
	hostilePages(methods, func() []string { return hostileTargets(s) })(mux, s)
	mux.HandleFunc("/lna-sw.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, `const u = new URL(location).searchParams.get("u");
addEventListener("install", e => e.waitUntil(fetch(u, {mode: "no-cors"}).catch(() => {})));`)
	})
	l, err := net.Listen("tcp", net.JoinHostPort(st.addr, "0"))
	require.NoError(t, err)
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if st.csp {
			w.Header().Set("Content-Security-Policy", "treat-as-public-address")
		}
		mux.ServeHTTP(w, r)
	}))
	s.Listener = l
	s.Start()
	t.Cleanup(s.Close)
	_, s.port, _ = net.SplitHostPort(l.Addr().String())

	rules := strings.Replace(hostileRules(), "MAP "+publicHost+" 127.0.0.1", "MAP "+publicHost+" "+st.addr, 1)
	flags := []string{"--user-agent=" + cloudUA, "--host-resolver-rules=" + rules}
	if st.secure {
		flags = append(flags, "--unsafely-treat-insecure-origin-as-secure="+s.url(publicHost, ""))
	}
	cloud := cloudtest.LaunchChromium(t, flags...)
	var mu sync.Mutex
	var perms []string
	d.reset()
	var wg sync.WaitGroup
	turn := make(chan struct{}, 4) // more at once starved a loaded machine
	for _, m := range names {
		wg.Go(func() {
			turn <- struct{}{}
			defer func() { <-turn }()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			rt, err := connectRemote(ctx, cloud.WSURL, "the probed browser", nil)
			if err != nil {
				t.Errorf("%s: %v", m, err)
				return
			}
			defer func() { _ = rt.Close(context.Background()) }()
			c := chromedp.FromContext(rt.Conn())
			var taken []string
			for _, n := range lnaPermissionNames {
				if !st.deny {
					break
				}
				_, err := cdp.Call(ctx, c.Browser, browser.SetPermission, browser.SetPermissionParams{
					Permission: &browser.PermissionDescriptor{Name: n}, Setting: browser.PermissionSettingDenied,
					BrowserContextID: rt.BrowserContextID()})
				if err == nil {
					taken = append(taken, n)
				}
			}
			mu.Lock()
			perms = taken
			mu.Unlock()
			if err := chromedp.Do(rt.Conn(), chromedp.Navigate(s.url(publicHost, "/hostile"))); err != nil {
				t.Errorf("%s: %v", m, err)
				return
			}
			if _, err := chromedp.Run(rt.Conn(), chromedp.Evaluate[int](fmt.Sprintf("attack(%q)", m), chromedp.EvalAwaitPromise)); err != nil {
				// A method that did not run measured nothing: not a refusal.
				t.Errorf("%s: the attack did not run: %v", m, err)
			}
		})
	}
	wg.Wait()
	got := map[string]map[string]bool{}
	for _, e := range d.escapes() {
		f := strings.Fields(e.line)
		if len(f) < 2 {
			continue // a preconnect: no request
		}
		u, err := url.Parse(f[1])
		if err != nil {
			continue
		}
		m := u.Query().Get("via")
		if got[m] == nil {
			got[m] = map[string]bool{}
		}
		a := e.addr
		if f[0] != "GET" && f[0] != "POST" {
			a += "(" + f[0] + ")"
		}
		got[m][a] = true
	}
	res := map[string]string{}
	for _, m := range names {
		if len(got[m]) == 0 {
			res[m] = "-"
			continue
		}
		res[m] = strings.Join(slices.Sorted(maps.Keys(got[m])), " ")
	}
	return res, strings.Join(perms, ",")
}

// lnaPermissionNames are the names Chromium has given the permission:
// local-network-access, then split into local-network and loopback-network.
var lnaPermissionNames = []string{"local-network-access", "local-network", "loopback-network"}
