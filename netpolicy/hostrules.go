package netpolicy

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/hybroute/hybroute/internal/whatwg"
)

// Operator rules narrow what the security floor allows: a list of hosts a
// router's browsers may reach and a list they may not. They are part of
// the [Policy]'s refusal, so the plan, the guard, the landed-URL check and
// the egress check hold them alike. They never widen: a host on the allow
// list is still refused when it is metadata, or private where private
// URLs may not run.

// HostRules are an operator's parsed allow and block lists. A nil
// *HostRules holds none. They never change once parsed.
type HostRules struct {
	allow, block []HostPattern
}

// HostPattern is one pattern of an operator's list. Exactly one field is
// set.
type HostPattern struct {
	// Host is an exact host name, as Chromium writes it (lower case,
	// punycode, no trailing dot).
	Host string
	// Suffix is ".example.com" for the wildcard *.example.com: its
	// subdomains, not example.com itself.
	Suffix string
	// Prefix is an IP address (a /32 or /128) or an address prefix. It
	// matches a literal in it; a name when any of its addresses is in it
	// (a block list) or all of them are (an allow list).
	Prefix netip.Prefix
}

// ParseHostRules reads the patterns of both lists; nil when both are
// empty. A pattern is a host name (example.com: that host only), a
// wildcard (*.example.com: its subdomains), an IP address, or an address
// prefix (10.1.0.0/16). A pattern it cannot read is an error that wraps
// [ErrHostRule].
func ParseHostRules(allow, block []string) (*HostRules, error) {
	if len(allow) == 0 && len(block) == 0 {
		return nil, nil
	}
	r := &HostRules{}
	for _, l := range [...]struct {
		in  []string
		out *[]HostPattern
	}{{allow, &r.allow}, {block, &r.block}} {
		for _, s := range l.in {
			p, err := parseHostPattern(s)
			if err != nil {
				return nil, err
			}
			*l.out = append(*l.out, p)
		}
	}
	return r, nil
}

func parseHostPattern(s string) (HostPattern, error) {
	raw := strings.TrimSpace(s)
	bad := func(why string) (HostPattern, error) {
		return HostPattern{}, fmt.Errorf("%w: host pattern %q: %s", ErrHostRule, s, why)
	}
	if raw == "" {
		return bad("empty")
	}
	if p, err := netip.ParsePrefix(raw); err == nil {
		return HostPattern{Prefix: p.Masked()}, nil
	}
	if a, err := netip.ParseAddr(strings.Trim(raw, "[]")); err == nil {
		return HostPattern{Prefix: netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())}, nil
	}
	wild := strings.HasPrefix(raw, "*.")
	name := strings.TrimPrefix(raw, "*.")
	if strings.ContainsAny(name, "*/:?#@[] ") {
		return bad("want a host name, *.name, an IP address or an address prefix")
	}
	u, err := whatwg.Parse("http://" + name + "/")
	if err != nil || u.Kind != whatwg.HostDomain {
		return bad("not a host name Chromium would read")
	}
	host := strings.TrimRight(u.Host, ".")
	if wild {
		return HostPattern{Suffix: "." + host}, nil
	}
	return HostPattern{Host: host}, nil
}

// matchName reports whether a name pattern matches host.
func (p HostPattern) matchName(host string) bool {
	switch {
	case p.Host != "":
		return host == p.Host
	case p.Suffix != "":
		return strings.HasSuffix(host, p.Suffix)
	}
	return false
}

// Refuse is the rules' reason to refuse v, or 0. Only URLs that reach a
// host are held to them: public and private ones.
func (r *HostRules) Refuse(v Verdict) Reason {
	if r == nil || v.Host == "" || (v.Class != ClassPublic && v.Class != ClassPrivate) {
		return 0
	}
	host := strings.TrimRight(v.Host, ".")
	for _, p := range r.block {
		if p.matchName(host) {
			return ReasonHostBlocked
		}
		if p.Prefix.IsValid() {
			for _, a := range v.Addrs {
				if p.Prefix.Contains(a.Unmap()) {
					return ReasonHostBlocked
				}
			}
		}
	}
	if len(r.allow) == 0 {
		return 0
	}
	for _, p := range r.allow {
		if p.matchName(host) {
			return 0
		}
	}
	// An address prefix allows a URL only when every address is in one:
	// a name with one address outside could be reached there.
	if len(v.Addrs) == 0 {
		return ReasonHostNotAllowed
	}
	for _, a := range v.Addrs {
		in := false
		for _, p := range r.allow {
			if p.Prefix.IsValid() && p.Prefix.Contains(a.Unmap()) {
				in = true
				break
			}
		}
		if !in {
			return ReasonHostNotAllowed
		}
	}
	return 0
}

// Blocked returns a copy of the block list, for rules that must be
// written in another form (a browser's own blocking of WebSockets, which
// takes whole hosts only).
func (r *HostRules) Blocked() []HostPattern {
	if r == nil {
		return nil
	}
	return append([]HostPattern(nil), r.block...)
}
