// Package agenttest holds what the tests of the toolset, the command and the
// agent example share: routers that send traffic to loopback only, a static
// resolver, and a test site with a page a model would work on.
package agenttest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/testenv"
	"github.com/hybroute/hybroute/provider"
)

// PublicHost is a name the test resolver calls public and both browsers map
// to the loopback site: a "public" page the tests can serve.
const PublicHost = "shop.test"

// PublicAddr is the stand-in public address of PublicHost.
var PublicAddr = netip.MustParseAddr("93.184.215.14")

// HostRules maps PublicHost to loopback in a Chromium.
const HostRules = "MAP " + PublicHost + " 127.0.0.1"

// StaticResolver answers from a map and says "no such host" for the rest:
// tests never ask a real DNS server.
type StaticResolver map[string][]netip.Addr

// ErrNoSuchHost is the answer for a name the resolver does not know.
var ErrNoSuchHost = errors.New("no such host")

// LookupNetIP implements netpolicy.Resolver.
func (s StaticResolver) LookupNetIP(ctx context.Context, _, host string) ([]netip.Addr, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if a, ok := s[strings.ToLower(strings.TrimSuffix(host, "."))]; ok {
		return a, nil
	}
	return nil, ErrNoSuchHost
}

// Resolver is the tests' resolver: PublicHost is public.
func Resolver() StaticResolver {
	return StaticResolver{PublicHost: {PublicAddr}}
}

// LoopbackDial is an egress dialer that sends the stand-in public address
// to 127.0.0.1 (same port), dials loopback as it is, and refuses anything
// else, calling violation with the address it refused.
func LoopbackDial(violation func(addr string)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil {
			violation(addr)
			return nil, fmt.Errorf("test egress: %q is not an ip:port", addr)
		}
		switch a := ap.Addr().Unmap(); {
		case a.IsLoopback():
		case a == PublicAddr:
			addr = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), ap.Port()).String()
		default:
			violation(addr)
			return nil, fmt.Errorf("test egress: refusing %s: tests send traffic to loopback only", addr)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}

// RouterOptions are the options every test router takes: the static
// resolver, the loopback-only egress dialer (which fails t on anything
// else), host rules that put PublicHost on loopback, and a quiet logger.
func RouterOptions(t testing.TB, log io.Writer) []hybroute.Option {
	if log == nil {
		log = io.Discard
	}
	return []hybroute.Option{
		hybroute.WithResolver(Resolver()),
		hybroute.WithEgressDialer(LoopbackDial(func(addr string) {
			t.Errorf("the local browser tried to reach %s: tests send traffic to loopback only", addr)
		})),
		hybroute.WithChromiumFlags(map[string]any{"host-resolver-rules": HostRules}),
		hybroute.WithLogger(slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelInfo}))),
	}
}

// NewRouter is a test router for provider p (nil: local only), closed in
// t.Cleanup. It skips the test when no Chromium is installed.
func NewRouter(t testing.TB, p provider.Provider, opts ...hybroute.Option) *hybroute.Router {
	t.Helper()
	testenv.RequireChromium(t)
	r, err := hybroute.New(p, append(RouterOptions(t, nil), opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("closing the router: %v", err)
		}
	})
	return r
}

// Cloud is a fake Browserbase with a real Chromium behind it, on loopback.
type Cloud struct {
	API      *cloudtest.Server
	Provider *provider.Browserbase
}

// CloudUA is the user agent of the cloud Chromium, so a test can tell who
// fetched a page.
const CloudUA = "hybroute-agent-test-cloud"

// NewCloud starts the cloud: a Chromium and a Browserbase API in front.
func NewCloud(t testing.TB) *Cloud {
	t.Helper()
	testenv.RequireChromium(t)
	c := cloudtest.LaunchChromium(t, "--user-agent="+CloudUA, "--host-resolver-rules="+HostRules)
	api := cloudtest.NewServer(t, cloudtest.Browserbase, c.WSURL, cloudtest.WithAPIKey("bb_test_key_agent_0123456789"), cloudtest.WithProjectID("proj-agent"))
	return &Cloud{API: api, Provider: provider.NewBrowserbase(api.APIKey, api.ProjectID, provider.WithBaseURL(api.URL))}
}

// Site is the test site: a typical page with a heading, a form, a button
// that changes the page, a link, a long list, and console output.
type Site struct {
	*httptest.Server
	Port string

	mu   sync.Mutex
	hits []Hit
}

// Hit is one request the site received.
type Hit struct{ Host, Path, Query, UA string }

// NewSite serves the shop (Shop) on 127.0.0.1, closed in t.Cleanup, and
// records the requests it gets.
func NewSite(t testing.TB) *Site {
	s := &Site{}
	shop := Shop()
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits = append(s.hits, Hit{Host: r.Host, Path: r.URL.Path, Query: r.URL.RawQuery, UA: r.UserAgent()})
		s.mu.Unlock()
		shop.ServeHTTP(w, r)
	}))
	_, s.Port, _ = net.SplitHostPort(s.Listener.Addr().String())
	t.Cleanup(s.Close)
	return s
}

// URL is the site's URL for path under host (127.0.0.1, localhost, or
// PublicHost).
func (s *Site) URL(host, path string) string {
	return "http://" + net.JoinHostPort(host, s.Port) + path
}

// Hits returns the requests received so far.
func (s *Site) Hits() []Hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.hits)
}
