package hybroute

import (
	"context"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/dnstest"
	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/provider"
	"github.com/hybroute/hybroute/route"
)

// staticResolver answers from a table, as a resolver that already has the
// answer cached would. Names not in the table fail like NXDOMAIN.
type staticResolver = dnstest.Static

func addrs(ss ...string) []netip.Addr { return dnstest.Addrs(ss...) }

// testResolver holds the names the verdict tests decide.
var testResolver = dnstest.Examples

func newTestRouter(t testing.TB, p provider.Provider, opts ...Option) *Router {
	t.Helper()
	opts = append([]Option{WithResolver(testResolver), WithEgressDialer(loopbackDialer(t))}, opts...)
	r, err := New(p, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func TestVerdictAllowedScheme(t *testing.T) {
	t.Parallel()
	p := &stubProvider{name: "Cloud"}
	r := newRouter(t, p, nil, WithAllowedSchemes("file:"))
	v := r.verdict(context.Background(), "file:///etc/hostname")
	assert.Equal(t, netpolicy.ClassPrivate, v.Class, "a file: URL reads this machine: local only")
	assert.NoError(t, v.Err)
	assert.True(t, r.HybridRoutesLocally(context.Background(), "file:///etc/hostname"))

	strict := newTestRouter(t, p, WithAllowedSchemes("file"), WithAutoLocalForPrivateURLs(false))
	assert.ErrorIs(t, strict.verdict(context.Background(), "file:///etc/hostname").Err, netpolicy.ErrPrivate,
		"an allowed scheme is still private where private URLs are rejected")
}

func TestRouteString(t *testing.T) {
	t.Parallel()
	for r, want := range map[route.Route]string{route.Cloud: "cloud", route.Local: "local", route.Route(7): "Route(7)"} {
		assert.Equal(t, want, r.String())
	}
}

func FuzzVerdict(f *testing.F) {
	for _, s := range []string{"http://0x7f.1/", "http://169.254.169.254/", "http://[::ffff:a9fe:a9fe]/",
		"http://[2002:a9fe:a9fe::]/", "http://１２７．０．０．１/", "http://%31%32%37.0.0.1/", `http:\\localhost`,
		"https://example.com/", "http://metadata./", "http://a@b@10.0.0.1:80/", "about:blank", "file:///x",
		"http://[64:ff9b::a9fe:a9fe]/", "http://2852039166/", "http://mixed.example/", "ws://[fe80::a9fe:a9fe%25eth0]/"} {
		f.Add(s)
	}
	cloud := &stubProvider{name: "Cloud"}
	routers := []*Router{newRouter(f, nil, nil), newRouter(f, cloud, nil),
		newRouter(f, cloud, nil, WithAutoLocalForPrivateURLs(false), WithAllowPrivateURLs(true)),
		newRouter(f, cloud, nil, WithCDPURL("ws://127.0.0.1:1/"), WithAllowPrivateURLs(true))}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, r := range routers {
			v := r.verdict(context.Background(), raw)
			if v.Class == netpolicy.ClassMetadata || v.Class == netpolicy.ClassInvalid {
				if v.Err == nil {
					t.Fatalf("%q: %v verdict is routable", raw, v.Class)
				}
				if r.HybridRoutesLocally(context.Background(), raw) {
					t.Fatalf("%q: %v verdict routed locally", raw, v.Class)
				}
			}
			if len(v.Addrs) > 0 && netpolicy.ClassifyAddrs(v.Addrs) != v.Class {
				t.Fatalf("%q: class %v disagrees with its addresses %v", raw, v.Class, v.Addrs)
			}
			for _, a := range v.Addrs {
				if netpolicy.ClassifyAddr(a) == netpolicy.ClassMetadata && v.Err == nil {
					t.Fatalf("%q: metadata address %v not blocked", raw, a)
				}
			}
		}
	})
}

func BenchmarkVerdict(b *testing.B) {
	r := newRouter(b, &stubProvider{name: "Cloud"}, nil)
	ctx := context.Background()
	for _, bc := range []struct{ name, url string }{
		{"IPv4Literal", "http://127.0.0.1:8080/api/v1/items"},
		{"IPv6Literal", "http://[::1]:3000/"},
		{"IPv4Hex", "http://0x7f.1/"},
		{"Metadata", "http://169.254.169.254/latest/meta-data/"},
		{"Localhost", "http://localhost:3000/dashboard"},
		{"NameResolved", "https://example.com/path?q=1"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = r.verdict(ctx, bc.url)
			}
		})
	}
}

func TestVerdictAllocations(t *testing.T) {
	// Not parallel: AllocsPerRun counts the allocations of every goroutine.
	// Allocation counts are deterministic, unlike timings: the IP-literal
	// verdict in front of every call stays within two allocations.
	r := newRouter(t, &stubProvider{name: "Cloud"}, nil)
	ctx := context.Background()
	for _, u := range []string{"http://127.0.0.1:8080/api", "http://[::1]:3000/", "https://93.184.215.14/"} {
		n := testing.AllocsPerRun(100, func() { _ = r.verdict(ctx, u) })
		assert.LessOrEqual(t, n, 2.0, u)
	}
}
