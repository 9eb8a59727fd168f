package hybroute

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/floor"
	"github.com/hybroute/hybroute/internal/testlog"
	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/provider"
	"github.com/hybroute/hybroute/route"
)

// Names the grant tests resolve to decoys: a LAN name the calls never
// name, and one a call names.
const (
	lanHost = "lan.test" // 10.0.0.5
	nasHost = "nas.test" // 192.168.1.10
)

func grantResolver() staticResolver {
	res := testResolverWith(publicHost, "93.184.215.14")
	res[otherHost] = addrs("93.184.215.14")
	res[lanHost] = addrs("10.0.0.5")
	res[nasHost] = addrs("192.168.1.10")
	return res
}

// netnsDialer is the egress dialer inside a test's network namespace: a
// public stand-in goes to the test site on 127.0.0.1, anything else is
// dialled as it is, so a private address the egress check let through
// reaches its decoy and is recorded. Nothing leaves the namespace.
func netnsDialer(ctx context.Context, network, addr string) (net.Conn, error) {
	if ap, err := netip.ParseAddrPort(addr); err == nil && slices.Contains(publicStandIns, ap.Addr().Unmap()) {
		addr = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), ap.Port()).String()
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// escapeTargets are the private addresses a page reaches for: loopback
// (v4, v6, by name), one address of each private range (the decoys), and
// LAN names. Each is a base URL the probes add a path to.
var escapeTargets = []string{
	"http://127.0.0.1/", "http://127.0.0.1:8080/", "http://[::1]:8080/", "http://localhost:8080/",
	"http://10.0.0.5/", "http://172.16.0.5:8080/", "http://192.168.1.10/", "http://100.64.0.5/",
	"http://[fd12:3456::5]/", "http://" + lanHost + "/", "http://" + nasHost + ":8080/",
}

// tlsTargets are decoys that listen on 443, for fetches over https (a
// CONNECT tunnel, which carries no request line the decoy could show).
var tlsTargets = []string{"https://127.0.0.1/", "https://10.0.0.5/", "https://192.168.1.10/"}

// probeJS reaches for every target in every way a page can: fetch (GET
// and POST), an image, an iframe and a WebSocket, and fetch over https to
// the tls targets. It settles when
// each has settled or had 5 s, to the list of what the page could reach
// (a no-cors fetch that resolved, an image that loaded, a WebSocket that
// opened); the decoys record any connection either way. tag marks the
// paths, so an escape names the probe it came from.
func probeJS(tag string, targets, tls []string) string {
	quote := func(us []string) string {
		list := make([]string, len(us))
		for i, u := range us {
			list[i] = fmt.Sprintf("%q", u)
		}
		return "[" + strings.Join(list, ", ") + "]"
	}
	return `(async (targets, tls, tag) => {
  const wait = (p) => Promise.race([p, new Promise(r => setTimeout(() => r(""), 5000))]);
  const jobs = [];
  for (const u of targets) {
    jobs.push(fetch(u + tag + "-fetch", {mode: "no-cors"}).then(() => "fetch " + u, () => ""));
    jobs.push(fetch(u + tag + "-post", {mode: "no-cors", method: "POST", body: "x"}).then(() => "post " + u, () => ""));
    jobs.push(new Promise(res => { const i = new Image(); i.onload = () => res("img " + u); i.onerror = () => res(""); i.src = u + tag + "-img"; }));
    jobs.push(new Promise(res => { const f = document.createElement("iframe"); f.onload = () => res(""); f.src = u + tag + "-iframe"; document.body.appendChild(f); }));
    jobs.push(new Promise(res => { const s = new WebSocket(u.replace(/^http/, "ws") + tag + "-ws"); s.onopen = () => { res("ws " + u); s.close(); }; s.onerror = () => res(""); }));
  }
  for (const u of tls) {
    jobs.push(fetch(u + tag + "-tls", {mode: "no-cors"}).then(() => "tls " + u, () => ""));
  }
  return (await Promise.all(jobs.map(wait))).filter(Boolean).join(", ");
})(` + quote(targets) + `, ` + quote(tls) + `, ` + fmt.Sprintf("%q", tag) + `)`
}

// escapesOf are the recorded escapes whose request carried tag (a tunnel,
// which carries a TLS hello, shows as an escape without a line: any such
// counts too).
func escapesOf(d *decoys, tag string) []escape {
	var out []escape
	for _, e := range d.escapes() {
		if strings.Contains(e.line, tag) || !strings.Contains(e.line, " HTTP/") {
			out = append(out, e)
		}
	}
	return out
}

// settle gives requests a page started and abandoned time to arrive
// (or not) at the decoys.
func settle() { time.Sleep(500 * time.Millisecond) }

// grantOptions are the options of the grant tests' routers: the grant
// tests' resolver, and the dialer that lets a wrongly allowed connection
// reach its decoy.
func grantOptions() []Option {
	return []Option{WithResolver(grantResolver()), WithEgressDialer(netnsDialer)}
}

// probeIn runs the probes in the session's tab, on whatever page it is on
// (the run of a call that names no URL: the page stays where it is).
func probeIn(t *testing.T, r *Router, session, tag string, targets, tls []string) string {
	t.Helper()
	var got string
	_, err := r.Exec(testCtx(t), session, `probe()`, func(ctx context.Context, call *Call) error {
		var err error
		got, err = chromedp.Run(ctx, chromedp.Evaluate[string](probeJS(tag, targets, tls), chromedp.EvalAwaitPromise))
		return err
	})
	require.NoError(t, err)
	settle()
	return got
}

// TestGrantPublicPagesReachNoPrivateAddress: a public page on the local
// browser, however it got there (a URL with a token on a hybrid router, a
// cloud session's fallback, a router with no cloud, a link from a granted
// page), reaches for loopback and the LAN in every way a page can, inside
// a network namespace whose decoys record every connection: none arrives,
// the page reads nothing, and the egress check logs its refusals. A page
// on a granted host reaches the decoys its grant covers, and they are
// recorded: the harness would see an escape.
func TestGrantPublicPagesReachNoPrivateAddress(t *testing.T) {
	d := inNetns(t)
	if d == nil {
		return
	}
	requireChromium(t)
	s := newProbeSite(t)
	api := cloudtest.NewServer(t, cloudtest.Browserbase, "ws://127.0.0.1:1/devtools/browser/none",
		cloudtest.WithAPIKey(testAPIKey), cloudtest.WithProjectID("proj-1"))
	hybridLogs := &testlog.Buffer{}
	hybrid := newRouter(t, provider.NewBrowserbase(testAPIKey, "proj-1", provider.WithBaseURL(api.URL)), hybridLogs, grantOptions()...)

	t.Run("a URL with a token", func(t *testing.T) {
		d.reset()
		ctx := testCtx(t)
		res, err := hybrid.Navigate(ctx, "token", s.url(publicHost, "/next?token=1"), nil)
		require.NoError(t, err)
		require.Equal(t, route.Local, res.Route, "the token kept the page off the cloud")
		assert.Equal(t, "", probeIn(t, hybrid, "token", "token", escapeTargets, tlsTargets), "the page reached nothing")
		assert.Empty(t, escapesOf(d, "token"))
	})

	t.Run("a link from a granted page", func(t *testing.T) {
		d.reset()
		ctx := testCtx(t)
		_, err := hybrid.Navigate(ctx, "link", s.url("localhost", "/app"), nil)
		require.NoError(t, err)
		// The page goes on by itself (a call that names no URL): the
		// grant ends as the public document starts to load.
		public := s.url(publicHost, "/evil")
		_, err = hybrid.Exec(ctx, "link", `click()`, func(ctx context.Context, call *Call) error {
			_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`setTimeout(() => { location.href = %q }, 0), true`, public)))
			if err != nil {
				return err
			}
			// Until the public page is loaded; an evaluation that meets
			// the navigation half-way fails, and is asked again.
			for ctx.Err() == nil {
				at, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + " " + document.readyState`))
				if err == nil && at == public+" complete" {
					return nil
				}
				time.Sleep(50 * time.Millisecond)
			}
			return ctx.Err()
		})
		require.NoError(t, err)
		assert.Equal(t, "", probeIn(t, hybrid, "link", "link", append([]string{s.url("localhost", "/")}, escapeTargets...), tlsTargets))
		assert.Empty(t, escapesOf(d, "link"))
		assert.False(t, s.reached("/link-fetch"), "the granted host is out of reach of the public page")
	})

	t.Run("a fallback", func(t *testing.T) {
		d.reset()
		api.OnCreate(cloudtest.RateLimited("17"))
		res, err := hybrid.Navigate(testCtx(t), "fallback", s.url(publicHost, "/fallback"), nil)
		require.NoError(t, err)
		require.True(t, res.FallbackFromCloud)
		assert.Equal(t, "", probeIn(t, hybrid, "fallback", "fallback", escapeTargets, tlsTargets))
		assert.Empty(t, escapesOf(d, "fallback"))
	})

	t.Run("no cloud", func(t *testing.T) {
		d.reset()
		logs := &testlog.Buffer{}
		local := newRouter(t, nil, logs, grantOptions()...)
		ctx := testCtx(t)
		_, err := local.Navigate(ctx, "public", s.url(publicHost, "/plain"), nil)
		require.NoError(t, err)
		assert.Equal(t, "", probeIn(t, local, "public", "plain", escapeTargets, tlsTargets))
		assert.Empty(t, escapesOf(d, "plain"))

		// The control: a page on a host the call named reaches the
		// decoys the grant covers, and the decoys record it.
		d.reset()
		_, err = local.Exec(testCtx(t), "granted", `goto("`+s.url("localhost", "/granted")+`"); fetch("http://10.0.0.5/")`,
			func(ctx context.Context, call *Call) error {
				return chromedp.Do(ctx, chromedp.Navigate(s.url("localhost", "/granted")))
			})
		require.NoError(t, err)
		got := probeIn(t, local, "granted", "control", []string{"http://10.0.0.5/", "http://127.0.0.1:8080/"}, nil)
		assert.Contains(t, got, "fetch http://10.0.0.5/", "the granted page reads the granted address")
		assert.NotEmpty(t, escapesOf(d, "control"), "a connection the check lets through is recorded")
	})

	for _, h := range []string{"10.0.0.5", "192.168.1.10", "127.0.0.1", "localhost", lanHost} {
		assert.Contains(t, hybridLogs.String(), "host="+h+" class=private reason=private_not_named",
			"the egress check refused %s itself (Chromium did not stop the request before)", h)
	}
}

// TestGrantCoversOnlyWhatTheCallNamed: the grant is the hosts a call
// named, one session's: a session granted one private host reaches no
// other (not a LAN name that resolves to a granted address either), and
// another session, on a public page or granted something else, reaches
// none of it. Inside a network namespace, with the escapes recorded.
func TestGrantCoversOnlyWhatTheCallNamed(t *testing.T) {
	d := inNetns(t)
	if d == nil {
		return
	}
	requireChromium(t)
	s := newProbeSite(t)
	logs := &testlog.Buffer{}
	r := newRouter(t, nil, logs, grantOptions()...)
	open := func(session, page, code string) {
		t.Helper()
		_, err := r.Exec(testCtx(t), session, code, func(ctx context.Context, call *Call) error { return chromedp.Do(ctx, chromedp.Navigate(page)) })
		require.NoError(t, err)
	}
	others := []string{"http://192.168.1.10/", "http://172.16.0.5:8080/", "http://[fd12:3456::5]/", "http://" + lanHost + "/",
		"http://127.0.0.1:8080/", "http://localhost:8080/", "http://100.64.0.5/"}

	// Session a names nas.test (192.168.1.10) and its page is on it.
	d.reset()
	open("a", "http://"+nasHost+":8080/a-page", `goto("http://`+nasHost+`:8080/a-page")`)
	got := probeIn(t, r, "a", "a-other", append([]string{"http://10.0.0.5/"}, others[1:]...), []string{"https://10.0.0.5/", "https://127.0.0.1/"})
	assert.Equal(t, "", got, "session a reaches no host it did not name")
	assert.Empty(t, escapesOf(d, "a-other"), "session a reaches no host it did not name")
	assert.Contains(t, probeIn(t, r, "a", "a-own", []string{"http://" + nasHost + ":8080/", "http://192.168.1.10/"}, nil),
		"fetch http://192.168.1.10/", "the address its named host had is granted too, on any port")

	// Session b, on a public page, and session c, granted localhost:
	// neither reaches what a was granted, while a still does.
	open("b", s.url(publicHost, "/b-page"), `goto("`+s.url(publicHost, "/b-page")+`")`)
	open("c", s.url("localhost", "/c-page"), `goto("`+s.url("localhost", "/c-page")+`")`)
	for _, session := range []string{"b", "c"} {
		d.reset()
		tag := session + "-cross"
		assert.Equal(t, "", probeIn(t, r, session, tag, []string{"http://" + nasHost + ":8080/", "http://192.168.1.10/"}, []string{"https://192.168.1.10/"}))
		assert.Empty(t, escapesOf(d, tag), "another session's grant does not reach %s", session)
	}
	assert.Contains(t, probeIn(t, r, "a", "a-still", []string{"http://192.168.1.10/"}, nil), "fetch http://192.168.1.10/",
		"a's grant is a's, untouched by the others' calls")
	assert.Contains(t, probeIn(t, r, "c", "c-own", []string{s.url("localhost", "/")}, nil), "fetch "+s.url("localhost", "/"))

	// A call of a that names a public page takes the grant away.
	open("a", s.url(publicHost, "/a-public"), `goto("`+s.url(publicHost, "/a-public")+`")`)
	d.reset()
	assert.Equal(t, "", probeIn(t, r, "a", "a-after", []string{"http://192.168.1.10/", "http://" + nasHost + ":8080/"}, []string{"https://192.168.1.10/"}))
	assert.Empty(t, escapesOf(d, "a-after"))
}

// TestGrantMixedCallKeepsItsLocalhost: the job the sidecar exists for still works on a
// hybrid router with the grants: a call that mixes http://localhost:PORT
// and a public URL runs wholly local, the page on localhost reaches its
// own server, and so do the calls after it that name no URL. Then a call
// that sends the same local session to a public page with a token takes
// localhost out of its reach.
func TestGrantMixedCallKeepsItsLocalhost(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	s := newSite(t, func(mux *http.ServeMux, _ *site) {
		mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"revenue":42}`)
		})
	})
	api := cloudtest.NewServer(t, cloudtest.Browserbase, "ws://127.0.0.1:1/devtools/browser/none",
		cloudtest.WithAPIKey(testAPIKey), cloudtest.WithProjectID("proj-1"))
	logs := &testlog.Buffer{}
	r := newRouter(t, provider.NewBrowserbase(testAPIKey, "proj-1", provider.WithBaseURL(api.URL)), logs,
		WithResolver(grantResolver()))
	ctx := testCtx(t)
	app := s.url("localhost", "/")
	read := func(path string) (string, error) {
		var got string
		_, err := r.Exec(ctx, "dev", `read()`, func(ctx context.Context, call *Call) error {
			var err error
			got, err = chromedp.Run(ctx, chromedp.Evaluate[string](
				fmt.Sprintf(`fetch(%q).then(r => r.text(), e => "network error: " + e)`, path), chromedp.EvalAwaitPromise))
			return err
		})
		return got, err
	}

	var got string
	res, err := r.Exec(ctx, "dev", `await page.goto("`+app+`"); await fetch("https://`+publicHost+`/cdn.js")`,
		func(ctx context.Context, call *Call) error {
			if err := chromedp.Do(ctx, chromedp.Navigate(app)); err != nil {
				return err
			}
			var err error
			got, err = chromedp.Run(ctx, chromedp.Evaluate[string](`fetch("/api/sales").then(r => r.text())`, chromedp.EvalAwaitPromise))
			return err
		})
	require.NoError(t, err)
	assert.Equal(t, route.Local, res.Route, "a mixed call runs wholly local")
	assert.Equal(t, "dev"+LocalSuffix, res.CacheKey)
	assert.Equal(t, `{"revenue":42}`, got, "the page on localhost reads its own API")
	assert.Zero(t, api.Creates(), "nothing went to the cloud")

	got, err = read("/api/next")
	require.NoError(t, err)
	assert.Equal(t, `{"revenue":42}`, got, "a call that names no URL keeps the grant")

	// The same local session goes to a public page with a token: its
	// page is public now, and localhost is out of its reach.
	res, err = r.Navigate(ctx, "dev", s.url(publicHost, "/next?token=1"), nil)
	require.NoError(t, err)
	require.Equal(t, "dev"+LocalSuffix, res.CacheKey)
	got, err = read(s.url("localhost", "/api/after"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(got, "network error"), "the public page read %q", got)
	assert.False(t, s.reached("/api/after"))
	assert.Contains(t, logs.String(), "reason=private_not_named")
}

// The grant a call earns, without a browser.
func TestGrantOf(t *testing.T) {
	t.Parallel()
	pol := testPolicy(grantResolver(), true)
	verdicts := func(urls ...string) []netpolicy.Verdict {
		vs := make([]netpolicy.Verdict, len(urls))
		for i, u := range urls {
			vs[i] = pol.Classify(context.Background(), u)
			vs[i].Err = pol.RefuseLiteral(vs[i])
		}
		return vs
	}
	g, names := floor.GrantOf(verdicts("http://localhost:3000/", "https://"+publicHost+"/"))
	require.True(t, names)
	assert.True(t, g.Covers("localhost", nil), "the private host the call named")
	assert.True(t, g.Covers("127.0.0.1", addrs("127.0.0.1")), "and the addresses localhost has")
	assert.True(t, g.Covers("[::1]", addrs("::1")))
	assert.False(t, g.Covers("10.0.0.5", addrs("10.0.0.5")))
	assert.False(t, g.Covers(publicHost, addrs("93.184.215.14")), "a public host the call named is not granted")
	assert.False(t, g.CoversURL("https://"+publicHost+"/"), "a public page is not within the grant")

	g, names = floor.GrantOf(verdicts("http://" + nasHost + "/"))
	require.True(t, names)
	assert.True(t, g.Covers(nasHost, addrs("192.168.1.10")))
	assert.True(t, g.Covers("192.168.1.10", addrs("192.168.1.10")), "the address the name had in the plan")
	assert.False(t, g.Covers(lanHost, addrs("10.0.0.5")))

	g, names = floor.GrantOf(verdicts("https://" + publicHost + "/?token=1"))
	assert.True(t, names, "a public call names a target")
	assert.True(t, g.Empty(), "and grants nothing")
	_, names = floor.GrantOf(append(verdicts("about:blank", "data:text/html,x"), netpolicy.Verdict{URL: "file:///etc/hosts", Class: netpolicy.ClassPrivate}))
	assert.False(t, names, "a call that names no network target keeps the grant it had")
	g, _ = floor.GrantOf(verdicts("http://169.254.169.254/"))
	assert.True(t, g.Empty(), "metadata is never granted")
}
