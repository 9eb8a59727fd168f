package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/hybroute/hybroute/internal/redact"
	"github.com/hybroute/hybroute/internal/whatwg"
)

// Door is one browser context's way into the proxy: a listener of its own,
// the transport its plain-HTTP requests are carried by (so no upstream
// connection is ever shared with another session), and its grant.
type Door struct {
	p   *Proxy
	ln  net.Listener
	tr  *http.Transport
	key string // the browser context it serves, once bound

	mu     sync.Mutex
	grant  Grant
	named  map[string]struct{} // every host the running call named; nil between calls
	loaded map[string]struct{} // the hosts of every document the context started to load (loaded.go)
	mixed  bool                // more hosts than loaded keeps, or one it could not read: clean for no grant
	fails  []Failure           // the newest connections it did not make, and why
	closed bool
}

// doorKey is the context key of the door a proxy connection came in
// through.
type doorKey struct{}

func doorOf(ctx context.Context) *Door {
	d, _ := ctx.Value(doorKey{}).(*Door)
	return d
}

// OpenDoor opens a new door: a listener of its own, granting nothing.
// ctx bounds the opening only; the door lasts until its Close or the
// proxy's.
func (p *Proxy) OpenDoor(ctx context.Context) (*Door, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("hybroute: opening an egress door for a browser context: %w", err)
	}
	d := &Door{p: p}
	d.ln = &listener{Listener: ln, p: p, door: d}
	d.tr = p.newTransport(func(ctx context.Context, network, addr string) (net.Conn, error) {
		return p.dialChecked(ctx, d, network, addr)
	})
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_ = ln.Close()
		return nil, errClosed
	}
	p.serving.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.serving.Done()
		_ = p.srv.Serve(d.ln)
	}()
	return d, nil
}

// Addr is the door's host:port, for the browser context's proxyServer.
func (d *Door) Addr() string { return d.ln.Addr().String() }

// Bind names the browser context the door serves, so that a page of it
// leaving the grant's hosts (Proxy.Leave) finds it.
func (d *Door) Bind(key string) {
	d.p.mu.Lock()
	defer d.p.mu.Unlock()
	d.key = key
	if d.p.doors == nil {
		d.p.doors = map[string]*Door{}
	}
	d.p.doors[key] = d
}

// Set replaces the door's grant. Upstream connections to private hosts
// the new grant does not cover are closed: a kept-alive connection or a
// tunnel dialled under the old grant carries nothing more.
func (d *Door) Set(g Grant) { d.set(g, false) }

// set is Set; with clean, only for a grant the context is clean for
// (SetClean), which it reports.
func (d *Door) set(g Grant, clean bool) bool {
	d.mu.Lock()
	if clean && !g.Empty() && !d.cleanFor(g) {
		d.mu.Unlock()
		return false
	}
	if d.closed || d.grant.equal(g) {
		d.mu.Unlock()
		return true
	}
	d.grant = g
	drop := d.p.privateConns(d, g)
	d.mu.Unlock()
	for _, c := range drop {
		_ = c.Close()
	}
	d.tr.CloseIdleConnections()
	return true
}

// Grant is the door's grant now.
func (d *Door) Grant() Grant {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.grant
}

// NameCall sets the hosts the running call named, public ones too (nil:
// no call runs). While a call runs, its pages may move among them without
// ending the grant.
func (d *Door) NameCall(hosts []string) {
	var named map[string]struct{}
	if hosts != nil {
		named = make(map[string]struct{}, len(hosts))
		for _, h := range hosts {
			named[grantHost(h)] = struct{}{}
		}
	}
	d.mu.Lock()
	d.named = named
	d.mu.Unlock()
}

// Close shuts the door: its listener, every connection through it and
// every upstream connection dialled for it.
func (d *Door) Close() {
	if d == nil {
		return
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.closed = true
	d.grant = Grant{}
	d.mu.Unlock()
	_ = d.ln.Close()
	p := d.p
	p.mu.Lock()
	if d.key != "" && p.doors[d.key] == d {
		delete(p.doors, d.key)
	}
	var conns []*conn
	for c := range p.conns {
		if c.door == d {
			conns = append(conns, c)
		}
	}
	p.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
	d.tr.CloseIdleConnections()
}

// Leave is told of a document a page of the browser context key starts to
// load, before the request goes on: a document from a host the grant does
// not cover, and the running call did not name, ends the grant.
func (p *Proxy) Leave(key, rawURL string) {
	p.mu.Lock()
	d := p.doors[key]
	p.mu.Unlock()
	d.Leave(rawURL)
}

// Leave is Proxy.Leave for the door's own browser context.
func (d *Door) Leave(rawURL string) {
	if d == nil {
		return
	}
	d.mu.Lock()
	g, named := d.grant, d.named
	d.mu.Unlock()
	if len(g.hosts) == 0 || g.CoversURL(rawURL) || namedURL(named, rawURL) {
		return
	}
	d.Set(Grant{})
	d.p.log.Debug("hybroute: egress grant ended: a page of the session loads a document from a host the call did not name",
		"hosts", g.hostList(), "url", redact.URL(redact.Cut(rawURL, 200, len(rawURL))))
}

// namedURL reports whether raw's host is one of named.
func namedURL(named map[string]struct{}, raw string) bool {
	if len(named) == 0 {
		return false
	}
	u, err := whatwg.Parse(raw)
	if err != nil {
		return false
	}
	_, ok := named[grantHost(u.Host)]
	return ok
}

// privateConns are the upstream connections of d to private addresses
// that g does not cover. Called with d.mu held.
func (p *Proxy) privateConns(d *Door, g Grant) []*conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*conn
	for c := range p.conns {
		if c.door == d && c.private && !g.Covers(c.host, c.addrs) {
			out = append(out, c)
		}
	}
	return out
}

// admitPrivate is the grant's check on one connection to a private
// address: nil when door's grant covers it. A connection of no door (the
// browser-wide one) is granted nothing.
func (p *Proxy) admitPrivate(door *Door, hostport string, dec Decision) error {
	if door != nil {
		door.mu.Lock()
		ok := !door.closed && door.grant.Covers(dec.Host, dec.Addrs)
		door.mu.Unlock()
		if ok {
			return nil
		}
	}
	return p.ungranted(hostport, dec)
}

// ungranted is Config.Ungranted's refusal of a private connection no grant
// covers; one that gives none still fails the connection (fail closed).
func (p *Proxy) ungranted(hostport string, dec Decision) error {
	if err := p.cfg.Ungranted(hostport, dec); err != nil {
		return err
	}
	return errNotGranted
}

var errNotGranted = errors.New("hybroute: egress: no grant covers the private address")

// trackGranted registers an upstream connection to a private address
// dialled under d's grant, checking the grant once more under the lock
// that Set takes: a grant dropped while the connection was dialled closes
// it here.
func (d *Door) trackGranted(c net.Conn, hostport string, dec Decision) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || !d.grant.Covers(dec.Host, dec.Addrs) {
		_ = c.Close()
		err := d.p.ungranted(hostport, dec)
		d.recordLocked(hostport, Refused, err)
		return nil, err
	}
	return d.p.register(&conn{Conn: c, p: d.p, door: d, private: true, host: dec.Host, addrs: dec.Addrs})
}
