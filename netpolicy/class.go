package netpolicy

import (
	"fmt"
	"net/netip"

	"github.com/hybroute/hybroute/internal/metadata"
)

// Class is what a URL's target is, as far as routing and safety care.
// Among the classes of an address the order matters: [ClassPublic] <
// [ClassPrivate] < [ClassMetadata], each more restrictive than the one
// before, so the verdict on a name with several answers is the largest of
// their classes. [ClassInvalid] and [ClassNoRoute] are not classes of an
// address and not on that scale (an invalid address, which no resolver
// answers, still sorts above metadata: fail closed).
type Class int

const (
	// ClassPublic is a globally routable address, or a name that resolves
	// only to such addresses (or does not resolve here at all).
	ClassPublic Class = iota
	// ClassPrivate is anything not globally routable: loopback, RFC 1918,
	// link-local, ULA, multicast, reserved, localhost names, and names that
	// resolve to any of these. It also covers URLs that only make sense on
	// this machine, such as an allowed file: URL.
	ClassPrivate
	// ClassMetadata is a cloud metadata endpoint: blocked on every route.
	ClassMetadata
	// ClassInvalid is a URL Chromium would refuse, or a scheme we refuse.
	ClassInvalid
	// ClassNoRoute is a URL that loads nothing from any network: about:blank,
	// about:srcdoc, a data: URL, and chrome-error://chromewebdata/ (the page
	// a tab shows after a failed load). It runs wherever the call runs.
	ClassNoRoute
)

var classNames = [...]string{"public", "private", "metadata", "invalid", "noroute"}

// String returns the name used in logs and metrics.
func (c Class) String() string {
	if c >= 0 && int(c) < len(classNames) {
		return classNames[c]
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// ClassifyAddrs is the most restrictive class among the answers, so a name
// that mixes public and private answers is private, and one that mixes in a
// metadata address is metadata.
func ClassifyAddrs(addrs []netip.Addr) Class {
	c := ClassPublic
	for _, a := range addrs {
		if ac := ClassifyAddr(a); ac > c {
			c = ac
		}
	}
	return c
}

// ClassifyAddr classifies one address. Metadata is checked first, because
// several metadata addresses sit inside private ranges; IPv6 forms that embed
// an IPv4 address are judged by the IPv4 address inside; everything that is
// not globally routable is private. It does not allocate.
func ClassifyAddr(a netip.Addr) Class {
	if !a.IsValid() {
		return ClassInvalid
	}
	a = a.WithZone("")
	if a.Is4() {
		return classifyV4(v4word(a.As4()))
	}
	if a.Is4In6() {
		return classifyV4(v4word(a.Unmap().As4()))
	}
	b := a.As16()
	if c, ok := classifyV6Metadata(b); ok {
		return c
	}
	if c, ok := classifyEmbedded(b); ok {
		return c
	}
	return classifyV6(b)
}

func v4word(b [4]byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// v4Range is a CIDR prefix on a uint32 address.
type v4Range struct {
	base uint32
	bits uint8
}

func (r v4Range) contains(w uint32) bool {
	return w>>(32-r.bits) == r.base>>(32-r.bits)
}

func ip4(a, b, c, d byte) uint32 {
	return uint32(a)<<24 | uint32(b)<<16 | uint32(c)<<8 | uint32(d)
}

var (
	// v4Metadata and v6Metadata are the blocks of the metadata table
	// (internal/metadata), IPv4 in the form the classifier tests fast.
	v4Metadata, v6Metadata = splitMetadata(metadata.Prefixes())
	// v4Private is every IPv4 block the IANA special-purpose registry does
	// not mark globally reachable, plus multicast and the reserved class E.
	// Where a block holds a few globally reachable addresses (192.0.0.0/24)
	// the whole block is private: fail closed.
	v4Private = [...]v4Range{
		{ip4(0, 0, 0, 0), 8},       // "this network"
		{ip4(10, 0, 0, 0), 8},      // RFC 1918
		{ip4(100, 64, 0, 0), 10},   // CGNAT, RFC 6598
		{ip4(127, 0, 0, 0), 8},     // loopback
		{ip4(169, 254, 0, 0), 16},  // link-local
		{ip4(172, 16, 0, 0), 12},   // RFC 1918
		{ip4(192, 0, 0, 0), 24},    // IETF protocol assignments
		{ip4(192, 0, 2, 0), 24},    // TEST-NET-1
		{ip4(192, 88, 99, 0), 24},  // 6to4 relay anycast (deprecated)
		{ip4(192, 168, 0, 0), 16},  // RFC 1918
		{ip4(198, 18, 0, 0), 15},   // benchmarking
		{ip4(198, 51, 100, 0), 24}, // TEST-NET-2
		{ip4(203, 0, 113, 0), 24},  // TEST-NET-3
		{ip4(224, 0, 0, 0), 4},     // multicast
		{ip4(240, 0, 0, 0), 4},     // reserved, and 255.255.255.255
	}
)

// splitMetadata sorts the metadata blocks by family.
func splitMetadata(ps []netip.Prefix) (v4 []v4Range, v6 []netip.Prefix) {
	for _, p := range ps {
		if p.Addr().Is4() {
			v4 = append(v4, v4Range{v4word(p.Addr().As4()), uint8(p.Bits())})
		} else {
			v6 = append(v6, p)
		}
	}
	return v4, v6
}

func classifyV4(w uint32) Class {
	for _, r := range v4Metadata {
		if r.contains(w) {
			return ClassMetadata
		}
	}
	for _, r := range v4Private {
		if r.contains(w) {
			return ClassPrivate
		}
	}
	return ClassPublic
}

var (
	// v6Private lists the blocks inside 2000::/3 that are not globally
	// reachable; everything outside 2000::/3 is private without a list.
	v6Private = [...]netip.Prefix{
		netip.MustParsePrefix("2001::/23"),     // IETF protocol assignments (Teredo is judged before)
		netip.MustParsePrefix("2001:db8::/32"), // documentation
		netip.MustParsePrefix("2002::/16"),     // 6to4 with no usable IPv4 inside (judged before)
		netip.MustParsePrefix("3fff::/20"),     // documentation, RFC 9637
	}
	nat64Local = netip.MustParsePrefix("64:ff9b:1::/48")
)

func classifyV6Metadata(b [16]byte) (Class, bool) {
	a := netip.AddrFrom16(b)
	for _, p := range v6Metadata {
		if p.Contains(a) {
			return ClassMetadata, true
		}
	}
	return 0, false
}

// classifyEmbedded judges the IPv6 forms that carry an IPv4 address by that
// address. A form whose prefix is itself not global (the local-use NAT64
// prefix) is at least private.
func classifyEmbedded(b [16]byte) (Class, bool) {
	zero := func(from, to int) bool {
		for _, x := range b[from:to] {
			if x != 0 {
				return false
			}
		}
		return true
	}
	at := func(i int) uint32 { return v4word([4]byte(b[i : i+4])) }
	switch {
	case zero(0, 12): // IPv4-compatible ::a.b.c.d, and :: and ::1 with it
		return classifyV4(at(12)), true
	case zero(0, 8) && b[8] == 0xff && b[9] == 0xff && b[10] == 0 && b[11] == 0: // IPv4-translated ::ffff:0:a.b.c.d
		return classifyV4(at(12)), true
	case b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && zero(4, 12): // NAT64 64:ff9b::/96
		return classifyV4(at(12)), true
	case nat64Local.Contains(netip.AddrFrom16(b)):
		// RFC 8215 lets the operator pick any RFC 6052 prefix length
		// inside 64:ff9b:1::/48, so the IPv4 address can sit in several
		// places: judge every candidate and keep the worst.
		c := ClassPrivate
		for _, v := range rfc6052Candidates(b) {
			if vc := classifyV4(v); vc > c {
				c = vc
			}
		}
		return c, true
	case b[0] == 0x20 && b[1] == 0x02: // 6to4 2002:aabb:ccdd::/48
		return classifyV4(at(2)), true
	case b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0: // Teredo: client is the obfuscated last 32 bits
		return classifyV4(^at(12)), true
	}
	return 0, false
}

// rfc6052Candidates returns the IPv4 address as RFC 6052 places it for the
// prefix lengths that fit inside a /48: 48, 56, 64 and 96 (bits 64..71 are
// the reserved u octet and are skipped).
func rfc6052Candidates(b [16]byte) [4]uint32 {
	return [4]uint32{
		v4word([4]byte{b[6], b[7], b[9], b[10]}),    // /48
		v4word([4]byte{b[7], b[9], b[10], b[11]}),   // /56
		v4word([4]byte{b[9], b[10], b[11], b[12]}),  // /64
		v4word([4]byte{b[12], b[13], b[14], b[15]}), // /96
	}
}

func classifyV6(b [16]byte) Class {
	// Only 2000::/3 is allocated global unicast; loopback, unspecified,
	// ULA fc00::/7, link-local fe80::/10, site-local, multicast ff00::/8,
	// the discard prefix 100::/64 and the SRv6 block 5f00::/16 all fall
	// outside it; the list below holds the special blocks inside it.
	if b[0]&0xe0 != 0x20 {
		return ClassPrivate
	}
	a := netip.AddrFrom16(b)
	for _, p := range v6Private {
		if p.Contains(a) {
			return ClassPrivate
		}
	}
	return ClassPublic
}
