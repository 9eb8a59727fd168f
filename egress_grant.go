package hybroute

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"

	"github.com/hybroute/hybroute/internal/whatwg"
)

// Which private addresses each local browser context may reach.
//
// Private URLs may run on the local browser, but a public page that runs
// there (a URL literal with a token, a cloud session's fallback, a page a
// call or a link went to) must not get the user's loopback and LAN with
// it. So the egress check knows which session a connection belongs to,
// and a session reaches a private address only by grant:
//
//   - Each browser context of the sidecar has a door of its own into the
//     egress proxy: a listener on a loopback port, named as the context's
//     proxyServer in Target.createBrowserContext (Chromium takes no proxy
//     credentials there; a port it does). A connection is the session's
//     whose door it came through. One through the browser-wide door
//     (--proxy-server: the default context, Chromium's own traffic)
//     belongs to no session and reaches public addresses only.
//   - A call that names a network target sets its session's grant to the
//     private hosts it names (none: public only). A call that names none
//     (a click, a read) leaves the grant as it is: the page stays where it
//     was.
//   - A grant covers the hosts the call named, on any port, and the
//     addresses those names had in the call's plan (loopback for
//     localhost), so the page on localhost:3000 can reach its API on
//     127.0.0.1:8080. A host it does not name is refused, private or
//     not named: a session granted 192.168.1.9 does not reach 10.0.0.5.
//   - The grant ends as soon as a page of the session (its tab or a
//     popup) starts loading a document from a host the grant does not
//     cover and the running call did not name: the guard pauses that
//     request, and the grant is dropped before it goes on, so no script of
//     the new page runs with it. A call that ends on a page the grant does
//     not cover ends it too (a mixed call may open its public page, then
//     localhost, but not stay public with localhost). The upstream
//     connections dialled under the grant are closed then.
//   - Metadata stays refused always, whatever a grant says.

// egressGrant is the private hosts one session may reach. The zero value
// grants nothing.
type egressGrant struct {
	hosts map[string]struct{}     // host names and literals as Chromium writes them, without a trailing dot
	addrs map[netip.Addr]struct{} // the addresses the named hosts had in the plan
}

// grantOf is the grant the verdicts of one call earn, and whether the call
// named any network target at all (a call that names none keeps the grant
// it had). Only private verdicts the policy let through grant anything.
func grantOf(vs []Verdict) (g egressGrant, names bool) {
	for _, v := range vs {
		if v.Err != nil || (v.Class != ClassPublic && v.Class != ClassPrivate) || !isWebURL(v.URL) {
			continue // loads from no network (an allowed file: URL, say)
		}
		names = true
		if v.Class != ClassPrivate || v.Host == "" {
			continue
		}
		if g.hosts == nil {
			g.hosts, g.addrs = map[string]struct{}{}, map[netip.Addr]struct{}{}
		}
		h := grantHost(v.Host)
		g.hosts[h] = struct{}{}
		for _, a := range v.Addrs {
			g.addrs[a.Unmap()] = struct{}{}
		}
		if c, ok := classifyName(h); ok && c == ClassPrivate {
			for _, a := range loopbackAddrs() {
				g.addrs[a] = struct{}{}
			}
		}
	}
	return g, names
}

// isWebURL reports whether raw is an http(s) or ws(s) URL: an allowed
// scheme such as file: is private but connects to nothing.
func isWebURL(raw string) bool {
	u, err := whatwg.Parse(raw)
	if err != nil {
		return false
	}
	switch u.Scheme {
	case "http", "https", "ws", "wss":
		return true
	}
	return false
}

// grantHost is a host as the grant keeps it: lower case (the parser's
// hosts are), one trailing dot removed, an IPv6 literal without brackets.
func grantHost(h string) string {
	h = strings.TrimSuffix(h, ".")
	return strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
}

// covers reports whether the grant lets a connection to host (as the
// verdict parsed it) reach addrs: host is a named host, or host is an
// address literal one of the named hosts had.
func (g egressGrant) covers(host string, addrs []netip.Addr) bool {
	if len(g.hosts) == 0 {
		return false
	}
	h := grantHost(host)
	if _, ok := g.hosts[h]; ok {
		return true
	}
	if _, err := netip.ParseAddr(h); err != nil || len(addrs) == 0 {
		return false // a name the call did not name, whatever it resolves to
	}
	for _, a := range addrs {
		if _, ok := g.addrs[a.Unmap()]; !ok {
			return false
		}
	}
	return true
}

// coversURL reports whether a document at raw stays within the grant: its
// host is one the grant covers.
func (g egressGrant) coversURL(raw string) bool {
	u, err := whatwg.Parse(raw)
	if err != nil {
		return false
	}
	switch u.Kind {
	case whatwg.HostIPv4, whatwg.HostIPv6:
		return g.covers(u.Host, []netip.Addr{u.Addr})
	case whatwg.HostDomain:
		return g.covers(u.Host, nil)
	}
	return false
}

func (g egressGrant) equal(o egressGrant) bool {
	return maps.Equal(g.hosts, o.hosts) && maps.Equal(g.addrs, o.addrs)
}

// hostList is the grant's hosts, for a log line.
func (g egressGrant) hostList() []string {
	out := make([]string, 0, len(g.hosts))
	for h := range g.hosts {
		out = append(out, h)
	}
	return out
}

// grantCall gives a session on the local browser the grant its call
// earns, before the call runs: the private hosts the call names, when it
// names any network target.
//
// It returns what ends the call's part: while the call runs, its pages may
// move among every host the call named (a mixed call that opens a public
// page, then localhost); when it ends on a page the grant does not cover,
// the grant ends there.
func grantCall(e *entry, vs []Verdict) (done func()) {
	lt, ok := e.tab.(*localTab)
	if !ok || lt.door == nil {
		return func() {}
	}
	g, names := grantOf(vs)
	if !names {
		return func() {}
	}
	lt.door.set(g)
	lt.door.nameCall(namedHosts(vs))
	return func() {
		lt.door.nameCall(nil)
		if landed := e.landedURL(); isWebURL(landed) {
			lt.door.e.leave(lt.door.key, landed)
		}
	}
}

// namedHosts are the hosts of every network URL a call names, public ones
// too.
func namedHosts(vs []Verdict) map[string]struct{} {
	out := map[string]struct{}{}
	for _, v := range vs {
		if v.Err == nil && (v.Class == ClassPublic || v.Class == ClassPrivate) && v.Host != "" && isWebURL(v.URL) {
			out[grantHost(v.Host)] = struct{}{}
		}
	}
	return out
}

// nameCall sets the hosts the running call named (nil: no call runs).
func (s *egressSession) nameCall(hosts map[string]struct{}) {
	s.mu.Lock()
	s.named = hosts
	s.mu.Unlock()
}

// egressSession is one browser context's door into the egress proxy: its
// listener, the transport its plain-HTTP requests are carried by (so no
// upstream connection is ever shared with another session), and its grant.
type egressSession struct {
	e   *egressProxy
	ln  net.Listener
	tr  *http.Transport
	key string // the browser context it serves, once bound

	mu     sync.Mutex
	grant  egressGrant
	named  map[string]struct{} // every host the running call named; nil between calls
	closed bool
}

// egressSessionKey is the context key of the session a proxy connection
// came in through.
type egressSessionKey struct{}

func doorOf(ctx context.Context) *egressSession {
	s, _ := ctx.Value(egressSessionKey{}).(*egressSession)
	return s
}

// openSession opens a new door: a listener of its own, granting nothing.
func (e *egressProxy) openSession() (*egressSession, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("hybroute: opening an egress door for a browser context: %w", err)
	}
	s := &egressSession{e: e}
	s.ln = &egressListener{Listener: ln, e: e, sess: s}
	s.tr = e.newTransport(func(ctx context.Context, network, addr string) (net.Conn, error) {
		return e.dialChecked(ctx, s, network, addr)
	})
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		_ = ln.Close()
		return nil, errEgressClosed
	}
	e.serving.Add(1)
	e.mu.Unlock()
	go func() {
		defer e.serving.Done()
		_ = e.srv.Serve(s.ln)
	}()
	return s, nil
}

// addr is the door's host:port, for the context's proxyServer.
func (s *egressSession) addr() string { return s.ln.Addr().String() }

// bind names the browser context the door serves, so that a page of it
// leaving the grant's hosts (leave) finds it.
func (s *egressSession) bind(key string) {
	s.e.mu.Lock()
	defer s.e.mu.Unlock()
	s.key = key
	if s.e.sessions == nil {
		s.e.sessions = map[string]*egressSession{}
	}
	s.e.sessions[key] = s
}

// set replaces the session's grant. Upstream connections to private
// hosts the new grant does not cover are closed: a kept-alive connection
// or a tunnel dialled under the old grant carries nothing more.
func (s *egressSession) set(g egressGrant) {
	s.mu.Lock()
	if s.closed || s.grant.equal(g) {
		s.mu.Unlock()
		return
	}
	s.grant = g
	drop := s.e.privateConns(s, g)
	s.mu.Unlock()
	for _, c := range drop {
		_ = c.Close()
	}
	s.tr.CloseIdleConnections()
}

// current is the session's grant now.
func (s *egressSession) current() egressGrant {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.grant
}

// close shuts the door: its listener, every connection through it and
// every upstream connection dialled for it.
func (s *egressSession) close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.grant = egressGrant{}
	s.mu.Unlock()
	_ = s.ln.Close()
	e := s.e
	e.mu.Lock()
	if s.key != "" && e.sessions[s.key] == s {
		delete(e.sessions, s.key)
	}
	var conns []*egressConn
	for c := range e.conns {
		if c.sess == s {
			conns = append(conns, c)
		}
	}
	e.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
	s.tr.CloseIdleConnections()
}

// leave is told of a document a page of the browser context key starts
// to load, before the request goes on: a document from a host the grant
// does not cover ends the grant.
func (e *egressProxy) leave(key, rawURL string) {
	e.mu.Lock()
	s := e.sessions[key]
	e.mu.Unlock()
	if s == nil {
		return
	}
	s.mu.Lock()
	g, named := s.grant, s.named
	s.mu.Unlock()
	if len(g.hosts) == 0 || g.coversURL(rawURL) || namedURL(named, rawURL) {
		return
	}
	s.set(egressGrant{})
	e.log.Debug("hybroute: egress grant ended: a page of the session loads a document from a host the call did not name",
		"hosts", g.hostList(), "url", redactURL(clipURL(rawURL)))
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

// privateConns are the upstream connections of s to private addresses
// that g does not cover. Called with s.mu held.
func (e *egressProxy) privateConns(s *egressSession, g egressGrant) []*egressConn {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []*egressConn
	for c := range e.conns {
		if c.sess == s && c.private && !g.covers(c.host, c.addrs) {
			out = append(out, c)
		}
	}
	return out
}

// admitPrivate is the grant's check on one connection to a private
// address: nil when the session's grant covers it. A connection of no
// session (the browser-wide door) is granted nothing.
func (s *egressSession) admitPrivate(v Verdict) error {
	if s != nil {
		s.mu.Lock()
		ok := !s.closed && s.grant.covers(v.Host, v.Addrs)
		s.mu.Unlock()
		if ok {
			return nil
		}
	}
	return blocked(v, ReasonPrivateNotNamed, errNotNamed)
}

var errNotNamed = errors.New("no call of this session named the host; a public page on the local browser reaches public addresses only")

// trackGranted registers an upstream connection to a private address
// dialled under s's grant, checking the grant once more under the lock
// that set takes: a grant dropped while the connection was dialled closes
// it here.
func (s *egressSession) trackGranted(c net.Conn, v Verdict) (net.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || !s.grant.covers(v.Host, v.Addrs) {
		_ = c.Close()
		return nil, blocked(v, ReasonPrivateNotNamed, errNotNamed)
	}
	ec := &egressConn{Conn: c, e: s.e, sess: s, private: true, host: v.Host, addrs: v.Addrs}
	return s.e.register(ec)
}
