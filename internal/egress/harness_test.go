package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The owner of these tests decides from a table, as its user's policy
// would with a static resolver: each name has its addresses and a class.
// The public stand-ins live on loopback, so every dial of a test stays on
// this machine.
var (
	errMetadata  = errors.New("test: cloud metadata")
	errNotNamed  = errors.New("test: private address not named")
	errNoAnswers = errors.New("test: no such host")
)

// kind is the class a table row gives its addresses.
type kind int

const (
	public kind = iota
	private
	metadata
)

type row struct {
	addrs []netip.Addr
	kind  kind
}

// tableOwner decides by its table (the Config's functions are its methods). A name not in it does
// not resolve, unless strict, when it is refused. lookup, when set,
// answers instead of the table (a resolver that flips, hangs or blocks).
type tableOwner struct {
	rows    map[string]row
	strict  bool
	lookup  func(ctx context.Context, host string) (row, error)
	refused atomic.Int32
}

func loopback4() []netip.Addr { return []netip.Addr{netip.MustParseAddr("127.0.0.1")} }

// newOwner is the usual table: a public name and a metadata name, and the
// loopback literal, which is private.
func newOwner() *tableOwner {
	return &tableOwner{rows: map[string]row{
		"public.test": {loopback4(), public},
		"imds.test":   {[]netip.Addr{netip.MustParseAddr("169.254.169.254")}, metadata},
		"127.0.0.1":   {loopback4(), private},
	}}
}

func (o *tableOwner) Decide(ctx context.Context, hostport string) (Decision, error) {
	host, ps, err := net.SplitHostPort(hostport)
	if err != nil {
		return Decision{}, o.refusal("invalid", "invalid_url", err)
	}
	port, err := strconv.ParseUint(ps, 10, 16)
	if err != nil {
		return Decision{}, o.refusal("invalid", "invalid_url", err)
	}
	r, ok := o.rows[host]
	if o.lookup != nil {
		r, err = o.lookup(ctx, host)
		ok = err == nil
	}
	d := Decision{Host: host, Addrs: r.addrs, Port: uint16(port), Private: r.kind == private}
	switch {
	case !ok && o.strict:
		return d, o.refusal("private", "private", errNotNamed)
	case !ok:
		return d, fmt.Errorf("%s: %w", host, errors.Join(errNoAnswers, err))
	case r.kind == metadata:
		return d, o.refusal("metadata", "metadata", errMetadata)
	}
	return d, nil
}

func (o *tableOwner) refusal(class, reason string, err error) error {
	return &Refusal{Class: class, Reason: reason, Phrase: strings.TrimPrefix(err.Error(), "test: "), Err: err}
}

func (o *tableOwner) Ungranted(hostport string, d Decision) error {
	return o.refusal("private", "private_not_named", fmt.Errorf("%s: %w", hostport, errNotNamed))
}

func (o *tableOwner) Refused(context.Context, error) { o.refused.Add(1) }

// loopbackOnly is the tests' dialer: it dials loopback and fails the test
// on anything else, so no test sends traffic off this machine.
func loopbackOnly(t testing.TB) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil || !ap.Addr().Unmap().IsLoopback() {
			t.Errorf("the proxy was asked to dial %s", addr)
			return nil, fmt.Errorf("test: refusing to dial %s", addr)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}

// start starts a proxy deciding with owner and the loopback-only dialer;
// Close runs at the end of the test.
func start(t testing.TB, owner *tableOwner, cfg Config) *Proxy {
	t.Helper()
	cfg.Decide, cfg.Ungranted, cfg.Refused = owner.Decide, owner.Ungranted, owner.Refused
	if cfg.Dial == nil {
		cfg.Dial = loopbackOnly(t)
	}
	p, err := Start(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

// grantedDoor is a door of p whose grant covers 127.0.0.1, as a session
// whose call named it has: the proxy's bounds are the same for every door,
// and the browser-wide one reaches no private address.
func grantedDoor(t testing.TB, p *Proxy) *Door {
	t.Helper()
	d, err := p.OpenDoor(context.Background())
	require.NoError(t, err)
	var g Grant
	g.Add("127.0.0.1", loopback4()...)
	d.Set(g)
	return d
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

func (s *silentServer) addr() string { return s.ln.Addr().String() }

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

// records is a slog handler that keeps every record's text, for tests
// that count what was logged.
type records struct {
	mu    sync.Mutex
	lines []string
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *records) WithGroup(string) slog.Handler            { return r }

func (r *records) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	r.mu.Lock()
	r.lines = append(r.lines, b.String())
	r.mu.Unlock()
	return nil
}

// count is the number of records whose text contains substr.
func (r *records) count(substr string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, l := range r.lines {
		if strings.Contains(l, substr) {
			n++
		}
	}
	return n
}

// size is the length of every record's text.
func (r *records) size() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, l := range r.lines {
		n += len(l)
	}
	return n
}

func (p *Proxy) counts() (conns, clients int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns), p.clients
}

func slogOf(r *records) *slog.Logger { return slog.New(r) }
