package hybroute

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Connect-time enforcement on the local browser.
//
// URL literals are decided before a call and the guard watches the tab's
// documents, but a page can build a URL at run time, open a popup, run an
// out-of-process iframe or a worker, or use a name that resolves to
// metadata only when it is dialled. So every connection the local Chromium
// makes goes through an HTTP proxy of our own on 127.0.0.1
// (--proxy-server, with --proxy-bypass-list=<-loopback> so that even
// localhost is proxied, and QUIC off so nothing leaves over UDP). The proxy
// decides each connection when it is made, on the addresses it will
// actually dial:
//
//   - the name is resolved once, with the router's Resolver (an IP literal
//     is not resolved; localhost and *.localhost are loopback);
//   - the class is the most restrictive over all the answers (classify, the
//     same code as every other verdict);
//   - metadata is refused always; private only where the options let
//     private URLs run on the local browser: the router's policy decides,
//     as for every other verdict;
//   - only the addresses that were classified are dialled: no second
//     lookup, so DNS rebinding cannot swap them.
//
// A refusal is a 403 with a short text body (for a tunnel, Chromium turns
// it into a network error), and one warning per host and minute in the log.
//
// The proxy bounds what it holds (egressLimits): a cap on the connections
// from the browser, past which new ones are closed at once, and idle
// timeouts on tunnels, kept-alive proxy connections and pooled upstream
// connections, so a page (or another local process) cannot pile up
// connections that carry nothing.

const (
	// egressWarnEvery is how often one refused host is logged again.
	egressWarnEvery = time.Minute
	// egressDialTimeout bounds one dial of the default dialer.
	egressDialTimeout = 15 * time.Second
	// egressFullWarnEvery is how often a proxy at its connection cap says
	// so again.
	egressFullWarnEvery = time.Minute
)

// egressLimits are the bounds of one egress proxy. They are fields, not
// constants, so tests can shorten them.
type egressLimits struct {
	// maxConns caps the connections from the browser held at once. Past
	// it a new connection is closed as soon as it is accepted: the
	// browser sees a failed proxy connection for that one request.
	maxConns int
	// tunnelIdle ends a CONNECT tunnel that moved no byte either way for
	// that long. A tunnel that carries traffic in either direction (a
	// download, a WebSocket exchanging messages) is never cut.
	tunnelIdle time.Duration
	// keepAliveIdle closes a kept-alive proxy connection that waits that
	// long for its next request (the http.Server's IdleTimeout), and
	// bounds the wait for an upstream's response header.
	keepAliveIdle time.Duration
	// upstreamIdle closes a pooled upstream connection unused that long.
	upstreamIdle time.Duration
	// lookupTimeout bounds the name lookup of one connection, as the
	// guard bounds its own: a resolver that never answers must not hold a
	// connection (or close) for ever. A lookup that runs out refuses the
	// connection: nothing unclassified is dialled.
	lookupTimeout time.Duration
}

// defaultEgressLimits are the bounds of the sidecar's proxy. 512
// connections is 16 times what Chromium opens to one proxy for its own
// HTTP traffic (32 sockets per proxy), leaving room for WebSockets and
// WebRTC over TCP, which Chromium pools apart; at the cap a flood holds
// about 1,000 goroutines.
func defaultEgressLimits() egressLimits {
	return egressLimits{
		maxConns:      512,
		tunnelIdle:    2 * time.Minute,
		keepAliveIdle: 2 * time.Minute,
		upstreamIdle:  30 * time.Second,
		lookupTimeout: 10 * time.Second,
	}
}

func defaultEgressDial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: egressDialTimeout}
	return d.DialContext(ctx, network, addr)
}

// decideEgress is the connect-time verdict on one host:port, as the local
// Chromium asked for it. On success v.Addrs are the addresses to dial (the
// ones the class was decided on) and port the port. The error is the
// policy's refusal (a *BlockedError), or says that the name did not resolve
// (nothing to dial).
func decideEgress(ctx context.Context, pol *policy, hostport string) (v Verdict, port uint16, err error) {
	host, ps, err := net.SplitHostPort(hostport)
	if err != nil {
		v = invalid(Verdict{URL: hostport}, ReasonInvalidURL, err)
		return v, 0, v.Err
	}
	if len(host) > maxLoggedHost+2 { // a DNS name, or an IPv6 literal in brackets
		v = invalid(Verdict{URL: hostport[:maxLoggedHost]}, ReasonInvalidURL, errors.New("host name too long"))
		return v, 0, v.Err
	}
	p, perr := strconv.ParseUint(ps, 10, 16)
	if perr != nil || p == 0 {
		v = invalid(Verdict{URL: hostport}, ReasonInvalidURL, fmt.Errorf("bad port %q", ps))
		return v, 0, v.Err
	}
	// The same classifier as every other verdict: the host as Chromium
	// wrote it is already canonical, so the URL round-trips.
	v = pol.classify(ctx, "http://"+net.JoinHostPort(host, ps)+"/")
	v.URL = hostport
	if err := pol.refuse(v, onLocal); err != nil {
		return v, 0, err
	}
	if len(v.Addrs) == 0 {
		if c, ok := classifyName(v.Host); ok && c == ClassPrivate {
			// localhost and *.localhost: loopback, as Chromium itself
			// would resolve them, without asking DNS.
			v.Addrs = loopbackAddrs()
			return v, uint16(p), nil
		}
		rerr := v.ResolveErr
		if rerr == nil {
			rerr = errNoAnswers
		}
		return v, 0, fmt.Errorf("hybroute: egress: %s does not resolve, nothing to dial: %w", v.Host, rerr)
	}
	return v, uint16(p), nil
}

func loopbackAddrs() []netip.Addr {
	return []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()}
}

// egressProxy is the proxy of one local Chromium process: it starts before
// the process and is closed after it.
type egressProxy struct {
	pol  *policy
	log  *slog.Logger
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	lim    egressLimits
	ln     net.Listener
	srv    *http.Server
	tr     *http.Transport
	rp     *httputil.ReverseProxy
	ctx    context.Context // every request's base; cancelled by close
	cancel context.CancelFunc
	served chan struct{} // closed when Serve returns

	serving sync.WaitGroup // Serve loops of the doors (egress_grant.go)

	mu       sync.Mutex
	closed   bool
	sessions map[string]*egressSession // the doors of browser contexts, by context
	conns    map[*egressConn]struct{}  // open connections, both sides
	clients  int                       // of conns, those from the browser
	fullWarn time.Time                 // when the cap was last logged
	wg       sync.WaitGroup            // requests being handled, tunnels

	warnMu sync.Mutex
	warned map[string]time.Time
}

// startEgress starts the proxy on a loopback port, with the default
// limits. It decides every connection with pol and dials the allowed ones
// with dial (nil: a net.Dialer).
func startEgress(pol *policy, dial func(ctx context.Context, network, addr string) (net.Conn, error), logger *slog.Logger) (*egressProxy, error) {
	return startEgressWith(pol, dial, logger, defaultEgressLimits())
}

// startEgressWith is startEgress with limits of the caller's; a zero field
// takes the default (zero would refuse every connection or end every
// tunnel at once).
func startEgressWith(pol *policy, dial func(ctx context.Context, network, addr string) (net.Conn, error), logger *slog.Logger, lim egressLimits) (*egressProxy, error) {
	def := defaultEgressLimits()
	for _, f := range []struct{ v, d *time.Duration }{
		{&lim.tunnelIdle, &def.tunnelIdle}, {&lim.keepAliveIdle, &def.keepAliveIdle},
		{&lim.upstreamIdle, &def.upstreamIdle}, {&lim.lookupTimeout, &def.lookupTimeout},
	} {
		if *f.v <= 0 {
			*f.v = *f.d
		}
	}
	if lim.maxConns <= 0 {
		lim.maxConns = def.maxConns
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("hybroute: starting the egress proxy: %w", err)
	}
	e := &egressProxy{
		pol:    pol,
		log:    logger,
		dial:   dial,
		lim:    lim,
		conns:  make(map[*egressConn]struct{}),
		warned: make(map[string]time.Time),
		served: make(chan struct{}),
	}
	if e.dial == nil {
		e.dial = defaultEgressDial
	}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	e.ln = &egressListener{Listener: ln, e: e}
	// The browser-wide door's transport: connections of no session.
	e.tr = e.newTransport(func(ctx context.Context, network, addr string) (net.Conn, error) {
		return e.dialChecked(ctx, nil, network, addr)
	})
	e.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			// Absolute-form: the URL is the target. Keep it, the
			// query and the Host exactly as Chromium sent them.
			pr.Out.URL.RawQuery = pr.In.URL.RawQuery
			pr.Out.Host = pr.In.Host
		},
		// Each door's requests go through its own transport: a pooled
		// upstream connection is never reused by another session.
		Transport:     sessionTransport{e},
		FlushInterval: -1,
		ErrorHandler:  e.failRequest,
		ErrorLog:      log.New(io.Discard, "", 0),
	}
	e.srv = &http.Server{
		Handler:     http.HandlerFunc(e.serveHTTP),
		BaseContext: func(net.Listener) context.Context { return e.ctx },
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if ec, ok := c.(*egressConn); ok && ec.sess != nil {
				return context.WithValue(ctx, egressSessionKey{}, ec.sess)
			}
			return ctx
		},
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       lim.keepAliveIdle,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() {
		defer close(e.served)
		_ = e.srv.Serve(e.ln)
	}()
	return e, nil
}

// newTransport is a transport that dials through the egress check with
// dial, with the proxy's bounds.
func (e *egressProxy) newTransport(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         dial,
		DisableCompression:  true, // pass Chromium's Accept-Encoding and the body through untouched
		MaxIdleConnsPerHost: 8,
		MaxIdleConns:        64,
		IdleConnTimeout:     e.lim.upstreamIdle,
		// A request whose server sends nothing is idle too.
		ResponseHeaderTimeout: e.lim.keepAliveIdle,
	}
}

// sessionTransport carries a plain-HTTP request with the transport of the
// door it came through.
type sessionTransport struct{ e *egressProxy }

func (t sessionTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if s := doorOf(req.Context()); s != nil {
		return s.tr.RoundTrip(req)
	}
	return t.e.tr.RoundTrip(req)
}

// addr is the proxy's host:port.
func (e *egressProxy) addr() string { return e.ln.Addr().String() }

// close stops the proxy: no new connection, every open one closed, and it
// returns when every goroutine of the proxy is done or on its way out.
func (e *egressProxy) close() {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		e.wg.Wait()
		return
	}
	e.closed = true
	e.mu.Unlock()
	e.cancel()
	_ = e.srv.Close() // every door's listener too
	<-e.served
	e.serving.Wait()
	e.mu.Lock()
	conns := make([]*egressConn, 0, len(e.conns))
	for c := range e.conns {
		conns = append(conns, c)
	}
	sessions := make([]*egressSession, 0, len(e.sessions))
	for _, s := range e.sessions {
		sessions = append(sessions, s)
	}
	e.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
	for _, s := range sessions {
		s.close()
	}
	e.tr.CloseIdleConnections()
	e.wg.Wait()
	e.tr.CloseIdleConnections()
	for _, s := range sessions {
		s.tr.CloseIdleConnections()
	}
}

// begin counts one piece of work (a request, a tunnel direction) unless the
// proxy is closed.
func (e *egressProxy) begin() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.wg.Add(1)
	return true
}

func (e *egressProxy) serveHTTP(w http.ResponseWriter, req *http.Request) {
	if !e.begin() {
		http.Error(w, "hybroute: egress proxy closed", http.StatusServiceUnavailable)
		return
	}
	defer e.wg.Done()
	switch {
	case req.Method == http.MethodConnect:
		e.tunnel(w, req)
	case req.URL.Scheme == "http" && req.URL.Host != "":
		// Per request: Chromium sends many origins down one proxy
		// connection; the transport dials (and so decides) per host,
		// and reuses a connection only for the host it was dialled for.
		e.rp.ServeHTTP(w, req)
	default:
		http.Error(w, "hybroute: egress proxy: only CONNECT and absolute http:// requests", http.StatusBadRequest)
	}
}

// dialChecked is the egress check: decide, then dial only the decided
// addresses. sess is the door the connection came through (nil: the
// browser-wide one), whose grant a private address needs.
func (e *egressProxy) dialChecked(ctx context.Context, sess *egressSession, network, hostport string) (net.Conn, error) {
	// The HTTP transport dials in the background of a request: count the
	// dial, so close waits for it and no dial starts after close.
	if !e.begin() {
		return nil, errEgressClosed
	}
	defer e.wg.Done()
	// The HTTP transport dials on a context cut off from the request, so
	// nothing else would end a dial or a lookup when the proxy closes.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(e.ctx, cancel)()
	lctx, lcancel := context.WithTimeout(ctx, e.lim.lookupTimeout)
	v, port, err := decideEgress(lctx, e.pol, hostport)
	lcancel()
	if err == nil && v.Class == ClassPrivate {
		err = sess.admitPrivate(v)
	}
	var be *BlockedError
	switch {
	case errors.As(err, &be):
		e.pol.tel.refused(ctx, "egress", err)
		e.warn(ctx, hostport, v, err)
		return nil, err
	case err != nil:
		// A name that does not resolve: nothing to dial, nothing refused.
		e.log.LogAttrs(ctx, slog.LevelDebug, "hybroute: egress: no address to dial",
			slog.String("host", hostport), slog.String("error", err.Error()))
		return nil, err
	}
	if e.log.Enabled(ctx, slog.LevelDebug) {
		e.log.LogAttrs(ctx, slog.LevelDebug, "hybroute: egress allowed",
			slog.String("host", hostport), slog.String("class", v.Class.String()), slog.Any("addrs", v.Addrs))
	}
	var errs []error
	for _, a := range v.Addrs {
		c, err := e.dial(ctx, "tcp", netip.AddrPortFrom(a, port).String())
		if err == nil && v.Class == ClassPrivate {
			return sess.trackGranted(c, v)
		}
		if err == nil {
			return e.track(c, sess)
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("hybroute: egress: dialling %s: %w", hostport, errors.Join(errs...))
}

// warn logs a refusal, once per host (whatever the port) and
// egressWarnEvery. The key and the logged host are cut short, so a hostile
// name cannot grow the table or the log.
func (e *egressProxy) warn(ctx context.Context, hostport string, v Verdict, err error) {
	now := time.Now()
	host := hostport
	if h, _, serr := net.SplitHostPort(hostport); serr == nil {
		host = h
	}
	if len(host) > maxLoggedHost {
		host = host[:maxLoggedHost] + "…"
	}
	hostport = host
	e.warnMu.Lock()
	if last, ok := e.warned[hostport]; ok && now.Sub(last) < egressWarnEvery {
		e.warnMu.Unlock()
		return
	}
	if len(e.warned) >= 1024 {
		clear(e.warned) // bounded: a page cannot grow it without end
	}
	e.warned[hostport] = now
	e.warnMu.Unlock()
	msg := err.Error()
	if len(msg) > 2*maxLoggedHost {
		msg = msg[:2*maxLoggedHost] + "…"
	}
	e.log.LogAttrs(ctx, slog.LevelWarn, "hybroute: egress refused",
		slog.String("host", hostport), slog.String("class", v.Class.String()),
		slog.String("reason", reasonOf(err)), slog.Any("addrs", v.Addrs), slog.String("error", msg))
}

// errEgressClosed is the error of a dial asked for after close.
var errEgressClosed = errors.New("hybroute: egress proxy closed")

// maxLoggedHost is the longest host name DNS allows; longer ones are cut.
const maxLoggedHost = 253

// failRequest ends a plain-HTTP request the proxy could not carry. Any
// answer, a 403 too, would be a response the page could read or render as
// if the server had sent it; a connection closed without an answer is a
// network error (ERR_EMPTY_RESPONSE), as a direct connection that failed
// would have been.
func (e *egressProxy) failRequest(w http.ResponseWriter, req *http.Request, err error) {
	c, _, herr := http.NewResponseController(w).Hijack()
	if herr != nil {
		e.fail(w, req.URL.Host, err)
		return
	}
	_ = c.Close()
}

// fail answers a CONNECT the proxy will not tunnel: 403 with a short text
// body for a refusal, 502 for a name that does not resolve or a dial that
// failed. Chromium turns either into a network error
// (ERR_TUNNEL_CONNECTION_FAILED) and shows the page nothing of it.
func (e *egressProxy) fail(w http.ResponseWriter, hostport string, err error) {
	status, what := http.StatusBadGateway, "could not connect"
	if be, ok := errors.AsType[*BlockedError](err); ok {
		status, what = http.StatusForbidden, be.Reason.Phrase()+" ("+be.Reason.String()+")"
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	fmt.Fprintf(w, "hybroute: egress refused %s: %s\n", hostport, what)
}

// tunnel answers CONNECT host:port (https, wss, and ws, which Chromium also
// tunnels): decide, dial, 200, then splice both ways.
func (e *egressProxy) tunnel(w http.ResponseWriter, req *http.Request) {
	up, err := e.dialChecked(req.Context(), doorOf(req.Context()), "tcp", req.Host)
	if err != nil {
		e.fail(w, req.Host, err)
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
		_ = up.SetWriteDeadline(time.Now().Add(e.lim.tunnelIdle))
		if _, err := up.Write(b); err != nil {
			_ = cl.Close()
			_ = up.Close()
			return
		}
	}
	if !e.begin() {
		_ = cl.Close()
		_ = up.Close()
		return
	}
	t := &tunnel{idle: e.lim.tunnelIdle}
	t.touch()
	go func() {
		defer e.wg.Done()
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

// tunnel is one CONNECT tunnel's two directions and when either last moved
// a byte.
type tunnel struct {
	idle time.Duration
	last atomic.Int64 // unix nanoseconds
}

func (t *tunnel) touch() { t.last.Store(time.Now().UnixNano()) }

// pipe copies src to dst until either fails, or until the tunnel has moved
// nothing either way for t.idle: a read that waits longer than that ends
// only if the other direction was quiet too, and a write that makes no
// progress for that long ends it.
//
// It takes a buffer only once src has bytes to read (where the platform
// can wait for that), so an idle tunnel holds two goroutines and no
// buffer.
func (t *tunnel) pipe(dst, src net.Conn) {
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
func (t *tunnel) copyOnce(dst, src net.Conn) bool {
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

// egressConn is a connection the proxy holds (from Chromium, or dialled
// upstream), so close can close every one of them.
type egressConn struct {
	net.Conn
	e      *egressProxy
	client bool           // accepted from the browser: counted against the cap
	sess   *egressSession // the door it belongs to; nil: the browser-wide one
	// private: an upstream connection to a private address, dialled under
	// sess's grant, to host (as decided) at addrs; closed when the grant
	// no longer covers it.
	private bool
	host    string
	addrs   []netip.Addr
	once    sync.Once
}

func (c *egressConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.e.mu.Lock()
		delete(c.e.conns, c)
		if c.client {
			c.e.clients--
		}
		c.e.mu.Unlock()
	})
	return err
}

// track registers an upstream connection of sess; on a closed proxy it
// closes c and fails.
func (e *egressProxy) track(c net.Conn, sess *egressSession) (net.Conn, error) {
	return e.register(&egressConn{Conn: c, e: e, sess: sess})
}

// register registers an upstream connection; on a closed proxy it closes
// it and fails.
func (e *egressProxy) register(ec *egressConn) (net.Conn, error) {
	c := ec.Conn
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		_ = c.Close()
		return nil, errEgressClosed
	}
	e.conns[ec] = struct{}{}
	e.mu.Unlock()
	return ec, nil
}

// admit registers a connection from the browser. It closes c and fails on
// a closed proxy, and at the cap (with a warning at most once per
// egressFullWarnEvery).
func (e *egressProxy) admit(c net.Conn, sess *egressSession) (net.Conn, error) {
	ec := &egressConn{Conn: c, e: e, client: true, sess: sess}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		_ = c.Close()
		return nil, errEgressClosed
	}
	if e.clients >= e.lim.maxConns {
		now := time.Now()
		warn := now.Sub(e.fullWarn) >= egressFullWarnEvery
		if warn {
			e.fullWarn = now
		}
		e.mu.Unlock()
		_ = c.Close()
		if warn {
			e.log.LogAttrs(e.ctx, slog.LevelWarn, "hybroute: egress proxy at its connection cap; closing new connections until some end",
				slog.Int("max_conns", e.lim.maxConns))
		}
		return nil, errEgressFull
	}
	e.clients++
	e.conns[ec] = struct{}{}
	e.mu.Unlock()
	return ec, nil
}

// errEgressFull is the error of a connection refused at the cap.
var errEgressFull = errors.New("hybroute: egress proxy at its connection cap")

// egressListener tracks every connection it accepts.
type egressListener struct {
	net.Listener
	e    *egressProxy
	sess *egressSession // the door it is; nil: the browser-wide one
}

func (l *egressListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		tc, err := l.e.admit(c, l.sess)
		if err == nil {
			return tc, nil
		}
		// At the cap: c is closed, take the next. Closed meanwhile:
		// Serve sees the listener's error next.
	}
}
