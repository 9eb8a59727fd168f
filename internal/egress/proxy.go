package egress

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
	"sync"
	"time"
)

// Config is how a proxy dials and logs, and its bounds. Its zero value
// is usable.
type Config struct {
	// Decide decides hostport (host:port, as the browser asked for it).
	// It resolves a name once: the proxy dials the decision's Addrs and
	// nothing else. A refusal is a *Refusal; any other error means there
	// is nothing to dial (a name that does not resolve), and the proxy
	// answers it as a failed connection. On a refusal the Decision carries
	// what is known (Host, Addrs) for the log. Nil refuses every
	// connection. The proxy has no rules of its own, so the connect-time
	// check cannot disagree with the rest of its user's checks.
	Decide func(ctx context.Context, hostport string) (Decision, error)
	// Ungranted is the refusal (a *Refusal) of a connection to hostport,
	// at the private addresses d decided, for a door whose grant does not
	// cover it. Nil, or a nil answer, still refuses it.
	Ungranted func(hostport string, d Decision) error
	// Refused records one refusal (a *Refusal) of Decide or Ungranted.
	// Nil: the proxy's own log line only.
	Refused func(ctx context.Context, err error)
	// Dial dials an address Decide allowed (an IP:port it decided).
	// Nil: a net.Dialer with a 15 s timeout.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Log takes one warning per refused host and minute, the cap's
	// warning and the debug lines of each connection. Nil: nothing is
	// logged.
	Log *slog.Logger
	// Limits bound what the proxy holds; a zero field takes the one of
	// DefaultLimits.
	Limits Limits
}

// Proxy is the egress proxy of one browser process: it starts before the
// process and is closed after it.
type Proxy struct {
	cfg  Config // its decisions, with the defaults filled in
	log  *slog.Logger
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	lim    Limits
	ln     net.Listener
	srv    *http.Server
	tr     *http.Transport
	rp     *httputil.ReverseProxy
	ctx    context.Context // every request's base; cancelled by Close
	cancel context.CancelFunc
	served chan struct{} // closed when Serve returns

	serving sync.WaitGroup // Serve loops of the doors

	mu       sync.Mutex
	closed   bool
	doors    map[string]*Door   // the doors of browser contexts, by context
	conns    map[*conn]struct{} // open connections, both sides
	clients  int                // of conns, those from the browser
	fullWarn time.Time          // when the cap was last logged
	wg       sync.WaitGroup     // requests being handled, tunnels

	warnMu sync.Mutex
	warned map[string]time.Time
}

// errNoDecision refuses every connection of a Config without Decide (fail
// closed).
var errNoDecision = &Refusal{Class: "unknown", Reason: "no_decision", Phrase: "no rule decides this connection",
	Err: errors.New("hybroute: egress: the proxy has no decision for this connection")}

// errClosed is the error of a dial asked for after Close.
var errClosed = errors.New("hybroute: egress proxy closed")

// Start starts a proxy on a loopback port that decides every connection
// with cfg.Decide. ctx bounds the start only; the proxy runs until Close.
func Start(ctx context.Context, cfg Config) (*Proxy, error) {
	if cfg.Decide == nil {
		cfg.Decide = func(context.Context, string) (Decision, error) { return Decision{}, errNoDecision }
	}
	if cfg.Ungranted == nil {
		cfg.Ungranted = func(string, Decision) error { return nil }
	}
	if cfg.Refused == nil {
		cfg.Refused = func(context.Context, error) {}
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("hybroute: starting the egress proxy: %w", err)
	}
	p := &Proxy{
		cfg:    cfg,
		log:    cfg.Log,
		dial:   cfg.Dial,
		lim:    cfg.Limits.orDefault(),
		conns:  make(map[*conn]struct{}),
		warned: make(map[string]time.Time),
		served: make(chan struct{}),
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.dial == nil {
		p.dial = defaultDial
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.ln = &listener{Listener: ln, p: p}
	// The browser-wide door's transport: connections of no session.
	p.tr = p.newTransport(func(ctx context.Context, network, addr string) (net.Conn, error) {
		return p.dialChecked(ctx, nil, network, addr)
	})
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			// Absolute-form: the URL is the target. Keep it, the
			// query and the Host exactly as Chromium sent them.
			pr.Out.URL.RawQuery = pr.In.URL.RawQuery
			pr.Out.Host = pr.In.Host
		},
		// Each door's requests go through its own transport: a pooled
		// upstream connection is never reused by another session.
		Transport:     doorTransport{p},
		FlushInterval: -1,
		ErrorHandler:  p.failRequest,
		ErrorLog:      log.New(io.Discard, "", 0),
	}
	p.srv = &http.Server{
		Handler:     http.HandlerFunc(p.serveHTTP),
		BaseContext: func(net.Listener) context.Context { return p.ctx },
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if pc, ok := c.(*conn); ok && pc.door != nil {
				return context.WithValue(ctx, doorKey{}, pc.door)
			}
			return ctx
		},
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       p.lim.KeepAliveIdle,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() {
		defer close(p.served)
		_ = p.srv.Serve(p.ln)
	}()
	return p, nil
}

// newTransport is a transport that dials through the egress check with
// dial, with the proxy's bounds.
func (p *Proxy) newTransport(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         dial,
		DisableCompression:  true, // pass Chromium's Accept-Encoding and the body through untouched
		MaxIdleConnsPerHost: 8,
		MaxIdleConns:        64,
		IdleConnTimeout:     p.lim.UpstreamIdle,
		// A request whose server sends nothing is idle too.
		ResponseHeaderTimeout: p.lim.KeepAliveIdle,
	}
}

// doorTransport carries a plain-HTTP request with the transport of the
// door it came through.
type doorTransport struct{ p *Proxy }

func (t doorTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if d := doorOf(req.Context()); d != nil {
		return d.tr.RoundTrip(req)
	}
	return t.p.tr.RoundTrip(req)
}

// Addr is the host:port of the browser-wide door, for --proxy-server.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops the proxy: no new connection, every open one closed, and it
// returns when every goroutine of the proxy is done or on its way out.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return
	}
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	_ = p.srv.Close() // every door's listener too
	<-p.served
	p.serving.Wait()
	p.mu.Lock()
	conns := make([]*conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	doors := make([]*Door, 0, len(p.doors))
	for _, d := range p.doors {
		doors = append(doors, d)
	}
	p.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
	for _, d := range doors {
		d.Close()
	}
	p.tr.CloseIdleConnections()
	p.wg.Wait()
	p.tr.CloseIdleConnections()
	for _, d := range doors {
		d.tr.CloseIdleConnections()
	}
}

// begin counts one piece of work (a request, a tunnel direction) unless the
// proxy is closed.
func (p *Proxy) begin() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.wg.Add(1)
	return true
}

func (p *Proxy) serveHTTP(w http.ResponseWriter, req *http.Request) {
	if !p.begin() {
		http.Error(w, "hybroute: egress proxy closed", http.StatusServiceUnavailable)
		return
	}
	defer p.wg.Done()
	switch {
	case req.Method == http.MethodConnect:
		p.tunnel(w, req)
	case req.URL.Scheme == "http" && req.URL.Host != "":
		// Per request: Chromium sends many origins down one proxy
		// connection; the transport dials (and so decides) per host,
		// and reuses a connection only for the host it was dialled for.
		p.rp.ServeHTTP(w, req)
	default:
		http.Error(w, "hybroute: egress proxy: only CONNECT and absolute http:// requests", http.StatusBadRequest)
	}
}

// dialChecked is the egress check: decide, then dial only the decided
// addresses. door is the one the connection came through (nil: the
// browser-wide one), whose grant a private address needs.
func (p *Proxy) dialChecked(ctx context.Context, door *Door, network, hostport string) (net.Conn, error) {
	// The HTTP transport dials in the background of a request: count the
	// dial, so Close waits for it and no dial starts after Close.
	if !p.begin() {
		return nil, errClosed
	}
	defer p.wg.Done()
	// The HTTP transport dials on a context cut off from the request, so
	// nothing else would end a dial or a lookup when the proxy closes.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(p.ctx, cancel)()
	lctx, lcancel := context.WithTimeout(ctx, p.lim.LookupTimeout)
	d, err := p.cfg.Decide(lctx, hostport)
	lcancel()
	if err == nil && d.Private {
		err = p.admitPrivate(door, hostport, d)
	}
	if r, ok := errors.AsType[*Refusal](err); ok {
		p.cfg.Refused(ctx, err)
		p.warn(ctx, hostport, d, r)
		door.record(hostport, Refused, err)
		return nil, err
	}
	if err != nil {
		// A name that does not resolve: nothing to dial, nothing refused.
		p.log.LogAttrs(ctx, slog.LevelDebug, "hybroute: egress: no address to dial",
			slog.String("host", hostport), slog.String("error", err.Error()))
		if ctx.Err() == nil {
			door.record(hostport, Unresolved, err)
		}
		return nil, err
	}
	if p.log.Enabled(ctx, slog.LevelDebug) {
		p.log.LogAttrs(ctx, slog.LevelDebug, "hybroute: egress allowed",
			slog.String("host", hostport), slog.String("class", d.class()), slog.Any("addrs", d.Addrs))
	}
	var errs []error
	for _, a := range d.Addrs {
		c, err := p.dial(ctx, "tcp", netip.AddrPortFrom(a, d.Port).String())
		if err == nil && d.Private {
			return door.trackGranted(c, hostport, d)
		}
		if err == nil {
			return p.track(c, door)
		}
		errs = append(errs, err)
	}
	err = fmt.Errorf("hybroute: egress: dialling %s: %w", hostport, errors.Join(errs...))
	if ctx.Err() == nil {
		// Not the browser giving up on the request: the host's fault.
		door.record(hostport, Unreachable, err)
	}
	return nil, err
}

// class names the class of an allowed decision, for the log.
func (d Decision) class() string {
	if d.Private {
		return "private"
	}
	return "public"
}

// failRequest ends a plain-HTTP request the proxy could not carry. Any
// answer, a 403 too, would be a response the page could read or render as
// if the server had sent it; a connection closed without an answer is a
// network error (ERR_EMPTY_RESPONSE), as a direct connection that failed
// would have been.
func (p *Proxy) failRequest(w http.ResponseWriter, req *http.Request, err error) {
	c, _, herr := http.NewResponseController(w).Hijack()
	if herr != nil {
		fail(w, req.URL.Host, err)
		return
	}
	_ = c.Close()
}

// fail answers a CONNECT the proxy will not tunnel: 403 with a short text
// body for a refusal, 502 for a name that does not resolve or a dial that
// failed. Chromium turns either into a network error
// (ERR_TUNNEL_CONNECTION_FAILED) and shows the page nothing of it.
func fail(w http.ResponseWriter, hostport string, err error) {
	status, what := http.StatusBadGateway, "could not connect"
	if r, ok := errors.AsType[*Refusal](err); ok {
		status, what = http.StatusForbidden, r.Phrase+" ("+r.Reason+")"
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	fmt.Fprintf(w, "hybroute: egress refused %s: %s\n", hostport, what)
}
