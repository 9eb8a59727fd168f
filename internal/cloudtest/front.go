package cloudtest

import (
	"bufio"
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The public-looking names the fronts answer for, in the providers' real URL
// shapes (the .test top-level domain is reserved, so none of them can ever
// resolve to a real host). Front.Client maps each to the front's loopback
// address, port or none.
const (
	// BrowserbaseConnectHost stands in for connect.browserbase.com.
	BrowserbaseConnectHost = "connect.browserbase.test"
	// SteelConnectHost stands in for connect.steel.dev.
	SteelConnectHost = "connect.steel.test"
	// BrowserUseCDPDomain stands in for Browser Use's CDP hosts: each
	// session gets <id>.cdp.browser-use.test.
	BrowserUseCDPDomain = "cdp.browser-use.test"
	// BrowserlessHost stands in for a browserless region host.
	BrowserlessHost = "cdp.browserless.test"
)

// DefaultFrontNames are the names a Front's certificate holds unless
// WithFrontNames says otherwise.
var DefaultFrontNames = []string{BrowserbaseConnectHost, SteelConnectHost, "*." + BrowserUseCDPDomain, BrowserlessHost,
	BrowserlessConnectHost, AnchorConnectHost, KernelConnectHost, HyperbrowserConnectHost, BrowserCashConnectHost}

// Front is a TLS websocket front for a test Chromium, as a cloud provider's
// connect endpoint is: it answers wss:// URLs with no port and no
// /devtools/browser/ path (wss://connect.browserbase.test?signingKey=K),
// checks the key, and proxies the websocket upgrade to the Chromium's real
// ws://127.0.0.1:PORT/devtools/browser/ID. Its certificate is self-signed
// for Names; Client trusts it and sends those names to the front, so a test
// dials the real URL shape over real TLS while every byte stays on loopback.
type Front struct {
	// Addr is 127.0.0.1:PORT, where the front listens.
	Addr string
	// URL is https://127.0.0.1:PORT.
	URL string
	// Names are the DNS names of the certificate, which Client maps to Addr.
	Names []string
	// BrowserPath is the Chromium's websocket path, /devtools/browser/ID.
	// An upgrade on "/" or on this path reaches the browser.
	BrowserPath string

	srv       *httptest.Server
	pool      *x509.CertPool
	proxy     *httputil.ReverseProxy
	authorize func(*http.Request) error
	anyPath   bool // the authorize check judges the path too
	version   http.HandlerFunc
	closing   chan struct{}
	closeOnce sync.Once

	mu    sync.Mutex
	conns map[net.Conn]struct{} // proxied websockets, closed by DropConnections

	upgradeQ replyQueue
	requests requestLog

	upgrades, refused atomic.Int64
}

// FrontOption configures NewFront.
type FrontOption func(*Front)

// WithFrontNames sets the DNS names of the front's certificate (default
// DefaultFrontNames). "*.example.test" covers one label under it.
func WithFrontNames(names ...string) FrontOption {
	return func(f *Front) { f.Names = append([]string(nil), names...) }
}

// WithFrontAuth sets the check of a websocket upgrade: a non-nil error
// refuses it with 401. The default accepts every upgrade.
func WithFrontAuth(check func(r *http.Request) error) FrontOption {
	return func(f *Front) { f.authorize = check }
}

// WithFrontVersion makes the front answer GET .../json/version with h, as an
// HTTP discovery endpoint (Browser Use's https cdpUrl) does.
func WithFrontVersion(h http.HandlerFunc) FrontOption {
	return func(f *Front) { f.version = h }
}

// withFrontAnyPath lets upgrades on any path reach the authorize check,
// which must then judge the path: providers whose websocket URLs have a
// path of their own (browserless's /session/connect/ID).
func withFrontAnyPath() FrontOption { return func(f *Front) { f.anyPath = true } }

// QueryKey is a WithFrontAuth check: the query parameter name must be key.
func QueryKey(name, key string) func(*http.Request) error {
	return func(r *http.Request) error {
		if got := r.URL.Query().Get(name); got != key {
			return fmt.Errorf("bad or missing %s", name)
		}
		return nil
	}
}

// NewFront starts a TLS front for the Chromium whose DevTools websocket is
// wsURL (see LaunchChromium). It is closed in t.Cleanup.
func NewFront(t testing.TB, wsURL string, opts ...FrontOption) *Front {
	t.Helper()
	target, err := url.Parse(wsURL)
	if err != nil || target.Scheme != "ws" || target.Host == "" {
		t.Fatalf("cloudtest: NewFront needs the ws://127.0.0.1:PORT/devtools/browser/ID of a Chromium, got %q", wsURL)
	}
	if a, err := netip.ParseAddrPort(target.Host); err != nil || !a.Addr().IsLoopback() {
		t.Fatalf("cloudtest: NewFront proxies to loopback only, got %q", target.Host)
	}
	f := &Front{
		Names:       DefaultFrontNames,
		BrowserPath: target.Path,
		authorize:   func(*http.Request) error { return nil },
		closing:     make(chan struct{}),
		conns:       map[net.Conn]struct{}{},
	}
	for _, o := range opts {
		o(f)
	}
	cert, leaf, err := selfSigned(f.Names)
	if err != nil {
		t.Fatalf("cloudtest: making the front's certificate: %v", err)
	}
	f.pool = x509.NewCertPool()
	f.pool.AddCert(leaf)

	var d net.Dialer
	f.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = target.Host
			pr.Out.URL.Path, pr.Out.URL.RawPath = target.Path, ""
			// The key stays at the front, as at a provider's edge.
			pr.Out.URL.RawQuery = ""
			// Chromium refuses a DevTools connection whose Host header is
			// not an IP address or localhost (a DNS-rebinding guard), so
			// the public-looking name must not reach it.
			pr.Out.Host = target.Host
		},
		Transport: &http.Transport{
			Proxy: nil,
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return d.DialContext(ctx, network, target.Host)
			},
		},
		ErrorLog: log.New(io.Discard, "", 0),
	}

	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	// A test that dials without trusting the certificate makes the server
	// log a handshake error; that is the test's point, not noise to print.
	f.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	f.srv.StartTLS()
	f.Addr = f.srv.Listener.Addr().String()
	f.URL = f.srv.URL
	t.Cleanup(f.Close)
	return f
}

// selfSigned makes a certificate for names, localhost and the loopback
// addresses that is its own root: a test trusts exactly this front.
func selfSigned(names []string) (tls.Certificate, *x509.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "hybroute cloudtest front"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              append(append([]string(nil), names...), "localhost"),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, leaf, nil
}

// RootCAs returns a pool holding only the front's certificate.
func (f *Front) RootCAs() *x509.CertPool { return f.pool.Clone() }

// Client returns an HTTP client for tests that trusts the front's
// certificate (and no other) and dials each of Names, on any port or none,
// at Addr; loopback addresses are dialled as given, anything else fails
// without a packet sent. Like the providers' default client it times out
// after 60 s and does not follow redirects.
func (f *Front) Client() *http.Client {
	return loopbackClient(f.pool, f.Addr, f.Names)
}

// loopbackClient is a test client that dials names at addr and loopback as
// given. pool nil trusts the system roots (and so no test certificate).
func loopbackClient(pool *x509.CertPool, addr string, names []string) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second}
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, hostport string) (net.Conn, error) {
			to, err := route(hostport, addr, names)
			if err != nil {
				return nil, err
			}
			return d.DialContext(ctx, network, to)
		},
		TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: 10 * time.Second,
		IdleConnTimeout:     30 * time.Second,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   60 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// route maps hostport to the address a test may dial.
func route(hostport, addr string, names []string) (string, error) {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", err
	}
	if addr != "" && nameMatches(host, names) {
		return addr, nil
	}
	if a, err := netip.ParseAddr(host); err == nil && a.Unmap().IsLoopback() {
		return hostport, nil
	}
	if strings.EqualFold(host, "localhost") {
		return hostport, nil
	}
	return "", fmt.Errorf("cloudtest: refusing to dial %s: tests send traffic to loopback only", hostport)
}

// nameMatches reports whether host is one of names, where "*.x" matches a
// single label under x, as a certificate does.
func nameMatches(host string, names []string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, n := range names {
		n = strings.ToLower(n)
		if rest, ok := strings.CutPrefix(n, "*."); ok {
			if label, ok := strings.CutSuffix(host, "."+rest); ok && label != "" && !strings.Contains(label, ".") {
				return true
			}
			continue
		}
		if host == n {
			return true
		}
	}
	return false
}

// OnUpgrade queues scripted answers for the next websocket upgrades, before
// the key check: a Status refuses the upgrade with it, Hang never answers.
func (f *Front) OnUpgrade(r ...Reply) { f.upgradeQ.push(r...) }

// Upgrades counts the upgrades that passed the key check and were proxied
// to the Chromium.
func (f *Front) Upgrades() int64 { return f.upgrades.Load() }

// Refused counts the upgrades refused: by the key check, by a scripted
// answer, or for a wrong path.
func (f *Front) Refused() int64 { return f.refused.Load() }

// Requests returns a copy of every request the front received, in order.
func (f *Front) Requests() []Request { return f.requests.all() }

// DropConnections closes every proxied websocket at once, as a provider
// does when its browser goes away. New upgrades are still served.
func (f *Front) DropConnections() {
	f.mu.Lock()
	conns := f.conns
	f.conns = map[net.Conn]struct{}{}
	f.mu.Unlock()
	for c := range conns {
		_ = c.Close()
	}
}

// Close stops the front: hanging answers end, proxied websockets close.
func (f *Front) Close() {
	f.closeOnce.Do(func() {
		close(f.closing)
		f.srv.Close()
		f.DropConnections()
	})
}

func (f *Front) serve(w http.ResponseWriter, r *http.Request) {
	f.requests.add(r, nil)
	switch {
	case isUpgrade(r):
		f.serveUpgrade(w, r)
	case f.version != nil && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/json/version"):
		f.version(w, r)
	default:
		http.Error(w, "not found", http.StatusNotFound)
	}
}

func isUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket") &&
		strings.Contains(strings.ToLower(r.Header.Get("Connection")), "upgrade")
}

func (f *Front) serveUpgrade(w http.ResponseWriter, r *http.Request) {
	rep, scripted := f.upgradeQ.pop()
	if scripted {
		f.refused.Add(1)
		if rep.Hang {
			select {
			case <-r.Context().Done():
			case <-f.closing:
			}
			return
		}
		st := rep.Status
		if st == 0 {
			st = http.StatusServiceUnavailable
		}
		http.Error(w, cmp.Or(rep.Body, http.StatusText(st)), st)
		return
	}
	if p := r.URL.Path; !f.anyPath && p != "" && p != "/" && p != f.BrowserPath {
		f.refused.Add(1)
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if err := f.authorize(r); err != nil {
		f.refused.Add(1)
		http.Error(w, "Unauthorized: "+err.Error(), http.StatusUnauthorized)
		return
	}
	f.upgrades.Add(1)
	f.proxy.ServeHTTP(&hijackTracker{ResponseWriter: w, f: f}, r)
}

// hijackTracker records the connection ReverseProxy hijacks for a
// websocket, so DropConnections and Close can cut it.
type hijackTracker struct {
	http.ResponseWriter
	f *Front
}

func (h *hijackTracker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return c, rw, err
	}
	h.f.mu.Lock()
	closed := false
	select {
	case <-h.f.closing:
		closed = true
	default:
		h.f.conns[c] = struct{}{}
	}
	h.f.mu.Unlock()
	if closed {
		_ = c.Close()
	}
	return c, rw, err
}

// Unwrap lets http.ResponseController reach the writer's other methods.
func (h *hijackTracker) Unwrap() http.ResponseWriter { return h.ResponseWriter }
