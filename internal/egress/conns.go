package egress

import (
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"
)

// conn is a connection the proxy holds (from the browser, or dialled
// upstream), so Close can close every one of them.
type conn struct {
	net.Conn
	p      *Proxy
	client bool  // accepted from the browser: counted against the cap
	door   *Door // the door it belongs to; nil: the browser-wide one
	// private: an upstream connection to a private address, dialled under
	// door's grant, to host (as decided) at addrs; closed when the grant
	// no longer covers it.
	private bool
	host    string
	addrs   []netip.Addr
	once    sync.Once
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.p.mu.Lock()
		delete(c.p.conns, c)
		if c.client {
			c.p.clients--
		}
		c.p.mu.Unlock()
	})
	return err
}

// track registers an upstream connection of door; on a closed proxy it
// closes c and fails.
func (p *Proxy) track(c net.Conn, door *Door) (net.Conn, error) {
	return p.register(&conn{Conn: c, p: p, door: door})
}

// register registers an upstream connection; on a closed proxy it closes
// it and fails.
func (p *Proxy) register(pc *conn) (net.Conn, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_ = pc.Conn.Close()
		return nil, errClosed
	}
	p.conns[pc] = struct{}{}
	p.mu.Unlock()
	return pc, nil
}

// errFull is the error of a connection refused at the cap.
var errFull = errors.New("hybroute: egress proxy at its connection cap")

// admit registers a connection from the browser. It closes c and fails on
// a closed proxy, and at the cap (with a warning at most once per
// fullWarnEvery).
func (p *Proxy) admit(c net.Conn, door *Door) (net.Conn, error) {
	pc := &conn{Conn: c, p: p, client: true, door: door}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_ = c.Close()
		return nil, errClosed
	}
	if p.clients >= p.lim.MaxConns {
		now := time.Now()
		warn := now.Sub(p.fullWarn) >= fullWarnEvery
		if warn {
			p.fullWarn = now
		}
		p.mu.Unlock()
		_ = c.Close()
		if warn {
			p.log.LogAttrs(p.ctx, slog.LevelWarn, "hybroute: egress proxy at its connection cap; closing new connections until some end",
				slog.Int("max_conns", p.lim.MaxConns))
		}
		return nil, errFull
	}
	p.clients++
	p.conns[pc] = struct{}{}
	p.mu.Unlock()
	return pc, nil
}

// listener tracks every connection it accepts.
type listener struct {
	net.Listener
	p    *Proxy
	door *Door // the door it is; nil: the browser-wide one
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		tc, err := l.p.admit(c, l.door)
		if err == nil {
			return tc, nil
		}
		// At the cap: c is closed, take the next. Closed meanwhile:
		// Serve sees the listener's error next.
	}
}
