package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// site is a loopback web server that answers every path with a page
// titled by it, opens WebSockets on /ws, and remembers the paths asked.
type site struct {
	srv     *httptest.Server
	port    string
	mu      sync.Mutex
	reached map[string]bool
}

func newSite(t testing.TB) *site {
	s := &site{reached: map[string]bool{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reached[r.URL.Path] = true
		s.mu.Unlock()
		if r.URL.Path == "/ws" {
			c, err := websocket.Accept(w, r, nil)
			if err == nil {
				_ = c.CloseNow()
			}
			return
		}
		if r.URL.RawQuery == "close" {
			w.Header().Set("Connection", "close")
		}
		fmt.Fprintf(w, "<!doctype html><title>%s</title>", r.URL.Path)
	}))
	t.Cleanup(s.srv.Close)
	_, s.port, _ = net.SplitHostPort(s.srv.Listener.Addr().String())
	return s
}

func (s *site) url(host, path string) string {
	return "http://" + net.JoinHostPort(host, s.port) + path
}

func (s *site) was(path string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reached[path]
}

// TestDialsOnlyDecidedAddrs: the dialer is handed exactly the addresses
// that were decided, once each, in order; a name is decided once per
// connection, so a rebinding answer cannot slip in between the check and
// the dial; and a later connection is decided afresh.
func TestDialsOnlyDecidedAddrs(t *testing.T) {
	// Not parallel: goleak sees every goroutine of the process.
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	srv := newSilentServer(t)
	defer srv.close()
	_, port, _ := net.SplitHostPort(srv.addr())
	// Two loopback addresses stand for a name's two answers; the first
	// refuses connections (the server listens on 127.0.0.1 only).
	first, second := netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.1")
	var lookups atomic.Int32
	o := newOwner()
	o.lookup = func(_ context.Context, host string) (row, error) {
		if lookups.Add(1) == 1 {
			return row{[]netip.Addr{first, second}, public}, nil
		}
		return row{[]netip.Addr{netip.MustParseAddr("169.254.169.254")}, metadata}, nil
	}
	var mu sync.Mutex
	var dialled []string
	dial := loopbackOnly(t)
	p := start(t, o, Config{Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dialled = append(dialled, addr)
		mu.Unlock()
		return dial(ctx, network, addr)
	}})
	got := func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), dialled...) }
	defer p.Close()

	c, err := p.dialChecked(context.Background(), nil, "tcp", "flip.test:"+port)
	require.NoError(t, err)
	_ = c.Close()
	assert.Equal(t, []string{"127.0.0.2:" + port, "127.0.0.1:" + port}, got(), "the first answer failed, the second was tried; nothing else")
	assert.EqualValues(t, 1, lookups.Load(), "one decision for the connection")

	_, err = p.dialChecked(context.Background(), nil, "tcp", "flip.test:"+port)
	assert.ErrorIs(t, err, errMetadata, "the rebound answer is decided when it is dialled")
	assert.Len(t, got(), 2, "and never dialled")
	assert.EqualValues(t, 1, o.refused.Load(), "the refusal was recorded")
}

// TestProxyAnswers drives the proxy with Go's HTTP client, as Chromium
// would: absolute-form requests and CONNECT tunnels, refusals as 403 with
// a short body, and Close leaving no goroutine behind.
func TestProxyAnswers(t *testing.T) {
	// Not parallel: goleak sees every goroutine of the process.
	s := newSite(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	logs := &records{}
	o := newOwner()
	p := start(t, o, Config{Log: slogOf(logs)})
	defer p.Close()
	pu, _ := url.Parse("http://" + p.Addr())
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
	code, body := get(s.url("public.test", "/via-proxy?q=%zz&x=1"))
	assert.Equal(t, 200, code)
	assert.Contains(t, body, "<title>/via-proxy</title>")
	_, err := client.Get(s.url("imds.test", "/imds-get"))
	require.Error(t, err, "a refused plain-HTTP request gets no answer: a network error, like a failed connection")
	_, err = client.Get(s.url("nowhere.test", "/x"))
	require.Error(t, err, "so does a name that does not resolve")
	assert.False(t, s.was("/imds-get"))

	connectBody := func(proxy, target string) (int, string) {
		c, err := net.Dial("tcp", proxy)
		require.NoError(t, err)
		defer c.Close()
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body = connectBody(p.Addr(), net.JoinHostPort("imds.test", s.port))
	assert.Equal(t, http.StatusForbidden, code)
	assert.Contains(t, body, "cloud metadata (metadata)", "the refusal's phrase and reason")
	code, _ = connectBody(p.Addr(), net.JoinHostPort("nowhere.test", s.port))
	assert.Equal(t, http.StatusBadGateway, code, "a name that does not resolve is not a refusal, there is nothing to dial")

	code, c := connectThrough(t, p.Addr(), net.JoinHostPort("public.test", s.port))
	require.Equal(t, 200, code)
	fmt.Fprintf(c, "GET /tunnelled HTTP/1.1\r\nHost: public.test\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	_ = c.Close()
	assert.Contains(t, string(b), "<title>/tunnelled</title>")

	// A WebSocket upgrade sent as a plain absolute-form request (not how
	// Chromium sends one, but a proxy must not let it slip): decided like
	// any other request.
	upgrade := func(host string) (string, error) {
		c, err := net.Dial("tcp", p.Addr())
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
	st, err := upgrade("public.test")
	require.NoError(t, err)
	assert.Equal(t, "101 Switching Protocols", st)
	_, err = upgrade("imds.test")
	assert.Error(t, err, "a refused upgrade gets no answer")

	// The browser-wide door reaches no private address; a door whose
	// grant covers it does.
	code, body = connectBody(p.Addr(), net.JoinHostPort("127.0.0.1", s.port))
	assert.Equal(t, http.StatusForbidden, code, "a connection of no session is public only")
	assert.Contains(t, body, "(private_not_named)")
	door := grantedDoor(t, p)

	// A tunnel still open when the proxy closes is closed with it.
	code, open := connectThrough(t, door.Addr(), net.JoinHostPort("127.0.0.1", s.port))
	require.Equal(t, http.StatusOK, code)
	defer open.Close()
	tr.CloseIdleConnections()
	p.Close()
	require.NoError(t, open.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = open.Read(make([]byte, 1))
	assert.ErrorIs(t, err, io.EOF, "the proxy closed the tunnel")
	assert.Equal(t, 1, logs.count("egress refused host=imds.test "), "refusals of one host are logged once")
	// imds.test by plain HTTP (the client may retry it once), by CONNECT
	// and by upgrade, and the ungranted loopback; not nowhere.test.
	assert.GreaterOrEqual(t, o.refused.Load(), int32(4), "every refusal is recorded")
	assert.LessOrEqual(t, o.refused.Load(), int32(5))
}

// A tunnel whose client has gone is ended, even when the server never
// closes: a page cannot pile up held connections.
func TestTunnelEndsWithItsClient(t *testing.T) {
	t.Parallel()
	srv := newSilentServer(t)
	p := start(t, newOwner(), Config{})
	door := grantedDoor(t, p)
	for range 20 {
		code, c := connectThrough(t, door.Addr(), srv.addr())
		require.Equal(t, http.StatusOK, code)
		_ = c.Close()
	}
	assert.Eventually(t, func() bool { n, _ := p.counts(); return n == 0 },
		10*time.Second, 20*time.Millisecond, "every upstream connection of a closed tunnel is closed")
}

// Hostile host names cannot grow the warning table or the log.
func TestLongHostsStayBounded(t *testing.T) {
	t.Parallel()
	logs := &records{}
	o := newOwner()
	o.strict = true
	p := start(t, o, Config{Log: slogOf(logs)})
	for i := range 10 {
		code, _ := connectThrough(t, p.Addr(), fmt.Sprintf("%d%s.internal:80", i, strings.Repeat("a", 100_000)))
		require.Equal(t, http.StatusForbidden, code)
	}
	p.warnMu.Lock()
	total := 0
	for k := range p.warned {
		total += len(k)
	}
	p.warnMu.Unlock()
	assert.Equal(t, 10, logs.count("egress refused"), "one warning per host")
	assert.Less(t, total, 10*1024, "the table keeps cut names")
	assert.Less(t, logs.size(), 64*1024, "the log keeps cut names")
}

// Close waits for decisions in flight: nothing of the proxy outlives it.
func TestCloseWaitsForDecisions(t *testing.T) {
	// Not parallel: goleak sees every goroutine of the process.
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	entered := make(chan struct{})
	o := newOwner()
	o.lookup = func(ctx context.Context, _ string) (row, error) {
		close(entered)
		<-ctx.Done()
		time.Sleep(200 * time.Millisecond) // and late
		return row{}, ctx.Err()
	}
	p := start(t, o, Config{})
	pu, err := url.Parse("http://" + p.Addr())
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
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the proxy never asked its owner")
	}
	closed := make(chan struct{})
	go func() { p.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not end the decision in flight")
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the client's request did not end after Close")
	}
}

// TestDecisionHasItsOwnTimeout: an owner whose lookup never answers does
// not hold a connection: the decision runs out (here after a shortened
// timeout) and the connection fails, with nothing dialled.
func TestDecisionHasItsOwnTimeout(t *testing.T) {
	t.Parallel()
	o := newOwner()
	o.lookup = func(ctx context.Context, _ string) (row, error) {
		<-ctx.Done()
		return row{}, ctx.Err()
	}
	var dials atomic.Int32
	p := start(t, o, Config{
		Limits: Limits{LookupTimeout: 200 * time.Millisecond},
		Dial: func(context.Context, string, string) (net.Conn, error) {
			dials.Add(1)
			return nil, errors.New("test: no dial expected")
		},
	})
	code, c := connectThrough(t, p.Addr(), "slow.test:443")
	assert.Nil(t, c)
	assert.Equal(t, http.StatusBadGateway, code, "nothing to dial: the lookup ran out")
	assert.Zero(t, dials.Load())
}

// BenchmarkConnect is the latency the proxy adds to one new connection: a
// request on a fresh connection each time, straight to the server,
// through the proxy as a plain HTTP request, and through a CONNECT
// tunnel. The owner decides at once.
func BenchmarkConnect(b *testing.B) {
	s := newSite(b)
	p := start(b, newOwner(), Config{})
	pu, _ := url.Parse("http://" + p.Addr())
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
		run(b, &http.Transport{DisableKeepAlives: true, Proxy: http.ProxyURL(pu)}, s.url("public.test", "/c"))
	})
	b.Run("proxy-connect", func(b *testing.B) {
		// Go's client tunnels https only; dial the tunnel by hand.
		for b.Loop() {
			c, err := net.Dial("tcp", p.Addr())
			if err != nil {
				b.Fatal(err)
			}
			target := net.JoinHostPort("public.test", s.port)
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

// TestConfigWithoutDecisionsRefuses: a proxy whose Config names no Decide
// refuses every connection (fail closed) and dials nothing.
func TestConfigWithoutDecisionsRefuses(t *testing.T) {
	t.Parallel()
	p, err := Start(context.Background(), Config{Dial: func(context.Context, string, string) (net.Conn, error) {
		t.Error("the proxy dialled without a decision")
		return nil, errors.New("test: no dial")
	}})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	_, err = p.dialChecked(context.Background(), nil, "tcp", "127.0.0.1:80")
	r, ok := errors.AsType[*Refusal](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, "no_decision", r.Reason)
}
