package netpolicy_test

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hybroute/hybroute/netpolicy"
)

func TestClassifyAddr(t *testing.T) {
	t.Parallel()
	rows := []struct {
		rule string
		addr string
		want netpolicy.Class
	}{
		// metadata, checked before the private ranges that hold them
		{"metadata: AWS/GCP/Azure IMDS", "169.254.169.254", netpolicy.ClassMetadata},
		{"metadata: all of 169.254/16", "169.254.0.1", netpolicy.ClassMetadata},
		{"metadata: Alibaba", "100.100.100.200", netpolicy.ClassMetadata},
		{"metadata: Oracle", "192.0.0.192", netpolicy.ClassMetadata},
		{"metadata: Azure wire server", "168.63.129.16", netpolicy.ClassMetadata},
		{"metadata: AWS IPv6 IMDS", "fd00:ec2::254", netpolicy.ClassMetadata},
		{"metadata: all of fd00:ec2::/32", "fd00:ec2:1::1", netpolicy.ClassMetadata},
		{"metadata: GCP IPv6", "fd20:ce::254", netpolicy.ClassMetadata},
		{"metadata: fd00:42::42", "fd00:42::42", netpolicy.ClassMetadata},
		{"metadata: link-local form of 169.254.169.254", "fe80::a9fe:a9fe", netpolicy.ClassMetadata},
		{"metadata: link-local form with a zone", "fe80::a9fe:a9fe%eth0", netpolicy.ClassMetadata},
		{"metadata: Akamai (Linode) IPv6", "fd00:a9fe:a9fe::1", netpolicy.ClassMetadata},
		{"ULA next to Akamai's metadata: private", "fd00:a9fe:a9fe::2", netpolicy.ClassPrivate},
		// IPv6 that embeds IPv4, judged by the IPv4 inside
		{"embedded: IPv4-mapped metadata", "::ffff:169.254.169.254", netpolicy.ClassMetadata},
		{"embedded: IPv4-mapped loopback", "::ffff:127.0.0.1", netpolicy.ClassPrivate},
		{"embedded: IPv4-mapped public", "::ffff:8.8.8.8", netpolicy.ClassPublic},
		{"embedded: IPv4-compatible metadata", "::169.254.169.254", netpolicy.ClassMetadata},
		{"embedded: IPv4-compatible private", "::10.0.0.1", netpolicy.ClassPrivate},
		{"embedded: IPv4-compatible public", "::8.8.8.8", netpolicy.ClassPublic},
		{"embedded: IPv4-translated metadata", "::ffff:0:169.254.169.254", netpolicy.ClassMetadata},
		{"embedded: IPv4-translated loopback", "::ffff:0:127.0.0.1", netpolicy.ClassPrivate},
		{"embedded: IPv4-translated public", "::ffff:0:8.8.8.8", netpolicy.ClassPublic},
		{"embedded: NAT64 metadata", "64:ff9b::169.254.169.254", netpolicy.ClassMetadata},
		{"embedded: NAT64 private", "64:ff9b::192.168.0.1", netpolicy.ClassPrivate},
		{"embedded: NAT64 public", "64:ff9b::8.8.8.8", netpolicy.ClassPublic},
		{"embedded: local NAT64 /96 metadata", "64:ff9b:1::a9fe:a9fe", netpolicy.ClassMetadata},
		{"embedded: local NAT64 /48 metadata", "64:ff9b:1:a9fe:a9:fe00::", netpolicy.ClassMetadata},
		{"embedded: local NAT64 prefix is never public", "64:ff9b:1::808:808", netpolicy.ClassPrivate},
		{"embedded: 6to4 metadata", "2002:a9fe:a9fe::1", netpolicy.ClassMetadata},
		{"embedded: 6to4 private", "2002:c0a8:0101::1", netpolicy.ClassPrivate},
		{"embedded: 6to4 public", "2002:0808:0808::1", netpolicy.ClassPublic},
		{"embedded: Teredo client metadata (XOR)", "2001:0:4136:e378:8000:63bf:5601:5601", netpolicy.ClassMetadata},
		{"embedded: Teredo client loopback (XOR)", "2001:0:4136:e378:8000:63bf:80ff:fffe", netpolicy.ClassPrivate},
		{"embedded: Teredo client public (XOR)", "2001:0:4136:e378:8000:63bf:f7f7:f7f7", netpolicy.ClassPublic},
		{"embedded: unspecified ::", "::", netpolicy.ClassPrivate},
		{"embedded: loopback ::1", "::1", netpolicy.ClassPrivate},
		// private IPv4
		{"private: this network 0/8", "0.0.0.0", netpolicy.ClassPrivate},
		{"private: this network 0/8 edge", "0.255.255.255", netpolicy.ClassPrivate},
		{"private: RFC1918 10/8", "10.1.2.3", netpolicy.ClassPrivate},
		{"private: CGNAT 100.64/10 low", "100.64.0.1", netpolicy.ClassPrivate},
		{"private: CGNAT 100.64/10 high", "100.127.255.254", netpolicy.ClassPrivate},
		{"public: just past CGNAT", "100.128.0.1", netpolicy.ClassPublic},
		{"private: loopback 127/8", "127.0.0.1", netpolicy.ClassPrivate},
		{"private: loopback 127/8 edge", "127.255.255.254", netpolicy.ClassPrivate},
		{"private: RFC1918 172.16/12", "172.16.0.1", netpolicy.ClassPrivate},
		{"private: RFC1918 172.16/12 edge", "172.31.255.255", netpolicy.ClassPrivate},
		{"public: just past 172.16/12", "172.32.0.1", netpolicy.ClassPublic},
		{"private: IETF 192.0.0/24", "192.0.0.8", netpolicy.ClassPrivate},
		{"private: TEST-NET-1", "192.0.2.1", netpolicy.ClassPrivate},
		{"private: 6to4 relay anycast", "192.88.99.1", netpolicy.ClassPrivate},
		{"private: RFC1918 192.168/16", "192.168.1.9", netpolicy.ClassPrivate},
		{"private: benchmarking 198.18/15", "198.19.255.1", netpolicy.ClassPrivate},
		{"public: just past benchmarking", "198.20.0.1", netpolicy.ClassPublic},
		{"private: TEST-NET-2", "198.51.100.7", netpolicy.ClassPrivate},
		{"private: TEST-NET-3", "203.0.113.9", netpolicy.ClassPrivate},
		{"private: multicast", "224.0.0.251", netpolicy.ClassPrivate},
		{"private: reserved class E", "240.0.0.1", netpolicy.ClassPrivate},
		{"private: broadcast", "255.255.255.255", netpolicy.ClassPrivate},
		{"public: Google DNS", "8.8.8.8", netpolicy.ClassPublic},
		{"public: Cloudflare", "1.1.1.1", netpolicy.ClassPublic},
		{"public: next to metadata 169.253", "169.253.255.255", netpolicy.ClassPublic},
		{"public: next to metadata 169.255", "169.255.0.0", netpolicy.ClassPublic},
		{"private: next to Alibaba metadata is still CGNAT", "100.100.100.201", netpolicy.ClassPrivate},
		{"public: next to Azure wire server", "168.63.129.17", netpolicy.ClassPublic},
		// private IPv6
		{"private: ULA fc00::/7", "fd12:3456::1", netpolicy.ClassPrivate},
		{"private: ULA fc00::/7 low half", "fc00::1", netpolicy.ClassPrivate},
		{"private: link-local", "fe80::1", netpolicy.ClassPrivate},
		{"private: site-local (deprecated)", "fec0::1", netpolicy.ClassPrivate},
		{"private: multicast", "ff02::1", netpolicy.ClassPrivate},
		{"private: discard 100::/64", "100::1", netpolicy.ClassPrivate},
		{"private: documentation 2001:db8::/32", "2001:db8::1", netpolicy.ClassPrivate},
		{"private: documentation 3fff::/20", "3fff::1", netpolicy.ClassPrivate},
		{"private: benchmarking 2001:2::/48", "2001:2::1", netpolicy.ClassPrivate},
		{"private: outside 2000::/3", "4000::1", netpolicy.ClassPrivate},
		{"private: SRv6 5f00::/16", "5f00::1", netpolicy.ClassPrivate},
		{"public: global unicast", "2606:4700::6810:85e5", netpolicy.ClassPublic},
		{"public: global unicast high", "3ffe::1", netpolicy.ClassPublic},
	}
	for _, row := range rows {
		t.Run(row.rule, func(t *testing.T) {
			assert.Equal(t, row.want, netpolicy.ClassifyAddr(netip.MustParseAddr(row.addr)), row.addr)
		})
	}
	assert.Equal(t, netpolicy.ClassInvalid, netpolicy.ClassifyAddr(netip.Addr{}), "the zero Addr is not an address")
}

func TestClassifyAddrsIsTheMostRestrictive(t *testing.T) {
	t.Parallel()
	for _, row := range []struct {
		addrs []string
		want  netpolicy.Class
	}{
		{nil, netpolicy.ClassPublic},
		{[]string{"93.184.215.14"}, netpolicy.ClassPublic},
		{[]string{"93.184.215.14", "10.0.0.5"}, netpolicy.ClassPrivate},
		{[]string{"10.0.0.5", "169.254.169.254", "93.184.215.14"}, netpolicy.ClassMetadata},
	} {
		var as []netip.Addr
		for _, s := range row.addrs {
			as = append(as, netip.MustParseAddr(s))
		}
		assert.Equal(t, row.want, netpolicy.ClassifyAddrs(as), "%v", row.addrs)
	}
}

func TestClassString(t *testing.T) {
	t.Parallel()
	for c, want := range map[netpolicy.Class]string{netpolicy.ClassPublic: "public", netpolicy.ClassPrivate: "private",
		netpolicy.ClassMetadata: "metadata", netpolicy.ClassInvalid: "invalid", netpolicy.ClassNoRoute: "noroute", netpolicy.Class(99): "Class(99)"} {
		assert.Equal(t, want, c.String())
	}
}

func BenchmarkClassifyAddr(b *testing.B) {
	for _, s := range []string{"93.184.215.14", "169.254.169.254", "2001:0:4136:e378:8000:63bf:5601:5601"} {
		a := netip.MustParseAddr(s)
		b.Run(s, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = netpolicy.ClassifyAddr(a)
			}
		})
	}
}
