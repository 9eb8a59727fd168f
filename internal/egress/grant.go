package egress

import (
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/hybroute/hybroute/internal/whatwg"
)

// Grant is the private hosts one session may reach: hosts its call named,
// on any port, and the addresses those names had when the call was
// decided. The zero value grants nothing.
type Grant struct {
	hosts map[string]struct{}     // host names and literals as the parser writes them, without a trailing dot
	addrs map[netip.Addr]struct{} // the addresses the named hosts had
}

// Add grants host (as the deciding parser writes it) on any port, and the
// addresses addrs, which a connection may then name by literal.
func (g *Grant) Add(host string, addrs ...netip.Addr) {
	if g.hosts == nil {
		g.hosts, g.addrs = map[string]struct{}{}, map[netip.Addr]struct{}{}
	}
	g.hosts[grantHost(host)] = struct{}{}
	for _, a := range addrs {
		g.addrs[a.Unmap()] = struct{}{}
	}
}

// Empty reports whether g grants nothing.
func (g Grant) Empty() bool { return len(g.hosts) == 0 }

// grantHost is a host as the grant keeps it: lower case (the parser's
// hosts are), one trailing dot removed, an IPv6 literal without brackets.
func grantHost(h string) string {
	h = strings.TrimSuffix(h, ".")
	return strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
}

// Covers reports whether the grant lets a connection to host (as the
// deciding parser writes it) reach addrs: host is a named host, or host is
// an address literal one of the named hosts had.
func (g Grant) Covers(host string, addrs []netip.Addr) bool {
	if len(g.hosts) == 0 {
		return false
	}
	h := grantHost(host)
	if _, ok := g.hosts[h]; ok {
		return true
	}
	if _, err := netip.ParseAddr(h); err != nil || len(addrs) == 0 {
		return false // a name the call did not name, whatever it resolves to
	}
	for _, a := range addrs {
		if _, ok := g.addrs[a.Unmap()]; !ok {
			return false
		}
	}
	return true
}

// CoversURL reports whether a document at raw stays within the grant: its
// host is one the grant covers.
func (g Grant) CoversURL(raw string) bool {
	u, err := whatwg.Parse(raw)
	if err != nil {
		return false
	}
	switch u.Kind {
	case whatwg.HostIPv4, whatwg.HostIPv6:
		return g.Covers(u.Host, []netip.Addr{u.Addr})
	case whatwg.HostDomain:
		return g.Covers(u.Host, nil)
	}
	return false
}

func (g Grant) equal(o Grant) bool {
	return maps.Equal(g.hosts, o.hosts) && maps.Equal(g.addrs, o.addrs)
}

// hostList is the grant's hosts, for a log line.
func (g Grant) hostList() []string { return slices.Sorted(maps.Keys(g.hosts)) }
