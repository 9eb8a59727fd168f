package hybroutetest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hybroute/hybroute/netpolicy"
)

// The names a test serves its pages under. Every name under .test is a
// public host to the Router ([Resolver] answers [PublicAddr] for it) and
// to the browsers (the Cloud's and the local Chromium map .test to
// loopback), but for [PrivateHost], a private one. No lookup and no
// connection leaves loopback.
const (
	// PublicHost is the name a [Site] serves under by default.
	PublicHost = "shop.test"
	// PrivateHost is a name the Router finds private, as an intranet's:
	// its pages run on the local browser only (or are refused with
	// ErrPrivate, with hybroute.WithAutoLocalForPrivateURLs(false)).
	PrivateHost = "intranet.test"
	// MetadataHost is the cloud metadata service's name, which the
	// Router refuses on every route, with no lookup.
	MetadataHost = "metadata.google.internal"
)

// PublicAddr and PrivateAddr are the addresses [Resolver] gives the .test
// names: stand-ins that [EgressDialer] sends to 127.0.0.1.
var (
	PublicAddr  = netip.MustParseAddr("93.184.215.14")
	PrivateAddr = netip.MustParseAddr("10.0.0.5")
)

// hostRules maps the .test names to loopback in a Chromium, so a page of a
// Site loads on the Cloud's browser by its name, as on a public host.
const hostRules = "MAP *.test 127.0.0.1"

// ErrNoSuchHost is what [Resolver] says for a name outside .test: a test
// never asks a real DNS server.
var ErrNoSuchHost = errors.New("hybroutetest: no such host (only names under .test resolve)")

// resolver answers the .test names from the table above.
type resolver struct{}

// Resolver is the Router's resolver of a test (hybroute.WithResolver):
// [PrivateHost] is [PrivateAddr], every other name under .test is
// [PublicAddr], and the rest fail with [ErrNoSuchHost].
func Resolver() netpolicy.Resolver { return resolver{} }

func (resolver) LookupNetIP(ctx context.Context, _, host string) ([]netip.Addr, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	switch {
	case host == PrivateHost:
		return []netip.Addr{PrivateAddr}, nil
	case strings.HasSuffix(host, ".test"):
		return []netip.Addr{PublicAddr}, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrNoSuchHost, host)
}

// EgressDialer is the local browser's dialer of a test
// (hybroute.WithEgressDialer): the stand-in addresses go to 127.0.0.1 on
// the same port, loopback stays loopback, and anything else fails t and is
// not dialled.
func EgressDialer(t testing.TB) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil {
			t.Errorf("hybroutetest: the local browser dialled %q, not an ip:port", addr)
			return nil, fmt.Errorf("hybroutetest: %q is not an ip:port", addr)
		}
		switch a := ap.Addr().Unmap(); {
		case a.IsLoopback():
		case a == PublicAddr || a == PrivateAddr:
			addr = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), ap.Port()).String()
		default:
			t.Errorf("hybroutetest: the local browser tried to reach %s: a test stays on loopback", addr)
			return nil, fmt.Errorf("hybroutetest: refusing %s: a test stays on loopback", addr)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}

// Site is a web site on 127.0.0.1 that a test serves under the .test
// names, so the Router and both browsers take its pages for a public
// host's (or, under [PrivateHost], a private one's). It records who
// fetched what.
type Site struct {
	srv  *httptest.Server
	port string

	mu   sync.Mutex
	hits []Hit
}

// Hit is one request the site received.
type Hit struct {
	Host string // the name, without the port
	Path string
	// Browser is "cloud" or "local" for a request of the Cloud's browser
	// or of a NewRouter Router's local one (by their user agents), ""
	// otherwise.
	Browser string
}

// NewSite serves h (nil: every path is a small page titled with its path)
// until the test ends.
func NewSite(t testing.TB, h http.Handler) *Site {
	t.Helper()
	if h == nil {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/favicon.ico" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, `<!doctype html><title>%s</title><h1 style="font:48px sans-serif">Revenue: 42</h1>`,
				strings.NewReplacer("<", "&lt;", "&", "&amp;").Replace(r.URL.Path))
		})
	}
	s := &Site{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		hit := Hit{Host: host, Path: r.URL.Path}
		switch r.UserAgent() {
		case CloudUserAgent:
			hit.Browser = "cloud"
		case LocalUserAgent:
			hit.Browser = "local"
		}
		s.mu.Lock()
		s.hits = append(s.hits, hit)
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	_, s.port, _ = net.SplitHostPort(s.srv.Listener.Addr().String())
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the URL of path on [PublicHost].
func (s *Site) URL(path string) string { return s.URLOn(PublicHost, path) }

// URLOn is the URL of path on host, a name under .test.
func (s *Site) URLOn(host, path string) string {
	return "http://" + net.JoinHostPort(host, s.port) + path
}

// Hits returns the requests received so far, in order.
func (s *Site) Hits() []Hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.hits)
}

// FetchedBy is the browser ("cloud" or "local") that fetched path last, ""
// when none did.
func (s *Site) FetchedBy(path string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.hits) - 1; i >= 0; i-- {
		if s.hits[i].Path == path {
			return s.hits[i].Browser
		}
	}
	return ""
}
