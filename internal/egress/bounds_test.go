package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// heldBytes is the memory a test can blame on what the process holds:
// live heap objects and goroutine stacks.
func heldBytes() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc + m.StackInuse
}

// TestFloodOfIdleTunnelsIsBounded: 3,000 CONNECT tunnels to a server that
// never speaks: without a cap, such a flood holds 12,000 goroutines and
// 313 MiB for ever. The proxy holds at most its cap of connections from
// the browser, with two goroutines and one upstream connection each,
// refuses the rest at once with one warning, and takes new connections
// again when some end.
func TestFloodOfIdleTunnelsIsBounded(t *testing.T) {
	// Not parallel: it counts every goroutine and byte of the process.
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	srv := newSilentServer(t)
	defer srv.close() // before goleak looks
	logs := &records{}
	lim := DefaultLimits()
	p := start(t, newOwner(), Config{Log: slogOf(logs), Limits: lim})
	defer p.Close()
	door := grantedDoor(t, p).Addr()
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
		code, c := connectThrough(t, door, srv.addr())
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
	conns, clients := p.counts()
	t.Logf("%d tunnels open, %d refused: %d goroutines, %d tracked conns, %.1f MiB held",
		len(open), refused, g, conns, float64(mem)/(1<<20))
	assert.Equal(t, lim.MaxConns, len(open), "the cap is the number of tunnels held")
	assert.Equal(t, flood-lim.MaxConns, refused)
	assert.Equal(t, lim.MaxConns, clients)
	assert.LessOrEqual(t, conns, 2*lim.MaxConns, "a browser connection and an upstream one per tunnel")
	assert.LessOrEqual(t, g, 2*lim.MaxConns+16, "two goroutines per tunnel")
	assert.Less(t, mem, uint64(lim.MaxConns)*64<<10, "at most 64 KiB per tunnel held (idle ones hold no buffer)")
	assert.Equal(t, 1, logs.count("egress proxy at its connection cap"), "one warning for the whole flood")

	// A slot that frees is taken again.
	for _, c := range open[:8] {
		_ = c.Close()
	}
	open = open[8:]
	require.Eventually(t, func() bool { _, n := p.counts(); return n <= lim.MaxConns-8 },
		10*time.Second, 10*time.Millisecond, "closed tunnels free their slots")
	code, c := connectThrough(t, door, srv.addr())
	require.Equal(t, http.StatusOK, code)
	open = append(open, c)
}

// TestIdleConnectionsEnd: a tunnel that moves nothing either way, a
// kept-alive proxy connection with no next request and a pooled upstream
// connection are all closed after their (here shortened) idle timeouts.
func TestIdleConnectionsEnd(t *testing.T) {
	t.Parallel()
	srv := newSilentServer(t)
	site := newSite(t)
	const idle = 300 * time.Millisecond
	p := start(t, newOwner(), Config{Limits: Limits{TunnelIdle: idle, KeepAliveIdle: idle, UpstreamIdle: idle}})
	door := grantedDoor(t, p).Addr()

	var tunnels []net.Conn
	for range 20 {
		code, c := connectThrough(t, door, srv.addr())
		require.Equal(t, http.StatusOK, code)
		defer c.Close()
		tunnels = append(tunnels, c)
	}
	// A kept-alive connection: one plain request, then nothing.
	ka, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer ka.Close()
	target := site.url("public.test", "/kept")
	fmt.Fprintf(ka, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, "public.test:"+site.port)
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
	assert.Eventually(t, func() bool { n, _ := p.counts(); return n == 0 },
		10*time.Second, 10*time.Millisecond, "no connection is held, upstream ones included")
}

// TestBusyTunnelIsNotCut: a WebSocket through a CONNECT tunnel (as
// Chromium carries ws and wss) that exchanges a message every 100 ms, or
// that only receives, for 2.5 times the tunnel idle timeout, stays open
// (the timeout is 1 s, not shorter: a loaded machine can stall the
// process for a few hundred milliseconds, and that is idle time too).
func TestBusyTunnelIsNotCut(t *testing.T) {
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
	p := start(t, newOwner(), Config{Limits: Limits{TunnelIdle: idle}})
	door := grantedDoor(t, p).Addr()
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
