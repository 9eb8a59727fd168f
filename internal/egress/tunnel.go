package egress

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// tunnel answers CONNECT host:port (https, wss, and ws, which Chromium also
// tunnels): decide, dial, 200, then splice both ways.
func (p *Proxy) tunnel(w http.ResponseWriter, req *http.Request) {
	up, err := p.dialChecked(req.Context(), doorOf(req.Context()), "tcp", req.Host)
	if err != nil {
		fail(w, req.Host, err)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		_ = up.Close()
		http.Error(w, "hybroute: egress proxy cannot tunnel here", http.StatusInternalServerError)
		return
	}
	cl, brw, err := hj.Hijack()
	if err != nil {
		_ = up.Close()
		return
	}
	if _, err := io.WriteString(cl, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		_ = cl.Close()
		_ = up.Close()
		return
	}
	// Anything Chromium sent after the CONNECT head goes first.
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		_ = up.SetWriteDeadline(time.Now().Add(p.lim.TunnelIdle))
		if _, err := up.Write(b); err != nil {
			_ = cl.Close()
			_ = up.Close()
			return
		}
	}
	if !p.begin() {
		_ = cl.Close()
		_ = up.Close()
		return
	}
	t := &splice{idle: p.lim.TunnelIdle}
	t.touch()
	go func() {
		defer p.wg.Done()
		t.pipe(up, cl)
		// Chromium closes a tunnel only when it is done with it: end both
		// sides, so a server that never closes cannot hold the tunnel.
		_ = cl.Close()
		_ = up.Close()
	}()
	t.pipe(cl, up)
	// The server is done, or the tunnel idled out: it is over.
	_ = cl.Close()
	_ = up.Close()
}

// splice is one CONNECT tunnel's two directions and when either last moved
// a byte.
type splice struct {
	idle time.Duration
	last atomic.Int64 // unix nanoseconds
}

func (t *splice) touch() { t.last.Store(time.Now().UnixNano()) }

// pipe copies src to dst until either fails, or until the tunnel has moved
// nothing either way for t.idle: a read that waits longer than that ends
// only if the other direction was quiet too, and a write that makes no
// progress for that long ends it.
//
// It takes a buffer only once src has bytes to read (where the platform
// can wait for that), so an idle tunnel holds two goroutines and no
// buffer.
func (t *splice) pipe(dst, src net.Conn) {
	wait := readableWaiter(src)
	for {
		quiet := time.Since(time.Unix(0, t.last.Load()))
		if quiet >= t.idle {
			return
		}
		_ = src.SetReadDeadline(time.Now().Add(t.idle - quiet))
		if wait != nil {
			if err := wait(); err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					continue
				}
				return
			}
		}
		if !t.copyOnce(dst, src) {
			return
		}
	}
}

// tunnelBufs are the buffers tunnels copy through, taken per read.
var tunnelBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// copyOnce reads once from src and writes what came to dst. It reports
// whether the tunnel goes on: false on an end or an error of either side,
// true after data or a read deadline.
func (t *splice) copyOnce(dst, src net.Conn) bool {
	bp := tunnelBufs.Get().(*[]byte)
	defer tunnelBufs.Put(bp)
	n, err := src.Read(*bp)
	if n > 0 {
		t.touch()
		_ = dst.SetWriteDeadline(time.Now().Add(t.idle))
		if _, werr := dst.Write((*bp)[:n]); werr != nil {
			return false
		}
		t.touch()
	}
	return err == nil || errors.Is(err, os.ErrDeadlineExceeded)
}
