package cloudtest

import (
	"net"
	"sync"
	"testing"
	"time"
)

// A cloud browser is far away: every CDP message between the router and a
// provider's browser crosses a round trip of tens of milliseconds. A
// DelayProxy puts that distance on loopback: a TCP proxy that delivers
// each chunk it reads oneWay after it arrived, in each direction, without
// holding back the chunks behind it. So latency grows and throughput does
// not, as on a real link, and what a round trip costs a design (a command
// awaited before the next, a request paused until it is answered) shows in
// a benchmark on one machine, where tc netem is not available.

// DelayProxy listens on loopback and forwards each connection to target
// with oneWay added in each direction. It returns its address; it closes
// with the test.
func DelayProxy(t testing.TB, target string, oneWay time.Duration) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("cloudtest: delay proxy: %v", err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			down, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = down.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, down, up)
			mu.Unlock()
			wg.Go(func() { delayed(up, down, oneWay) })
			wg.Go(func() { delayed(down, up, oneWay) })
		}
	})
	return l.Addr().String()
}

// chunk is what one read returned, and when.
type chunk struct {
	b  []byte
	at time.Time
}

// delayed copies src to dst, each chunk oneWay after it was read. Reads
// go on while earlier chunks wait, so the delay does not serialise them.
func delayed(dst, src net.Conn, oneWay time.Duration) {
	q := make(chan chunk, 4096)
	go func() {
		defer close(q)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				q <- chunk{b: buf[:n], at: time.Now()}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range q {
		time.Sleep(time.Until(c.at.Add(oneWay)))
		if _, err := dst.Write(c.b); err != nil {
			_ = src.Close() // ends the reader
			_ = dst.Close()
			for range q {
			}
			return
		}
	}
	// src is done: pass its end on, so the other direction ends too.
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
		return
	}
	_ = dst.Close()
}
