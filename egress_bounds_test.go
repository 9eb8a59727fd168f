package hybroute

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// silentServer accepts connections and never reads or writes; it holds
// them without a goroutine each, so the goroutines a test counts are the
// proxy's.
type silentServer struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	done  chan struct{}
}

func newSilentServer(t testing.TB) *silentServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &silentServer{ln: ln, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
		}
	}()
	t.Cleanup(s.close)
	return s
}

func (s *silentServer) close() {
	_ = s.ln.Close()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		_ = c.Close()
	}
	s.conns = nil
}

// loopbackDoor is a door of e whose grant covers 127.0.0.1, as a session
// whose call named it has: the proxy's bounds are the same for every door,
// and the browser-wide one reaches no private address.
func loopbackDoor(t testing.TB, e *egressProxy) string {
	t.Helper()
	d, err := e.openSession()
	require.NoError(t, err)
	d.set(egressGrant{hosts: map[string]struct{}{"127.0.0.1": {}}, addrs: map[netip.Addr]struct{}{netip.MustParseAddr("127.0.0.1"): {}}})
	return d.addr()
}

// connectThrough opens a CONNECT tunnel to target through the proxy at
// proxy. It returns the status (0 when the proxy closed the connection
// without an answer) and, on 200, the open tunnel.
func connectThrough(t testing.TB, proxy, target string) (int, net.Conn) {
	t.Helper()
	c, err := net.DialTimeout("tcp", proxy, 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target); err != nil {
		_ = c.Close()
		return 0, nil
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil {
		_ = c.Close()
		return 0, nil
	}
	if resp.StatusCode != http.StatusOK {
		_ = c.Close()
		return resp.StatusCode, nil
	}
	require.NoError(t, c.SetDeadline(time.Time{}))
	return resp.StatusCode, c
}

func (e *egressProxy) counts() (conns, clients int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.conns), e.clients
}

// heldBytes is the memory a test can blame on what the process holds:
// live heap objects and goroutine stacks.
func heldBytes() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc + m.StackInuse
}

// TestEgressFloodOfIdleTunnelsIsBounded: 3,000 CONNECT tunnels to a server
// that never speaks: without a cap, such a flood holds 12,000 goroutines
// and 313 MiB for ever. The proxy holds at most its cap of connections from the
// browser, with two goroutines and one upstream connection each, refuses
// the rest at once with one warning, and takes new connections again when
// some end.
func TestEgressFloodOfIdleTunnelsIsBounded(t *testing.T) {
	// Not parallel: it counts every goroutine and byte of the process.
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	srv := newSilentServer(t)
	defer srv.close() // before goleak looks
	logs := &logBuffer{}
	lim := defaultEgressLimits()
	e, err := startEgressWith(testPolicy(egressResolver(), true), loopbackDialer(t), slog.New(slog.NewTextHandler(logs, nil)), lim)
	require.NoError(t, err)
	defer e.close()
	door := loopbackDoor(t, e)
	baseG, baseMem := runtime.NumGoroutine(), heldBytes()

	const flood = 3000
	var open []net.Conn
	defer func() {
		for _, c := range open {
			_ = c.Close()
		}
	}()
	refused := 0
	for range flood {
		code, c := connectThrough(t, door, srv.ln.Addr().String())
		switch code {
		case http.StatusOK:
			open = append(open, c)
		case 0:
			refused++
		default:
			t.Fatalf("CONNECT answered %d", code)
		}
	}
	g, held := runtime.NumGoroutine()-baseG, heldBytes()
	mem := held - min(held, baseMem)
	conns, clients := e.counts()
	t.Logf("%d tunnels open, %d refused: %d goroutines, %d tracked conns, %.1f MiB held",
		len(open), refused, g, conns, float64(mem)/(1<<20))
	assert.Equal(t, lim.maxConns, len(open), "the cap is the number of tunnels held")
	assert.Equal(t, flood-lim.maxConns, refused)
	assert.Equal(t, lim.maxConns, clients)
	assert.LessOrEqual(t, conns, 2*lim.maxConns, "a browser connection and an upstream one per tunnel")
	assert.LessOrEqual(t, g, 2*lim.maxConns+16, "two goroutines per tunnel")
	assert.Less(t, mem, uint64(lim.maxConns)*64<<10, "at most 64 KiB per tunnel held (idle ones hold no buffer)")
	assert.Equal(t, 1, logs.count("egress proxy at its connection cap"), "one warning for the whole flood")

	// A slot that frees is taken again.
	for _, c := range open[:8] {
		_ = c.Close()
	}
	open = open[8:]
	require.Eventually(t, func() bool { _, n := e.counts(); return n <= lim.maxConns-8 },
		10*time.Second, 10*time.Millisecond, "closed tunnels free their slots")
	code, c := connectThrough(t, door, srv.ln.Addr().String())
	require.Equal(t, http.StatusOK, code)
	open = append(open, c)
}

// TestEgressIdleConnectionsEnd: a tunnel that moves nothing either way, a
// kept-alive proxy connection with no next request and a pooled upstream
// connection are all closed after their (here shortened) idle timeouts.
func TestEgressIdleConnectionsEnd(t *testing.T) {
	t.Parallel()
	srv := newSilentServer(t)
	site := newProbeSite(t)
	lim := defaultEgressLimits()
	lim.tunnelIdle, lim.keepAliveIdle, lim.upstreamIdle = 300*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond
	e, err := startEgressWith(testPolicy(egressResolver(), true), loopbackDialer(t), slog.New(slog.DiscardHandler), lim)
	require.NoError(t, err)
	defer e.close()
	door := loopbackDoor(t, e)

	var tunnels []net.Conn
	for range 20 {
		code, c := connectThrough(t, door, srv.ln.Addr().String())
		require.Equal(t, http.StatusOK, code)
		defer c.Close()
		tunnels = append(tunnels, c)
	}
	// A kept-alive connection: one plain request, then nothing.
	ka, err := net.Dial("tcp", e.addr())
	require.NoError(t, err)
	defer ka.Close()
	target := site.url(publicHost, "/kept")
	fmt.Fprintf(ka, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, publicHost+":"+site.port)
	br := bufio.NewReader(ka)
	require.NoError(t, ka.SetDeadline(time.Now().Add(10*time.Second)))
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	deadline := time.Now().Add(10 * time.Second)
	for i, c := range append(tunnels, ka) {
		require.NoError(t, c.SetReadDeadline(deadline))
		_, err := c.Read(make([]byte, 1))
		assert.ErrorIs(t, err, io.EOF, "connection %d was closed by the proxy", i)
	}
	assert.Eventually(t, func() bool { n, _ := e.counts(); return n == 0 },
		10*time.Second, 10*time.Millisecond, "no connection is held, upstream ones included")
}

// TestEgressBusyTunnelIsNotCut: a WebSocket through a CONNECT tunnel (as
// Chromium carries ws and wss) that exchanges a message every 100 ms, or
// that only receives, for 2.5 times the tunnel idle timeout, stays open
// (the timeout is 1 s, not shorter: a loaded machine can stall the
// process for a few hundred milliseconds, and that is idle time too).
func TestEgressBusyTunnelIsNotCut(t *testing.T) {
	t.Parallel()
	const idle, every, span = time.Second, 100 * time.Millisecond, 2500 * time.Millisecond
	ws := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx := r.Context()
		if r.URL.Path == "/push" {
			for i := 0; ; i++ {
				if err := c.Write(ctx, websocket.MessageText, fmt.Appendf(nil, "push %d", i)); err != nil {
					return
				}
				select {
				case <-time.After(every):
				case <-ctx.Done():
					return
				}
			}
		}
		for {
			typ, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			if err := c.Write(ctx, typ, b); err != nil {
				return
			}
		}
	}))
	defer ws.Close()
	lim := defaultEgressLimits()
	lim.tunnelIdle = idle
	e, err := startEgressWith(testPolicy(egressResolver(), true), loopbackDialer(t), slog.New(slog.DiscardHandler), lim)
	require.NoError(t, err)
	defer e.close()
	door := loopbackDoor(t, e)
	// Every dial goes through a CONNECT to the proxy.
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
		code, c := connectThrough(t, door, addr)
		if code != http.StatusOK {
			return nil, fmt.Errorf("CONNECT %s: %d", addr, code)
		}
		return c, nil
	}}}
	dial := func(t *testing.T, path string) (context.Context, *websocket.Conn) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		t.Cleanup(cancel)
		c, _, err := websocket.Dial(ctx, "ws://"+ws.Listener.Addr().String()+path, &websocket.DialOptions{HTTPClient: client})
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.CloseNow() })
		return ctx, c
	}

	t.Run("echo", func(t *testing.T) {
		ctx, c := dial(t, "/echo")
		n := 0
		for start := time.Now(); time.Since(start) < span; n++ {
			msg := fmt.Sprintf("ping %d", n)
			require.NoError(t, c.Write(ctx, websocket.MessageText, []byte(msg)), "message %d", n)
			_, b, err := c.Read(ctx)
			require.NoError(t, err, "message %d", n)
			assert.Equal(t, msg, string(b))
			time.Sleep(every)
		}
		assert.GreaterOrEqual(t, n, 3, "messages went both ways past the idle timeout")
	})
	t.Run("server pushes, client silent", func(t *testing.T) {
		ctx, c := dial(t, "/push")
		n := 0
		for start := time.Now(); time.Since(start) < span; n++ {
			_, b, err := c.Read(ctx)
			require.NoError(t, err, "message %d", n)
			assert.Equal(t, fmt.Sprintf("push %d", n), string(b))
		}
		assert.GreaterOrEqual(t, n, 3, "messages came past the idle timeout")
	})
}

// hangingResolver answers only when its context ends.
type hangingResolver struct{}

func (hangingResolver) LookupNetIP(ctx context.Context, _, _ string) ([]netip.Addr, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestEgressLookupHasItsOwnTimeout: a resolver that never answers does not
// hold a connection: the lookup runs out (here after a shortened timeout)
// and the connection is refused, with nothing dialled.
func TestEgressLookupHasItsOwnTimeout(t *testing.T) {
	t.Parallel()
	lim := defaultEgressLimits()
	lim.lookupTimeout = 200 * time.Millisecond
	d := &recordingDialer{}
	e, err := startEgressWith(testPolicy(hangingResolver{}, true), d.dial, slog.New(slog.DiscardHandler), lim)
	require.NoError(t, err)
	defer e.close()
	code, c := connectThrough(t, e.addr(), "slow.test:443")
	assert.Nil(t, c)
	assert.Equal(t, http.StatusBadGateway, code, "nothing to dial: the lookup ran out")
	assert.Empty(t, d.got())
}
