package hybroute

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// staticResolver answers from a table, as a resolver that already has the
// answer cached would. Names not in the table fail like NXDOMAIN.
type staticResolver map[string][]netip.Addr

var errNXDomain = errors.New("no such host")

func (s staticResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if a, ok := s[host]; ok {
		return a, nil
	}
	return nil, errNXDomain
}

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

var testResolver = staticResolver{
	"example.com":        addrs("93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"),
	"lan.example":        addrs("192.168.1.9"),
	"mixed.example":      addrs("93.184.215.14", "10.0.0.5"),
	"meta-mixed.example": addrs("93.184.215.14", "10.0.0.5", "169.254.169.254"),
	"v6only.example":     addrs("2606:4700::6810:85e5"),
	"ula.example":        addrs("fd12:3456::1"),
	"empty.example":      {},
	"rebind.example":     addrs("127.0.0.1"),
	"printer.local":      addrs("192.168.1.20"),
	"public.internal":    addrs("8.8.8.8"),
}

func TestClassifyAddr(t *testing.T) {
	t.Parallel()
	rows := []struct {
		rule string
		addr string
		want Class
	}{
		// metadata, checked before the private ranges that hold them
		{"metadata: AWS/GCP/Azure IMDS", "169.254.169.254", ClassMetadata},
		{"metadata: all of 169.254/16", "169.254.0.1", ClassMetadata},
		{"metadata: Alibaba", "100.100.100.200", ClassMetadata},
		{"metadata: Oracle", "192.0.0.192", ClassMetadata},
		{"metadata: Azure wire server", "168.63.129.16", ClassMetadata},
		{"metadata: AWS IPv6 IMDS", "fd00:ec2::254", ClassMetadata},
		{"metadata: all of fd00:ec2::/32", "fd00:ec2:1::1", ClassMetadata},
		{"metadata: GCP IPv6", "fd20:ce::254", ClassMetadata},
		{"metadata: fd00:42::42", "fd00:42::42", ClassMetadata},
		{"metadata: link-local form of 169.254.169.254", "fe80::a9fe:a9fe", ClassMetadata},
		{"metadata: link-local form with a zone", "fe80::a9fe:a9fe%eth0", ClassMetadata},
		{"metadata: Akamai (Linode) IPv6", "fd00:a9fe:a9fe::1", ClassMetadata},
		{"ULA next to Akamai's metadata: private", "fd00:a9fe:a9fe::2", ClassPrivate},
		// IPv6 that embeds IPv4, judged by the IPv4 inside
		{"embedded: IPv4-mapped metadata", "::ffff:169.254.169.254", ClassMetadata},
		{"embedded: IPv4-mapped loopback", "::ffff:127.0.0.1", ClassPrivate},
		{"embedded: IPv4-mapped public", "::ffff:8.8.8.8", ClassPublic},
		{"embedded: IPv4-compatible metadata", "::169.254.169.254", ClassMetadata},
		{"embedded: IPv4-compatible private", "::10.0.0.1", ClassPrivate},
		{"embedded: IPv4-compatible public", "::8.8.8.8", ClassPublic},
		{"embedded: IPv4-translated metadata", "::ffff:0:169.254.169.254", ClassMetadata},
		{"embedded: IPv4-translated loopback", "::ffff:0:127.0.0.1", ClassPrivate},
		{"embedded: IPv4-translated public", "::ffff:0:8.8.8.8", ClassPublic},
		{"embedded: NAT64 metadata", "64:ff9b::169.254.169.254", ClassMetadata},
		{"embedded: NAT64 private", "64:ff9b::192.168.0.1", ClassPrivate},
		{"embedded: NAT64 public", "64:ff9b::8.8.8.8", ClassPublic},
		{"embedded: local NAT64 /96 metadata", "64:ff9b:1::a9fe:a9fe", ClassMetadata},
		{"embedded: local NAT64 /48 metadata", "64:ff9b:1:a9fe:a9:fe00::", ClassMetadata},
		{"embedded: local NAT64 prefix is never public", "64:ff9b:1::808:808", ClassPrivate},
		{"embedded: 6to4 metadata", "2002:a9fe:a9fe::1", ClassMetadata},
		{"embedded: 6to4 private", "2002:c0a8:0101::1", ClassPrivate},
		{"embedded: 6to4 public", "2002:0808:0808::1", ClassPublic},
		{"embedded: Teredo client metadata (XOR)", "2001:0:4136:e378:8000:63bf:5601:5601", ClassMetadata},
		{"embedded: Teredo client loopback (XOR)", "2001:0:4136:e378:8000:63bf:80ff:fffe", ClassPrivate},
		{"embedded: Teredo client public (XOR)", "2001:0:4136:e378:8000:63bf:f7f7:f7f7", ClassPublic},
		{"embedded: unspecified ::", "::", ClassPrivate},
		{"embedded: loopback ::1", "::1", ClassPrivate},
		// private IPv4
		{"private: this network 0/8", "0.0.0.0", ClassPrivate},
		{"private: this network 0/8 edge", "0.255.255.255", ClassPrivate},
		{"private: RFC1918 10/8", "10.1.2.3", ClassPrivate},
		{"private: CGNAT 100.64/10 low", "100.64.0.1", ClassPrivate},
		{"private: CGNAT 100.64/10 high", "100.127.255.254", ClassPrivate},
		{"public: just past CGNAT", "100.128.0.1", ClassPublic},
		{"private: loopback 127/8", "127.0.0.1", ClassPrivate},
		{"private: loopback 127/8 edge", "127.255.255.254", ClassPrivate},
		{"private: RFC1918 172.16/12", "172.16.0.1", ClassPrivate},
		{"private: RFC1918 172.16/12 edge", "172.31.255.255", ClassPrivate},
		{"public: just past 172.16/12", "172.32.0.1", ClassPublic},
		{"private: IETF 192.0.0/24", "192.0.0.8", ClassPrivate},
		{"private: TEST-NET-1", "192.0.2.1", ClassPrivate},
		{"private: 6to4 relay anycast", "192.88.99.1", ClassPrivate},
		{"private: RFC1918 192.168/16", "192.168.1.9", ClassPrivate},
		{"private: benchmarking 198.18/15", "198.19.255.1", ClassPrivate},
		{"public: just past benchmarking", "198.20.0.1", ClassPublic},
		{"private: TEST-NET-2", "198.51.100.7", ClassPrivate},
		{"private: TEST-NET-3", "203.0.113.9", ClassPrivate},
		{"private: multicast", "224.0.0.251", ClassPrivate},
		{"private: reserved class E", "240.0.0.1", ClassPrivate},
		{"private: broadcast", "255.255.255.255", ClassPrivate},
		{"public: Google DNS", "8.8.8.8", ClassPublic},
		{"public: Cloudflare", "1.1.1.1", ClassPublic},
		{"public: next to metadata 169.253", "169.253.255.255", ClassPublic},
		{"public: next to metadata 169.255", "169.255.0.0", ClassPublic},
		{"private: next to Alibaba metadata is still CGNAT", "100.100.100.201", ClassPrivate},
		{"public: next to Azure wire server", "168.63.129.17", ClassPublic},
		// private IPv6
		{"private: ULA fc00::/7", "fd12:3456::1", ClassPrivate},
		{"private: ULA fc00::/7 low half", "fc00::1", ClassPrivate},
		{"private: link-local", "fe80::1", ClassPrivate},
		{"private: site-local (deprecated)", "fec0::1", ClassPrivate},
		{"private: multicast", "ff02::1", ClassPrivate},
		{"private: discard 100::/64", "100::1", ClassPrivate},
		{"private: documentation 2001:db8::/32", "2001:db8::1", ClassPrivate},
		{"private: documentation 3fff::/20", "3fff::1", ClassPrivate},
		{"private: benchmarking 2001:2::/48", "2001:2::1", ClassPrivate},
		{"private: outside 2000::/3", "4000::1", ClassPrivate},
		{"private: SRv6 5f00::/16", "5f00::1", ClassPrivate},
		{"public: global unicast", "2606:4700::6810:85e5", ClassPublic},
		{"public: global unicast high", "3ffe::1", ClassPublic},
	}
	for _, row := range rows {
		t.Run(row.rule, func(t *testing.T) {
			assert.Equal(t, row.want, ClassifyAddr(netip.MustParseAddr(row.addr)), row.addr)
		})
	}
	assert.Equal(t, ClassInvalid, ClassifyAddr(netip.Addr{}), "the zero Addr is not an address")
}

func newTestRouter(t testing.TB, p Provider, opts ...Option) *Router {
	t.Helper()
	opts = append([]Option{WithResolver(testResolver), WithEgressDialer(loopbackDialer(t))}, opts...)
	r, err := New(p, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func TestVerdictClassifiesAsChromiumParses(t *testing.T) {
	t.Parallel()
	r := newTestRouter(t, nil)
	rows := []struct {
		rule, url, host string
		want            Class
	}{
		{"hex IPv4 part", "http://0x7f.1/", "127.0.0.1", ClassPrivate},
		{"single decimal number", "http://2130706433/", "127.0.0.1", ClassPrivate},
		{"octal leading zero", "http://012.0.0.1/", "10.0.0.1", ClassPrivate},
		{"metadata as one number", "http://2852039166/latest", "169.254.169.254", ClassMetadata},
		{"metadata in hex", "http://0xa9fea9fe/", "169.254.169.254", ClassMetadata},
		{"metadata in octal parts", "http://0251.0376.0251.0376/", "169.254.169.254", ClassMetadata},
		{"full-width digits", "http://１２７．０．０．１/", "127.0.0.1", ClassPrivate},
		{"ideographic full stop", "http://169。254。169。254/", "169.254.169.254", ClassMetadata},
		{"percent-encoded host", "http://%31%32%37.0.0.1/", "127.0.0.1", ClassPrivate},
		{"backslashes as slashes", `http:\\127.0.0.1\x`, "127.0.0.1", ClassPrivate},
		{"userinfo ends at the last @", "http://a@b@127.0.0.1/", "127.0.0.1", ClassPrivate},
		{"upper-case scheme", "HTTP://LOCALHOST:3000/", "localhost", ClassPrivate},
		{"IPv6 loopback", "http://[::1]:8080/", "[::1]", ClassPrivate},
		{"IPv4-mapped metadata", "http://[::ffff:169.254.169.254]/", "[::ffff:a9fe:a9fe]", ClassMetadata},
		{"Akamai (Linode) IPv6 metadata", "http://[fd00:a9fe:a9fe:0::1]/v1/token", "[fd00:a9fe:a9fe::1]", ClassMetadata},
		{"localhost with trailing dot", "http://localhost./", "localhost.", ClassPrivate},
		{"subdomain of localhost", "http://app.localhost:5173/", "app.localhost", ClassPrivate},
		{"metadata name", "http://metadata.google.internal/computeMetadata/v1/", "metadata.google.internal", ClassMetadata},
		{"metadata name, any case, trailing dot", "http://METADATA.Google.Internal./", "metadata.google.internal.", ClassMetadata},
		{"metadata bare name", "http://metadata/", "metadata", ClassMetadata},
		{"metadata.goog", "http://metadata.goog/", "metadata.goog", ClassMetadata},
		{"instance-data", "http://instance-data/latest/", "instance-data", ClassMetadata},
		{"public name", "https://example.com/", "example.com", ClassPublic},
		{"name resolving to LAN", "http://lan.example/", "lan.example", ClassPrivate},
		{"name mixing public and private answers", "https://mixed.example/", "mixed.example", ClassPrivate},
		{"name mixing in a metadata answer", "https://meta-mixed.example/", "meta-mixed.example", ClassMetadata},
		{"name resolving to ULA", "https://ula.example/", "ula.example", ClassPrivate},
		{"public IPv6-only name", "https://v6only.example/", "v6only.example", ClassPublic},
		{"websocket scheme", "ws://127.0.0.1:9222/devtools", "127.0.0.1", ClassPrivate},
		{"secure websocket scheme", "wss://example.com/socket", "example.com", ClassPublic},
		{"unresolvable name is public", "https://nx.example/", "nx.example", ClassPublic},
		{"name with no answers is public", "https://empty.example/", "empty.example", ClassPublic},
		{"unresolvable private-use suffix is private", "http://nas.home.arpa/", "nas.home.arpa", ClassPrivate},
		{"unresolvable .local is private", "http://printer2.local/", "printer2.local", ClassPrivate},
		{"resolvable .internal judged by its answer", "http://public.internal/", "public.internal", ClassPublic},
		{"about:blank needs no route", "about:blank", "", ClassNoRoute},
		{"data: needs no route", "data:text/html,<h1>x</h1>", "", ClassNoRoute},
		{"file: refused by default", "file:///etc/passwd", "", ClassInvalid},
		{"ftp: refused", "ftp://example.com/", "", ClassInvalid},
		{"javascript: refused", "javascript:alert(1)", "", ClassInvalid},
		{"chrome: refused", "chrome://settings", "", ClassInvalid},
		{"about:other refused", "about:config", "", ClassInvalid},
		{"IPv4 overflow refused", "http://4294967296/", "", ClassInvalid},
		{"IPv4 part overflow refused", "http://1.2.3.256/", "", ClassInvalid},
		{"empty host refused", "http://", "", ClassInvalid},
		{"empty host with a port refused", "http://:80/", "", ClassInvalid},
		{"extra slashes are skipped, as Chromium does", "http:///127.0.0.1/x", "127.0.0.1", ClassPrivate},
		{"no slashes at all", "http:localhost:3000", "localhost", ClassPrivate},
		{"garbage refused", "http://[::1/", "", ClassInvalid},
		{"no scheme refused", "localhost:3000", "", ClassInvalid},
	}
	for _, row := range rows {
		t.Run(row.rule, func(t *testing.T) {
			v := r.Verdict(context.Background(), row.url)
			assert.Equal(t, row.url, v.URL)
			assert.Equal(t, row.want.String(), v.Class.String(), "class of %q", row.url)
			if row.host != "" {
				assert.Equal(t, row.host, v.Host)
			}
			switch row.want {
			case ClassMetadata:
				require.ErrorIs(t, v.Err, ErrMetadata)
				assert.Contains(t, v.Err.Error(), "URL targets a cloud metadata endpoint")
				assert.Contains(t, v.Err.Error(), row.url)
			case ClassInvalid:
				require.ErrorIs(t, v.Err, ErrInvalidURL)
			default:
				assert.NoError(t, v.Err, "no provider: everything but metadata and invalid runs locally")
			}
			if len(v.Addrs) > 0 {
				assert.Equal(t, v.Class, classifyAddrs(v.Addrs), "class agrees with the pinned addresses")
			}
		})
	}
}

func TestVerdictKeepsResolveError(t *testing.T) {
	t.Parallel()
	r := newTestRouter(t, nil)
	v := r.Verdict(context.Background(), "https://nx.example/")
	assert.Equal(t, ClassPublic, v.Class)
	assert.ErrorIs(t, v.ResolveErr, errNXDomain)
	assert.Empty(t, v.Addrs)

	v = r.Verdict(context.Background(), "https://example.com/")
	assert.NoError(t, v.ResolveErr)
	assert.Equal(t, testResolver["example.com"], v.Addrs, "the addresses decided on are pinned")
}

func TestVerdictAllowedScheme(t *testing.T) {
	t.Parallel()
	p := &stubProvider{name: "Cloud"}
	r := newTestRouter(t, p, WithAllowedSchemes("file:"))
	v := r.Verdict(context.Background(), "file:///etc/hostname")
	assert.Equal(t, ClassPrivate, v.Class, "a file: URL reads this machine: local only")
	assert.NoError(t, v.Err)
	assert.True(t, r.HybridRoutesLocally(context.Background(), "file:///etc/hostname"))

	strict := newTestRouter(t, p, WithAllowedSchemes("file"), WithAutoLocalForPrivateURLs(false))
	assert.ErrorIs(t, strict.Verdict(context.Background(), "file:///etc/hostname").Err, ErrPrivate,
		"an allowed scheme is still private where private URLs are rejected")
}

func TestVerdictErrorsAreWrapped(t *testing.T) {
	t.Parallel()
	r := newTestRouter(t, nil)
	v := r.Verdict(context.Background(), "http://169.254.169.254/latest/meta-data/")
	var be *BlockedError
	require.ErrorAs(t, v.Err, &be)
	assert.Equal(t, ClassMetadata, be.Class)
	assert.Equal(t, "http://169.254.169.254/latest/meta-data/", be.URL)
	assert.Equal(t, ReasonMetadata, be.Reason)
	assert.True(t, strings.HasPrefix(v.Err.Error(), "hybroute: blocked (metadata): URL targets a cloud metadata endpoint"), v.Err.Error())
}

func TestClassString(t *testing.T) {
	t.Parallel()
	for c, want := range map[Class]string{ClassPublic: "public", ClassPrivate: "private",
		ClassMetadata: "metadata", ClassInvalid: "invalid", ClassNoRoute: "noroute", Class(99): "Class(99)"} {
		assert.Equal(t, want, c.String())
	}
	for r, want := range map[Route]string{RouteCloud: "cloud", RouteLocal: "local", Route(7): "Route(7)"} {
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
	routers := []*Router{newTestRouter(f, nil), newTestRouter(f, cloud),
		newTestRouter(f, cloud, WithAutoLocalForPrivateURLs(false), WithAllowPrivateURLs(true)),
		newTestRouter(f, cloud, WithCDPURL("ws://127.0.0.1:1/"), WithAllowPrivateURLs(true))}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, r := range routers {
			v := r.Verdict(context.Background(), raw)
			if v.Class == ClassMetadata || v.Class == ClassInvalid {
				if v.Err == nil {
					t.Fatalf("%q: %v verdict is routable", raw, v.Class)
				}
				if r.HybridRoutesLocally(context.Background(), raw) {
					t.Fatalf("%q: %v verdict routed locally", raw, v.Class)
				}
			}
			if len(v.Addrs) > 0 && classifyAddrs(v.Addrs) != v.Class {
				t.Fatalf("%q: class %v disagrees with its addresses %v", raw, v.Class, v.Addrs)
			}
			for _, a := range v.Addrs {
				if ClassifyAddr(a) == ClassMetadata && v.Err == nil {
					t.Fatalf("%q: metadata address %v not blocked", raw, a)
				}
			}
		}
	})
}

func BenchmarkVerdict(b *testing.B) {
	r := newTestRouter(b, &stubProvider{name: "Cloud"})
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
				_ = r.Verdict(ctx, bc.url)
			}
		})
	}
}

func TestVerdictAllocations(t *testing.T) {
	// Not parallel: AllocsPerRun counts the allocations of every goroutine.
	// Allocation counts are deterministic, unlike timings: the IP-literal
	// verdict in front of every call stays within two allocations.
	r := newTestRouter(t, &stubProvider{name: "Cloud"})
	ctx := context.Background()
	for _, u := range []string{"http://127.0.0.1:8080/api", "http://[::1]:3000/", "https://93.184.215.14/"} {
		n := testing.AllocsPerRun(100, func() { _ = r.Verdict(ctx, u) })
		assert.LessOrEqual(t, n, 2.0, u)
	}
}
