// Package dnstest holds the resolver the tests of the root package and of
// netpolicy decide names with: answers from a table, no network.
package dnstest

import (
	"context"
	"errors"
	"net/netip"
)

// Static answers from a table, as a resolver that already has the answer
// cached would. Names not in the table fail like NXDOMAIN.
type Static map[string][]netip.Addr

// ErrNXDomain is what Static says for a name it does not hold.
var ErrNXDomain = errors.New("no such host")

// LookupNetIP answers host from the table; it honours its context.
func (s Static) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if a, ok := s[host]; ok {
		return a, nil
	}
	return nil, ErrNXDomain
}

// Addrs parses addresses; it panics on one that does not parse.
func Addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

// Examples are the names the verdict tests decide: public, LAN, names that
// mix public, private and metadata answers, one with no answers, and
// private-use suffixes that resolve. A test that needs other names copies
// it; none writes to it.
var Examples = Static{
	"example.com":        Addrs("93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"),
	"lan.example":        Addrs("192.168.1.9"),
	"mixed.example":      Addrs("93.184.215.14", "10.0.0.5"),
	"meta-mixed.example": Addrs("93.184.215.14", "10.0.0.5", "169.254.169.254"),
	"v6only.example":     Addrs("2606:4700::6810:85e5"),
	"ula.example":        Addrs("fd12:3456::1"),
	"empty.example":      {},
	"rebind.example":     Addrs("127.0.0.1"),
	"printer.local":      Addrs("192.168.1.20"),
	"public.internal":    Addrs("8.8.8.8"),
}
