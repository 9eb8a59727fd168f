package hybroute

import (
	"bufio"
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
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/hybroute/hybroute/internal/cloudtest"
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
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><title>parent</title><script>
window.got = new Promise(res => addEventListener("message", e => res(String(e.data))));
</script><iframe src="http://%s/inner"></iframe>`, net.JoinHostPort(otherHost, s.port))
	})
	mux.HandleFunc("/inner", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><title>inner</title><script>
fetch("http://%s/imds-iframe", {mode: "no-cors"}).then(
  () => parent.postMessage("reached", "*"),
  e => parent.postMessage("network error: " + e, "*"));
</script>`, net.JoinHostPort(imdsHost, s.port))
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
	_, err := r.Exec(testCtx(t), session, `await page.goto("`+page+`")`, func(ctx context.Context) error {
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
	logs := &logBuffer{}
	r := newBrowserRouter(t, nil, logs, WithResolver(egressResolver()), WithChromiumFlags(bypassCatcher))
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
		_, err := r.Exec(testCtx(t), "popup", `await page.goto("`+page+`")`, func(ctx context.Context) error {
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
			require.ErrorIs(t, err, ErrMetadata)
			assert.Contains(t, err.Error(), "popup")
		} else {
			require.Equal(t, "opened", got)
		}
		require.Eventually(t, func() bool { return logs.count(popupHost) > 0 },
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
	assert.Equal(t, 1, logs.count(`msg="hybroute: egress refused" host=`+imdsHost+" "),
		"one warning for the refused host, however often it was refused")
}

// TestEgressCarriesAllowedTraffic: public and private (localhost) loads
// and a WebSocket all work through the proxy, the private ones for the
// session whose call named localhost.
func TestEgressCarriesAllowedTraffic(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	s := newProbeSite(t)
	logs := &logBuffer{}
	r := newBrowserRouter(t, nil, logs, WithResolver(egressResolver()))
	ctx := testCtx(t)
	for _, u := range []string{s.url(publicHost, "/public"), s.url("localhost", "/localhost"), s.url("127.0.0.1", "/literal")} {
		res, err := r.Navigate(ctx, "s", u)
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
	res, err := w.r.Exec(testCtx(t), "s", `await page.goto("`+page+`")`, func(ctx context.Context) error {
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
		_, err := s.open(testCtx(t), "k")
		require.Error(t, err, "%v", f)
		assert.Regexp(t, "managed by the sidecar|a flag name is", err.Error(), "%v", f)
		assert.Zero(t, s.starts.Load()-1, "one attempt, no Chromium left running")
		assert.False(t, s.alive())
	}

	s := newTestSidecar(t)
	_, err := s.open(testCtx(t), "k")
	require.NoError(t, err)
	args := cmdline(currentProc(t, s).pid)
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
	assert.Equal(t, "http://"+currentProc(t, s).egress.addr(), proxy)
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
		want      Class
		dial      []netip.Addr // nil: refused
		reason    error        // the sentinel of a refusal; nil for "does not resolve"
	}{
		{"public IP literal: dialled as is, no lookup", "93.184.215.14:443", false, ClassPublic, addrs("93.184.215.14"), nil},
		{"public name: its answers are dialled", publicHost + ":80", false, ClassPublic, addrs("93.184.215.14"), nil},
		{"public IPv6 name", "v6.test:443", false, ClassPublic, addrs("2606:2800:21f:cb07:6820:80da:af6b:8b2c"), nil},
		{"metadata IP literal: refused always", "169.254.169.254:80", true, ClassMetadata, nil, ErrMetadata},
		{"metadata: Alibaba literal", "100.100.100.200:80", true, ClassMetadata, nil, ErrMetadata},
		{"metadata: IPv6 literal", "[fd00:ec2::254]:80", true, ClassMetadata, nil, ErrMetadata},
		{"metadata: Akamai (Linode) IPv6 literal", "[fd00:a9fe:a9fe::1]:80", true, ClassMetadata, nil, ErrMetadata},
		{"metadata: IPv4-mapped IPv6 literal", "[::ffff:169.254.169.254]:80", true, ClassMetadata, nil, ErrMetadata},
		{"metadata name: refused without a lookup", "metadata.google.internal:80", true, ClassMetadata, nil, ErrMetadata},
		{"name that resolves to metadata", imdsHost + ":80", true, ClassMetadata, nil, ErrMetadata},
		{"name mixing public and metadata answers: metadata", rebindHost + ":443", true, ClassMetadata, nil, ErrMetadata},
		{"loopback literal, private allowed", "127.0.0.1:3000", true, ClassPrivate, addrs("127.0.0.1"), nil},
		{"loopback literal, private not allowed (strict)", "127.0.0.1:3000", false, ClassPrivate, nil, ErrPrivate},
		{"IPv6 loopback literal, strict", "[::1]:3000", false, ClassPrivate, nil, ErrPrivate},
		{"LAN name, private allowed", "lan.test:80", true, ClassPrivate, addrs("192.168.1.9"), nil},
		{"LAN name, strict", "lan.test:80", false, ClassPrivate, nil, ErrPrivate},
		{"name mixing public and private answers: private", "mixed.test:80", false, ClassPrivate, nil, ErrPrivate},
		{"mixed public and private, allowed: every answer may be dialled", "mixed.test:80", true, ClassPrivate, addrs("93.184.215.14", "10.0.0.5"), nil},
		{"localhost: loopback without a lookup", "localhost:3000", true, ClassPrivate, addrs("127.0.0.1", "::1"), nil},
		{"*.localhost: loopback", "app.localhost:3000", true, ClassPrivate, addrs("127.0.0.1", "::1"), nil},
		{"localhost, strict", "localhost:3000", false, ClassPrivate, nil, ErrPrivate},
		{"name that does not resolve: nothing to dial", "nowhere.test:80", true, ClassPublic, nil, nil},
		{"no port: invalid", "example.com", true, ClassInvalid, nil, ErrInvalidURL},
		{"port 0: invalid", "93.184.215.14:0", true, ClassInvalid, nil, ErrInvalidURL},
		{"port out of range: invalid", "93.184.215.14:70000", true, ClassInvalid, nil, ErrInvalidURL},
	}
	for _, row := range rows {
		t.Run(row.rule, func(t *testing.T) {
			v, port, err := decideEgress(context.Background(), testPolicy(res, row.privateOK), row.hostport)
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
				var be *BlockedError
				assert.True(t, errors.As(err, &be))
			} else {
				var be *BlockedError
				assert.False(t, errors.As(err, &be), "not a refusal: there is nothing to dial")
			}
		})
	}
}

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

// recordingDialer records what it is asked to dial and fails or answers
// with one end of a pipe.
type recordingDialer struct {
	mu    sync.Mutex
	addrs []string
	fail  map[string]bool
}

func (d *recordingDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, addr)
	d.mu.Unlock()
	if d.fail[addr] {
		return nil, errors.New("connection refused")
	}
	a, b := net.Pipe()
	go func() { _ = b.Close() }()
	return a, nil
}

func (d *recordingDialer) got() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.addrs...)
}

// TestEgressDialsOnlyClassifiedAddrs: the dialer is handed exactly the
// addresses that were classified, once each, in order; a name is looked up
// once per connection, so a rebinding answer cannot slip in between the
// check and the dial; and a later connection is decided afresh.
func TestEgressDialsOnlyClassifiedAddrs(t *testing.T) {
	// Not parallel: goleak sees every goroutine of the process.
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	res := &flipResolver{first: addrs("93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"), then: addrs("169.254.169.254")}
	d := &recordingDialer{fail: map[string]bool{"93.184.215.14:443": true}}
	e, err := startEgress(testPolicy(res, true), d.dial, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer e.close()

	c, err := e.dialChecked(context.Background(), nil, "tcp", "flip.test:443")
	require.NoError(t, err)
	_ = c.Close()
	assert.Equal(t, []string{"93.184.215.14:443", "[2606:2800:21f:cb07:6820:80da:af6b:8b2c]:443"}, d.got(),
		"the first answer failed, the second was tried; nothing else")
	assert.EqualValues(t, 1, res.n.Load(), "one lookup for the connection")

	_, err = e.dialChecked(context.Background(), nil, "tcp", "flip.test:443")
	assert.ErrorIs(t, err, ErrMetadata, "the rebound answer is decided when it is dialled")
	assert.Len(t, d.got(), 2, "and never dialled")

	_, err = e.dialChecked(context.Background(), nil, "tcp", "169.254.169.254:80")
	assert.ErrorIs(t, err, ErrMetadata)
	assert.Len(t, d.got(), 2)
}

// TestEgressProxyAnswers drives the proxy with Go's HTTP client, as
// Chromium would: absolute-form requests and CONNECT tunnels, refusals as
// 403 with a short body, and Close leaving no goroutine behind.
func TestEgressProxyAnswers(t *testing.T) {
	// Not parallel: goleak sees every goroutine of the process.
	s := newProbeSite(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	logs := &logBuffer{}
	e, err := startEgress(testPolicy(egressResolver(), true), loopbackDialer(t), slog.New(slog.NewTextHandler(logs, nil)))
	require.NoError(t, err)
	defer e.close()
	pu, _ := url.Parse("http://" + e.addr())
	tr := &http.Transport{Proxy: http.ProxyURL(pu)}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	get := func(u string) (int, string) {
		resp, err := client.Get(u)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get(s.url(publicHost, "/via-proxy?q=%zz&x=1"))
	assert.Equal(t, 200, code)
	assert.Contains(t, body, "<title>/via-proxy</title>")
	_, err = client.Get(s.url(imdsHost, "/imds-get"))
	require.Error(t, err, "a refused plain-HTTP request gets no answer: a network error, like a failed connection")
	_, err = client.Get(s.url("nowhere.test", "/x"))
	require.Error(t, err, "so does a name that does not resolve")
	assert.False(t, s.reached("/imds-get"))

	// CONNECT: refused with 403, allowed with a working tunnel.
	connect := func(target string) (int, net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", e.addr())
		require.NoError(t, err)
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		require.NoError(t, err)
		if resp.StatusCode != 200 {
			_ = c.Close()
			return resp.StatusCode, nil, nil
		}
		return resp.StatusCode, c, br
	}
	connectBody := func(target string) (int, string) {
		c, err := net.Dial("tcp", e.addr())
		require.NoError(t, err)
		defer c.Close()
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body = connectBody(net.JoinHostPort(imdsHost, s.port))
	assert.Equal(t, http.StatusForbidden, code)
	assert.Contains(t, body, "cloud metadata")
	code, _ = connectBody(net.JoinHostPort("nowhere.test", s.port))
	assert.Equal(t, http.StatusBadGateway, code, "a name that does not resolve is not a refusal, there is nothing to dial")
	code, c, br := connect(net.JoinHostPort(publicHost, s.port))

	require.Equal(t, 200, code)
	fmt.Fprintf(c, "GET /tunnelled HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", publicHost)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	_ = c.Close()
	assert.Contains(t, string(b), "<title>/tunnelled</title>")

	// A WebSocket upgrade sent as a plain absolute-form request (not how
	// Chromium sends one, but a proxy must not let it slip): decided like
	// any other request.
	upgrade := func(host string) (string, error) {
		c, err := net.Dial("tcp", e.addr())
		require.NoError(t, err)
		defer c.Close()
		target := net.JoinHostPort(host, s.port)
		fmt.Fprintf(c, "GET http://%s/ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
			"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", target, target)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return "", err
		}
		_ = resp.Body.Close()
		return resp.Status, nil
	}
	st, err := upgrade(publicHost)
	require.NoError(t, err)
	assert.Equal(t, "101 Switching Protocols", st)
	_, err = upgrade(imdsHost)
	assert.Error(t, err, "a refused upgrade gets no answer")

	// The browser-wide door reaches no private address; a door whose
	// grant covers it does.
	code, _ = connectBody(net.JoinHostPort("127.0.0.1", s.port))
	assert.Equal(t, http.StatusForbidden, code, "a connection of no session is public only")
	door := loopbackDoor(t, e)
	via := func(proxy, target string) (int, net.Conn) {
		c, err := net.Dial("tcp", proxy)
		require.NoError(t, err)
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
		require.NoError(t, err)
		return resp.StatusCode, c
	}

	// A tunnel still open when the proxy closes is closed with it.
	code, open := via(door, net.JoinHostPort("127.0.0.1", s.port))
	require.Equal(t, http.StatusOK, code)
	require.NotNil(t, open)
	defer open.Close()
	tr.CloseIdleConnections()
	e.close()
	require.NoError(t, open.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = open.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.EOF, "the proxy closed the tunnel")
	assert.Equal(t, 1, logs.count("host="+imdsHost+" "), "refusals of one host are logged once")
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
	e, err := startEgress(testPolicy(egressResolver(), true), loopbackDialer(b), slog.New(slog.DiscardHandler))
	require.NoError(b, err)
	defer e.close()

	for _, via := range []string{"direct", "proxy"} {
		var flags []string
		if via == "proxy" {
			flags = []string{"--proxy-server=http://" + e.addr(), "--proxy-bypass-list=<-loopback>", "--disable-quic"}
		}
		c := cloudtest.LaunchChromium(b, flags...)
		rt, err := connectRemote(ctx, c.WSURL, nil, "the benchmark browser", nil)
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
				_, err := chromedp.Run(rt.ctx, chromedp.Navigate(page))
				require.NoError(b, err)
				for b.Loop() {
					if _, err := chromedp.Run(rt.ctx, chromedp.Navigate(page)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		_ = rt.close(ctx)
		c.Close()
	}
}

// BenchmarkEgressConnect is the latency the proxy adds to one new
// connection: a request on a fresh connection each time, straight to the
// server, through the proxy as a plain HTTP request, and through a CONNECT
// tunnel. The name is one the resolver answers at once.
func BenchmarkEgressConnect(b *testing.B) {
	s := newProbeSite(b)
	e, err := startEgress(testPolicy(egressResolver(), true), loopbackDialer(b), slog.New(slog.DiscardHandler))
	require.NoError(b, err)
	defer e.close()
	pu, _ := url.Parse("http://" + e.addr())
	run := func(b *testing.B, tr *http.Transport, u string) {
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr}
		for b.Loop() {
			resp, err := client.Get(u)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
	}
	b.Run("direct", func(b *testing.B) {
		run(b, &http.Transport{DisableKeepAlives: true}, s.url("127.0.0.1", "/c"))
	})
	b.Run("proxy-http", func(b *testing.B) {
		run(b, &http.Transport{DisableKeepAlives: true, Proxy: http.ProxyURL(pu)}, s.url(publicHost, "/c"))
	})
	b.Run("proxy-connect", func(b *testing.B) {
		// Go's client tunnels https only; dial the tunnel by hand.
		for b.Loop() {
			c, err := net.Dial("tcp", e.addr())
			if err != nil {
				b.Fatal(err)
			}
			target := net.JoinHostPort(publicHost, s.port)
			fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\nGET /c HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, target, target)
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
			if err != nil || resp.StatusCode != 200 {
				b.Fatal(err, resp)
			}
			resp, err = http.ReadResponse(br, nil)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			_ = c.Close()
		}
	})
}

// A tunnel whose client has gone is ended, even when the server never
// closes: a page cannot pile up held connections.
func TestEgressTunnelEndsWithItsClient(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() { // a silent server that never closes
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	e, err := startEgress(testPolicy(egressResolver(), true), loopbackDialer(t), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer e.close()
	door := loopbackDoor(t, e)
	for range 20 {
		c, err := net.Dial("tcp", door)
		require.NoError(t, err)
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\n", ln.Addr())
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		_ = c.Close()
	}
	assert.Eventually(t, func() bool { e.mu.Lock(); defer e.mu.Unlock(); return len(e.conns) == 0 },
		10*time.Second, 20*time.Millisecond, "every upstream connection of a closed tunnel is closed")
}

// Hostile host names cannot grow the warning table or the log.
func TestEgressLongHostsStayBounded(t *testing.T) {
	t.Parallel()
	logs := &logBuffer{}
	e, err := startEgress(testPolicy(staticResolver{}, false), loopbackDialer(t), slog.New(slog.NewTextHandler(logs, nil)))
	require.NoError(t, err)
	defer e.close()
	for i := range 10 {
		host := fmt.Sprintf("%d%s.internal:80", i, strings.Repeat("a", 100_000))
		c, err := net.Dial("tcp", e.addr())
		require.NoError(t, err)
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\n", host)
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
		require.NoError(t, err)
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		_ = c.Close()
	}
	e.warnMu.Lock()
	total := 0
	for k := range e.warned {
		total += len(k)
	}
	e.warnMu.Unlock()
	assert.Less(t, total, 10*1024, "the table keeps cut names")
	assert.Less(t, len(logs.String()), 64*1024, "the log keeps cut names")
}

// blockingResolver answers only after its context ends, and late.
type blockingResolver struct{ entered chan struct{} }

func (b blockingResolver) LookupNetIP(ctx context.Context, _, _ string) ([]netip.Addr, error) {
	close(b.entered)
	<-ctx.Done()
	time.Sleep(200 * time.Millisecond)
	return nil, ctx.Err()
}

// close waits for dials in flight: nothing of the proxy outlives it.
func TestEgressCloseWaitsForDials(t *testing.T) {
	// Not parallel: goleak sees every goroutine of the process.
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	br := blockingResolver{entered: make(chan struct{})}
	e, err := startEgress(testPolicy(br, true), loopbackDialer(t), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	pu, err := url.Parse("http://" + e.addr())
	require.NoError(t, err)
	tr := &http.Transport{Proxy: http.ProxyURL(pu)}
	defer tr.CloseIdleConnections()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if r, err := (&http.Client{Transport: tr}).Get("http://slow.test:81/"); err == nil {
			_ = r.Body.Close()
		}
	}()
	select {
	case <-br.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the proxy never asked the resolver")
	}
	closed := make(chan struct{})
	go func() { e.close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("close did not end the lookup in flight")
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the client's request did not end after close")
	}
}
