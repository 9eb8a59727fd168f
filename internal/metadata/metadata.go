// Package metadata is the one table of the cloud metadata services that
// hybroute blocks on every route. The address and name classifiers of
// package netpolicy take their metadata blocks and names from here (and
// netpolicy.Metadata shows the table read-only), the in-browser guard
// derives its Fetch patterns and its WebSocket rules from here, and the
// scanner of URL literals reads the names from here, so that none of them
// can know an endpoint the others miss (TestMetadataTableCoverage in the
// root package, TestVerdictMetadataBlocksAreTheTable in netpolicy).
package metadata

import (
	"net/netip"
	"strings"
)

// An Endpoint is one metadata service, or one block of addresses that
// holds such services. Exactly one of Name and Prefix is set.
type Endpoint struct {
	// Who runs it, for the reader.
	Who string
	// Name is a host name that reaches the service without DNS, or
	// through a resolver that answers it only inside a cloud: lower-case,
	// without a trailing dot.
	Name string
	// Prefix is the block of addresses; a single address is a /32 or
	// /128.
	Prefix netip.Prefix
	// Known are the well-known single addresses inside a Prefix wider
	// than one address. Rules that only take whole hosts (Chromium's
	// offline rules) name these, since they cannot name a block.
	Known []netip.Addr
}

// table is every metadata endpoint. Link-local 169.254.0.0/16 is whole:
// AWS, GCP, Azure, OpenStack and others serve from inside it.
var table = [...]Endpoint{
	{Who: "link-local: AWS, GCP, Azure IMDS, ECS task metadata and friends", Prefix: netip.MustParsePrefix("169.254.0.0/16"),
		Known: []netip.Addr{netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("169.254.170.2")}},
	{Who: "Alibaba Cloud", Prefix: netip.MustParsePrefix("100.100.100.200/32")},
	{Who: "Oracle Cloud", Prefix: netip.MustParsePrefix("192.0.0.192/32")},
	{Who: "Azure wire server", Prefix: netip.MustParsePrefix("168.63.129.16/32")},
	{Who: "AWS IMDS over IPv6", Prefix: netip.MustParsePrefix("fd00:ec2::/32"),
		Known: []netip.Addr{netip.MustParseAddr("fd00:ec2::254")}},
	{Who: "GCP over IPv6", Prefix: netip.MustParsePrefix("fd20:ce::254/128")},
	{Who: "metadata on some platforms", Prefix: netip.MustParsePrefix("fd00:42::42/128")},
	{Who: "link-local IPv6 form of 169.254.169.254", Prefix: netip.MustParsePrefix("fe80::a9fe:a9fe/128")},
	{Who: "Akamai (Linode)", Prefix: netip.MustParsePrefix("fd00:a9fe:a9fe::1/128")},
	{Who: "GCP", Name: "metadata.google.internal"},
	{Who: "GCP", Name: "metadata.goog"},
	{Who: "GCP (the bare name its resolvers answer)", Name: "metadata"},
	{Who: "AWS", Name: "instance-data"},
}

// Table returns every metadata endpoint. The slice and its Known slices
// are copies.
func Table() []Endpoint {
	out := append([]Endpoint(nil), table[:]...)
	for i := range out {
		out[i].Known = append([]netip.Addr(nil), out[i].Known...)
	}
	return out
}

// Names returns the host names of the metadata services, lower-case,
// without a trailing dot, in table order.
func Names() []string {
	var out []string
	for _, e := range table {
		if e.Name != "" {
			out = append(out, e.Name)
		}
	}
	return out
}

// Prefixes returns the address blocks of the metadata services, in table
// order.
func Prefixes() []netip.Prefix {
	var out []netip.Prefix
	for _, e := range table {
		if e.Prefix.IsValid() {
			out = append(out, e.Prefix)
		}
	}
	return out
}

// Addrs returns the single metadata addresses: every block that is one
// address, and every Known address of a wider block, in table order.
func Addrs() []netip.Addr {
	var out []netip.Addr
	for _, e := range table {
		switch {
		case !e.Prefix.IsValid():
		case e.Prefix.IsSingleIP():
			out = append(out, e.Prefix.Addr())
		default:
			out = append(out, e.Known...)
		}
	}
	return out
}

// Host spells a table address as the host of a URL whose host Chromium
// has canonicalised: dotted IPv4, bracketed compressed lower-case IPv6.
// (The table holds no IPv4-mapped address, whose Chromium spelling is hex.)
func Host(a netip.Addr) string {
	if a.Is4() {
		return a.String()
	}
	return "[" + a.String() + "]"
}

// IsName reports whether host names a metadata service: one of Names in any
// case, with or without trailing dots. It does not allocate.
func IsName(host string) bool {
	h := strings.TrimRight(host, ".")
	for i := range table {
		if n := table[i].Name; n != "" && strings.EqualFold(h, n) {
			return true
		}
	}
	return false
}
