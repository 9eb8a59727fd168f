package hybroute

import (
	"context"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/egress"
	"github.com/hybroute/hybroute/internal/floor"
	"github.com/hybroute/hybroute/internal/testlog"
	"github.com/hybroute/hybroute/netpolicy"
)

// The names of the egress tests. The resolver calls imds.test metadata and
// rebind.test a mix of a public and a metadata address; b.test is another
// public site (a cross-site frame). The browsers never resolve anything:
// every connection goes through the egress proxy, which asks this resolver.
const (
	imdsHost   = "imds.test"
	popupHost  = "imds-popup.test" // its own name, so its one warning shows the popup was decided
	rebindHost = "rebind.test"
	otherHost  = "b.test"
)

// bypassCatcher maps every name of these tests to the probe site in
// Chromium's own resolver too: should Chromium ever connect without the
// proxy, the refused requests would reach the site and the tests fail.
var bypassCatcher = map[string]any{"host-resolver-rules": hostRules +
	", MAP " + imdsHost + " 127.0.0.1, MAP " + popupHost + " 127.0.0.1, MAP " + rebindHost + " 127.0.0.1, MAP " + otherHost + " 127.0.0.1"}

func egressResolver() staticResolver {
	res := testResolverWith(publicHost, "93.184.215.14")
	res[imdsHost] = addrs("169.254.169.254")
	res[popupHost] = addrs("169.254.169.254")
	res[rebindHost] = addrs("93.184.215.14", "169.254.169.254")
	res[otherHost] = addrs("93.184.215.14")
	return res
}

// probeSite is the test site with the egress tests' pages: a parent that
// frames another site, a frame that fetches the metadata name, and a
// WebSocket endpoint.
type probeSite = site

func newProbeSite(t testing.TB) *probeSite { return newSite(t, probeRoutes) }

func probeRoutes(mux *http.ServeMux, s *site) {
	// /parent frames /inner of another site; the frame reports what its
	// fetch of the metadata name did.
	mux.HandleFunc("/parent", func(w http.ResponseWriter, r *http.Request) {
		servePage(w, "parent", net.JoinHostPort(otherHost, s.port))
	})
	mux.HandleFunc("/inner", func(w http.ResponseWriter, r *http.Request) {
		servePage(w, "inner", net.JoinHostPort(imdsHost, s.port))
	})
	// /ws is a WebSocket endpoint that only opens (enough for onopen).
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Sec-WebSocket-Key")
		if key == "" {
			http.Error(w, "not a websocket", http.StatusBadRequest)
			return
		}
		sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n",
			base64.StdEncoding.EncodeToString(sum[:]))
		_ = brw.Flush()
		_, _ = io.Copy(io.Discard, c) // until the browser goes
	})
}

// Scripts the page runs. Each settles to "reached"/"open" or to a string
// that starts with "network error". A fetch is no-cors, so that a response
// of any status (a 403 too) would count as reached: only a failure of the
// connection itself says "network error".
func fetchJS(u string) string {
	return fmt.Sprintf(`fetch(%q, {mode: "no-cors"}).then(() => "reached", e => "network error: " + e)`, u)
}

func webSocketJS(u string) string {
	return fmt.Sprintf(`new Promise(res => {
  const s = new WebSocket(%q);
  s.onopen = () => { res("open"); s.close(); };
  s.onerror = () => res("network error");
})`, u)
}

// evalIn runs js in the session's tab, after opening page there.
func evalIn(t *testing.T, r *Router, session, page, js string) string {
	t.Helper()
	var got string
	_, err := r.Exec(testCtx(t), session, `await page.goto("`+page+`")`, func(ctx context.Context, call *Call) error {
		if err := chromedp.Do(ctx, chromedp.Navigate(page)); err != nil {
			return err
		}
		var err error
		got, err = chromedp.Run(ctx, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
		return err
	})
	require.NoError(t, err)
	return got
}

// TestEgressRefusesWhatURLsCannotShow: a router with no provider (all
// local); pages reach for the metadata service in ways no URL literal of
// the call shows and the in-browser guard does not see. Each is refused at
// connect time: the server never sees the request and the page sees a
// network error.
func TestEgressRefusesWhatURLsCannotShow(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	s := newProbeSite(t)
	logs := &testlog.Buffer{}
	r := newRouter(t, nil, logs, WithResolver(egressResolver()), WithChromiumFlags(bypassCatcher))
	page := s.url(publicHost, "/start")

	t.Run("fetch from a page", func(t *testing.T) {
		got := evalIn(t, r, "fetch", page, fetchJS(s.url(imdsHost, "/imds-fetch")))
		assert.True(t, strings.HasPrefix(got, "network error"), "the page saw %q", got)
		assert.False(t, s.reached("/imds-fetch"))
	})
	t.Run("websocket", func(t *testing.T) {
		got := evalIn(t, r, "ws", page, webSocketJS("ws://"+net.JoinHostPort(imdsHost, s.port)+"/imds-ws"))
		assert.Equal(t, "network error", got)
		assert.False(t, s.reached("/imds-ws"))
	})
	t.Run("popup", func(t *testing.T) {
		var got string
		_, err := r.Exec(testCtx(t), "popup", `await page.goto("`+page+`")`, func(ctx context.Context, call *Call) error {
			if err := chromedp.Do(ctx, chromedp.Navigate(page)); err != nil {
				return err
			}
			var err error
			got, err = chromedp.Run(ctx, chromedp.Evaluate[string](`new Promise(res => {
  const w = window.open(`+fmt.Sprintf("%q", s.url(popupHost, "/imds-popup"))+`);
  res(w ? "opened" : "no window");
})`, chromedp.EvalAwaitPromise))
			return err
		})
		// The guard pauses every target's requests: when it refuses the
		// popup's load before the call ends, the call fails naming the
		// popup; later, the refusal is only logged. Either way the load is
		// decided (by the guard, or at the latest by the egress check) and
		// never reaches the server.
		if err != nil {
			require.ErrorIs(t, err, netpolicy.ErrMetadata)
			assert.Contains(t, err.Error(), "popup")
		} else {
			require.Equal(t, "opened", got)
		}
		require.Eventually(t, func() bool { return logs.Count(popupHost) > 0 },
			60*time.Second, 20*time.Millisecond, "the popup's connection was never decided")
		time.Sleep(200 * time.Millisecond)
		assert.False(t, s.reached("/imds-popup"))
	})
	t.Run("cross-site iframe", func(t *testing.T) {
		got := evalIn(t, r, "iframe", s.url(publicHost, "/parent"), `window.got`)
		assert.True(t, strings.HasPrefix(got, "network error"), "the frame saw %q", got)
		assert.True(t, s.reached("/inner"), "the frame itself loaded")
		assert.False(t, s.reached("/imds-iframe"))
	})
	t.Run("name mixing a public and a metadata answer", func(t *testing.T) {
		got := evalIn(t, r, "rebind", page, fetchJS(s.url(rebindHost, "/rebind")))
		assert.True(t, strings.HasPrefix(got, "network error"), "the page saw %q", got)
		assert.False(t, s.reached("/rebind"))
	})
	t.Run("the proxy still carries allowed traffic after refusals", func(t *testing.T) {
		assert.Equal(t, "reached", evalIn(t, r, "fetch", page, fetchJS(s.url(otherHost, "/after"))))
		assert.True(t, s.reached("/after"))
	})
	assert.Empty(t, s.hitsFor(imdsHost), "nothing under the metadata name reached the server")
	assert.Empty(t, s.hitsFor(popupHost))
	assert.Empty(t, s.hitsFor(rebindHost))
	assert.Contains(t, logs.String(), "hybroute: egress refused")
	assert.Contains(t, logs.String(), "class=metadata")
	assert.Equal(t, 1, logs.Count(`msg="hybroute: egress refused" host=`+imdsHost+" "),
		"one warning for the refused host, however often it was refused")
}

// TestEgressCarriesAllowedTraffic: public and private (localhost) loads
// and a WebSocket all work through the proxy, the private ones for the
// session whose call named localhost.
func TestEgressCarriesAllowedTraffic(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	s := newProbeSite(t)
	logs := &testlog.Buffer{}
	r := newRouter(t, nil, logs, WithResolver(egressResolver()))
	ctx := testCtx(t)
	for _, u := range []string{s.url(publicHost, "/public"), s.url("localhost", "/localhost"), s.url("127.0.0.1", "/literal")} {
		res, err := r.Navigate(ctx, "s", u, nil)
		require.NoError(t, err, u)
		assert.Equal(t, u, res.LandedURL)
		p := u[strings.LastIndexByte(u, '/'):]
		assert.True(t, s.reached(p), "%s reached the server", u)
	}
	assert.Equal(t, "reached", evalIn(t, r, "s", s.url("localhost", "/a"), fetchJS(s.url("localhost", "/fetched"))))
	assert.True(t, s.reached("/fetched"))
	assert.Equal(t, "reached", evalIn(t, r, "s", s.url(publicHost, "/b"), fetchJS(s.url(otherHost, "/public-fetched"))))
	assert.True(t, s.reached("/public-fetched"))
	assert.Equal(t, "open", evalIn(t, r, "s", s.url("localhost", "/c"),
		webSocketJS("ws://"+net.JoinHostPort("localhost", s.port)+"/ws")), "a WebSocket goes through the tunnel")
	// A late request of a localhost page (its icon) after the call that
	// sent the session to a public page is refused: only that is.
	assert.NotContains(t, logs.String(), "class=metadata")
	assert.NotContains(t, logs.String(), "host="+publicHost)
	for _, h := range s.hitsFor(publicHost) {
		assert.Equal(t, localUA, h.ua, "the request came from the local browser, through the proxy")
	}
}

// TestEgressStrictFallbackRefusesPrivate: auto-local off and a provider
// that answers 429, so the session falls back to local Chromium. Private
// addresses are not allowed there, and a URL built at run time does not
// get around it: the connection is refused when it is made.
func TestEgressStrictFallbackRefusesPrivate(t *testing.T) {
	t.Parallel()
	w := newWorld(t, cloudtest.Browserbase, WithAutoLocalForPrivateURLs(false))
	w.api.OnCreate(cloudtest.RateLimited("17"))
	page := w.site.url(publicHost, "/strict-page")
	target := "http://" + "127.0.0.1:" + w.site.port + "/strict-secret"
	var got string
	res, err := w.r.Exec(testCtx(t), "s", `await page.goto("`+page+`")`, func(ctx context.Context, call *Call) error {
		if err := chromedp.Do(ctx, chromedp.Navigate(page)); err != nil {
			return err
		}
		var err error
		got, err = chromedp.Run(ctx, chromedp.Evaluate[string](fetchJS(target), chromedp.EvalAwaitPromise))
		return err
	})
	require.NoError(t, err)
	assert.True(t, res.FallbackFromCloud)
	assert.Equal(t, localUA, w.site.uaOf("/strict-page"), "the public page loaded on the local fallback")
	assert.True(t, strings.HasPrefix(got, "network error"), "the page saw %q", got)
	assert.Empty(t, w.site.uaOf("/strict-secret"), "the private address was never reached")
	assert.Contains(t, w.logs.String(), "class=private")
}

// TestEgressProxyCannotBeRemoved: no flag takes the proxy away, and the
// running Chromium has it.
func TestEgressProxyCannotBeRemoved(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	for _, f := range []map[string]any{
		{"proxy-server": false},
		{"proxy-server": "direct://"},
		{"proxy-bypass-list": "*"},
		{"no-proxy-server": true},
		{"proxy-pac-url": "data:,function FindProxyForURL(){return 'DIRECT'}"},
		{"proxy-auto-detect": true},
		{"disable-quic": false},
		{"enable-quic": true},
		{"force-webrtc-ip-handling-policy": "default"},
		// chromedp writes the key verbatim: a value smuggled in the key
		// must not get past the check.
		{"proxy-bypass-list=imds.test": true},
		{"proxy-server=direct://": true},
		{"remote-debugging-port=9222": true},
		{"Proxy-Server": "direct://"},
		{"--proxy-server": "direct://"},
	} {
		s := newTestSidecar(t, WithChromiumFlags(f))
		_, err := s.Open(testCtx(t), "k")
		require.Error(t, err, "%v", f)
		assert.Regexp(t, "managed by the sidecar|a flag name is", err.Error(), "%v", f)
		assert.Zero(t, s.Starts()-1, "one attempt, no Chromium left running")
		assert.False(t, s.Alive())
	}

	s := newTestSidecar(t)
	_, err := s.Open(testCtx(t), "k")
	require.NoError(t, err)
	args := cmdline(currentProc(t, s).PID())
	var proxy string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--proxy-server="); ok {
			proxy = v
		}
	}
	require.True(t, strings.HasPrefix(proxy, "http://127.0.0.1:"), "flags: %v", args)
	assert.Contains(t, args, "--force-webrtc-ip-handling-policy=disable_non_proxied_udp", "WebRTC UDP cannot go around the proxy")
	assert.Contains(t, args, "--proxy-bypass-list=<-loopback>")
	assert.Contains(t, args, "--disable-quic")
	assert.Equal(t, "http://"+currentProc(t, s).Egress().Addr(), proxy)
}

// The decision itself, without a browser.
func TestDecideEgress(t *testing.T) {
	t.Parallel()
	res := egressResolver()
	res["lan.test"] = addrs("192.168.1.9")
	res["mixed.test"] = addrs("93.184.215.14", "10.0.0.5")
	res["v6.test"] = addrs("2606:2800:21f:cb07:6820:80da:af6b:8b2c")
	rows := []struct {
		rule      string
		hostport  string
		privateOK bool
		want      netpolicy.Class
		dial      []netip.Addr // nil: refused
		reason    error        // the sentinel of a refusal; nil for "does not resolve"
	}{
		{"public IP literal: dialled as is, no lookup", "93.184.215.14:443", false, netpolicy.ClassPublic, addrs("93.184.215.14"), nil},
		{"public name: its answers are dialled", publicHost + ":80", false, netpolicy.ClassPublic, addrs("93.184.215.14"), nil},
		{"public IPv6 name", "v6.test:443", false, netpolicy.ClassPublic, addrs("2606:2800:21f:cb07:6820:80da:af6b:8b2c"), nil},
		{"metadata IP literal: refused always", "169.254.169.254:80", true, netpolicy.ClassMetadata, nil, netpolicy.ErrMetadata},
		{"metadata: Alibaba literal", "100.100.100.200:80", true, netpolicy.ClassMetadata, nil, netpolicy.ErrMetadata},
		{"metadata: IPv6 literal", "[fd00:ec2::254]:80", true, netpolicy.ClassMetadata, nil, netpolicy.ErrMetadata},
		{"metadata: Akamai (Linode) IPv6 literal", "[fd00:a9fe:a9fe::1]:80", true, netpolicy.ClassMetadata, nil, netpolicy.ErrMetadata},
		{"metadata: IPv4-mapped IPv6 literal", "[::ffff:169.254.169.254]:80", true, netpolicy.ClassMetadata, nil, netpolicy.ErrMetadata},
		{"metadata name: refused without a lookup", "metadata.google.internal:80", true, netpolicy.ClassMetadata, nil, netpolicy.ErrMetadata},
		{"name that resolves to metadata", imdsHost + ":80", true, netpolicy.ClassMetadata, nil, netpolicy.ErrMetadata},
		{"name mixing public and metadata answers: metadata", rebindHost + ":443", true, netpolicy.ClassMetadata, nil, netpolicy.ErrMetadata},
		{"loopback literal, private allowed", "127.0.0.1:3000", true, netpolicy.ClassPrivate, addrs("127.0.0.1"), nil},
		{"loopback literal, private not allowed (strict)", "127.0.0.1:3000", false, netpolicy.ClassPrivate, nil, netpolicy.ErrPrivate},
		{"IPv6 loopback literal, strict", "[::1]:3000", false, netpolicy.ClassPrivate, nil, netpolicy.ErrPrivate},
		{"LAN name, private allowed", "lan.test:80", true, netpolicy.ClassPrivate, addrs("192.168.1.9"), nil},
		{"LAN name, strict", "lan.test:80", false, netpolicy.ClassPrivate, nil, netpolicy.ErrPrivate},
		{"name mixing public and private answers: private", "mixed.test:80", false, netpolicy.ClassPrivate, nil, netpolicy.ErrPrivate},
		{"mixed public and private, allowed: every answer may be dialled", "mixed.test:80", true, netpolicy.ClassPrivate, addrs("93.184.215.14", "10.0.0.5"), nil},
		{"localhost: loopback without a lookup", "localhost:3000", true, netpolicy.ClassPrivate, addrs("127.0.0.1", "::1"), nil},
		{"*.localhost: loopback", "app.localhost:3000", true, netpolicy.ClassPrivate, addrs("127.0.0.1", "::1"), nil},
		{"localhost, strict", "localhost:3000", false, netpolicy.ClassPrivate, nil, netpolicy.ErrPrivate},
		{"name that does not resolve: nothing to dial", "nowhere.test:80", true, netpolicy.ClassPublic, nil, nil},
		{"no port: invalid", "example.com", true, netpolicy.ClassInvalid, nil, netpolicy.ErrInvalidURL},
		{"port 0: invalid", "93.184.215.14:0", true, netpolicy.ClassInvalid, nil, netpolicy.ErrInvalidURL},
		{"port out of range: invalid", "93.184.215.14:70000", true, netpolicy.ClassInvalid, nil, netpolicy.ErrInvalidURL},
	}
	for _, row := range rows {
		t.Run(row.rule, func(t *testing.T) {
			v, port, err := floor.DecideEgress(context.Background(), testPolicy(res, row.privateOK), row.hostport)
			assert.Equal(t, row.want, v.Class)
			if row.dial != nil {
				require.NoError(t, err)
				assert.Equal(t, row.dial, v.Addrs)
				assert.NotZero(t, port)
				return
			}
			require.Error(t, err)
			if row.reason != nil {
				assert.ErrorIs(t, err, row.reason)
				var be *netpolicy.BlockedError
				assert.True(t, errors.As(err, &be))
			} else {
				var be *netpolicy.BlockedError
				assert.False(t, errors.As(err, &be), "not a refusal: there is nothing to dial")
			}
		})
	}
}

// The proxy's refusals are the policy's: what the owner hands it is an
// *egress.Refusal the proxy answers with 403, that still unwraps to the
// *BlockedError and the sentinel of its reason.
func TestEgressOwnerRefusalsKeepSentinels(t *testing.T) {
	t.Parallel()
	o := floor.EgressRules(testPolicy(egressResolver(), true))
	for _, c := range []struct {
		err      error
		sentinel error
		reason   netpolicy.Reason
	}{
		{errOf(o.Decide(context.Background(), "169.254.169.254:80")), netpolicy.ErrMetadata, netpolicy.ReasonMetadata},
		{errOf(o.Decide(context.Background(), "example.com")), netpolicy.ErrInvalidURL, netpolicy.ReasonInvalidURL},
		{o.Ungranted("10.0.0.5:80", egress.Decision{Host: "10.0.0.5", Addrs: addrs("10.0.0.5"), Port: 80, Private: true}), netpolicy.ErrPrivate, netpolicy.ReasonPrivateNotNamed},
	} {
		r, ok := errors.AsType[*egress.Refusal](c.err)
		require.True(t, ok, "%v", c.err)
		assert.Equal(t, c.reason.String(), r.Reason)
		assert.ErrorIs(t, c.err, c.sentinel)
		be, ok := errors.AsType[*netpolicy.BlockedError](c.err)
		require.True(t, ok)
		assert.Equal(t, c.reason, be.Reason)
	}
	_, err := o.Decide(context.Background(), "nowhere.test:80")
	require.Error(t, err)
	_, ok := errors.AsType[*egress.Refusal](err)
	assert.False(t, ok, "a name that does not resolve is no refusal: there is nothing to dial")
	d, err := o.Decide(context.Background(), "localhost:3000")
	require.NoError(t, err)
	assert.True(t, d.Private)
	assert.Equal(t, floor.LoopbackAddrs(), d.Addrs)
	assert.EqualValues(t, 3000, d.Port)
}

// errOf is the error of a call that returns a value and an error.
func errOf[T any](_ T, err error) error { return err }

// flipResolver answers the first lookup of a name with first and every
// later one with then: a rebinding DNS server.
type flipResolver struct {
	first, then []netip.Addr
	n           atomic.Int32
}

func (f *flipResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if f.n.Add(1) == 1 {
		return f.first, nil
	}
	return f.then, nil
}

// TestEgressDecidesWithOneLookup: a decision asks the resolver once and
// hands the proxy the addresses it was made on, which are all the proxy
// dials (internal/egress's TestDialsOnlyDecidedAddrs); a later decision
// sees a rebound answer and refuses it.
func TestEgressDecidesWithOneLookup(t *testing.T) {
	t.Parallel()
	res := &flipResolver{first: addrs("93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"), then: addrs("169.254.169.254")}
	o := floor.EgressRules(testPolicy(res, true))
	d, err := o.Decide(context.Background(), "flip.test:443")
	require.NoError(t, err)
	assert.Equal(t, res.first, d.Addrs)
	assert.False(t, d.Private)
	assert.EqualValues(t, 1, res.n.Load(), "one lookup for the decision")
	_, err = o.Decide(context.Background(), "flip.test:443")
	assert.ErrorIs(t, err, netpolicy.ErrMetadata, "the rebound answer is decided afresh")
	assert.EqualValues(t, 2, res.n.Load())
}

// BenchmarkEgress measures a page load through the egress proxy against
// one without it: two Chromiums of the same build with the same flags, one
// of them told to use a proxy that does exactly what the sidecar's does.
// "keep-alive" reloads a loopback page over a kept connection; "new-conn"
// has the server close the connection after each answer, so every load
// pays for a new connection (and, through the proxy, a decision and a dial).
func BenchmarkEgress(b *testing.B) {
	requireChromium(b)
	s := newProbeSite(b)
	ctx := testCtx(b)
	e, err := floor.StartEgress(ctx, testPolicy(egressResolver(), true), loopbackDialer(b), slog.New(slog.DiscardHandler))
	require.NoError(b, err)
	defer e.Close()

	for _, via := range []string{"direct", "proxy"} {
		var flags []string
		if via == "proxy" {
			flags = []string{"--proxy-server=http://" + e.Addr(), "--proxy-bypass-list=<-loopback>", "--disable-quic"}
		}
		c := cloudtest.LaunchChromium(b, flags...)
		rt, err := connectRemote(ctx, c.WSURL, "the benchmark browser", nil)
		require.NoError(b, err)
		for _, conn := range []string{"keep-alive", "new-conn"} {
			page := s.url(publicHost, "/bench")
			if via == "direct" {
				page = s.url("127.0.0.1", "/bench")
			}
			if conn == "new-conn" {
				page += "?close"
			}
			b.Run(conn+"/"+via, func(b *testing.B) {
				_, err := chromedp.Run(rt.Conn(), chromedp.Navigate(page))
				require.NoError(b, err)
				for b.Loop() {
					if _, err := chromedp.Run(rt.Conn(), chromedp.Navigate(page)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		_ = rt.Close(ctx)
		c.Close()
	}
}
