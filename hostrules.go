package hybroute

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/hybroute/hybroute/internal/whatwg"
)

// Operator rules narrow what the security floor allows: a list of hosts a
// router's browsers may reach (WithAllowedHosts) and a list they may not
// (WithBlockedHosts). They are part of the policy's refuse, so the plan,
// the guard (every request of a remote browser, every document of the
// local one), the landed-URL check and the egress check (every connection
// of the local browser) hold them alike. They never widen: a host on the
// allow list is still refused when it is metadata, or private where
// private URLs may not run.

// ErrHostRule is wrapped by the error of a URL or connection an operator
// rule refused ([ReasonHostBlocked], [ReasonHostNotAllowed]), and by
// [New]'s error for a pattern it cannot read.
var ErrHostRule = errors.New("hybroute: refused by an operator host rule")

// WithAllowedHosts lets the router's browsers reach only hosts that match
// one of patterns, on every route: URL literals, every request the guard
// sees, redirect hops, landed URLs and, on the local browser, every
// connection (WebSockets included). Anything else is refused with
// [ReasonHostNotAllowed]. A pattern is a host name (example.com: that
// host only), a wildcard (*.example.com: its subdomains, not example.com
// itself), an IP address, or an address prefix (10.1.0.0/16), which
// matches a literal or a name all of whose addresses fall in it. Names are
// compared as Chromium writes them (lower case, punycode).
func WithAllowedHosts(patterns ...string) Option {
	return func(c *config) { c.allowedHosts = append(c.allowedHosts, patterns...) }
}

// WithBlockedHosts refuses hosts that match one of patterns (the syntax of
// [WithAllowedHosts]), on every route, with [ReasonHostBlocked]. An
// address prefix matches a literal in it or a name with any address in it.
// A blocked host stays blocked when the allow list names it too.
func WithBlockedHosts(patterns ...string) Option {
	return func(c *config) { c.blockedHosts = append(c.blockedHosts, patterns...) }
}

// operatorRules are the parsed operator rules; nil when there are none.
type operatorRules struct {
	allow, block []hostPattern
}

// hostPattern is one pattern: a host, a wildcard's suffix, or a prefix.
type hostPattern struct {
	host   string       // an exact host, as Chromium writes it
	suffix string       // ".example.com" for *.example.com
	prefix netip.Prefix // an address or an address prefix
}

// parseHostRules reads the patterns of both lists; nil when both are
// empty.
func parseHostRules(allow, block []string) (*operatorRules, error) {
	if len(allow) == 0 && len(block) == 0 {
		return nil, nil
	}
	r := &operatorRules{}
	for _, l := range [...]struct {
		in  []string
		out *[]hostPattern
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

func parseHostPattern(s string) (hostPattern, error) {
	raw := strings.TrimSpace(s)
	bad := func(why string) (hostPattern, error) {
		return hostPattern{}, fmt.Errorf("%w: host pattern %q: %s", ErrHostRule, s, why)
	}
	if raw == "" {
		return bad("empty")
	}
	if p, err := netip.ParsePrefix(raw); err == nil {
		return hostPattern{prefix: p.Masked()}, nil
	}
	if a, err := netip.ParseAddr(strings.Trim(raw, "[]")); err == nil {
		return hostPattern{prefix: netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())}, nil
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
	host := strings.TrimSuffix(u.Host, ".")
	if wild {
		return hostPattern{suffix: "." + host}, nil
	}
	return hostPattern{host: host}, nil
}

// matchName reports whether a name pattern matches host.
func (p hostPattern) matchName(host string) bool {
	switch {
	case p.host != "":
		return host == p.host
	case p.suffix != "":
		return strings.HasSuffix(host, p.suffix)
	}
	return false
}

// refuse is the operator rules' reason to refuse v, or 0. Only URLs that
// reach a host are held to them.
func (r *operatorRules) refuse(v Verdict) Reason {
	if r == nil || v.Host == "" || (v.Class != ClassPublic && v.Class != ClassPrivate) {
		return 0
	}
	host := strings.TrimSuffix(v.Host, ".")
	for _, p := range r.block {
		if p.matchName(host) {
			return ReasonHostBlocked
		}
		if p.prefix.IsValid() {
			for _, a := range v.Addrs {
				if p.prefix.Contains(a.Unmap()) {
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
			if p.prefix.IsValid() && p.prefix.Contains(a.Unmap()) {
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

// wsPatterns are the offline rules (internal/guard) that stop WebSockets to
// blocked hosts, which the Fetch domain never pauses: exact hosts,
// wildcards and single addresses. A wider address prefix cannot be
// written as a rule (Chromium's matcher honours whole hosts only), nor can
// an allow list; on the local browser the egress check holds both.
func (r *operatorRules) wsPatterns() []string {
	if r == nil {
		return nil
	}
	var out []string
	for _, p := range r.block {
		switch {
		case p.host != "":
			out = append(out, "ws{s}?://"+p.host+":*/*")
		case p.suffix != "":
			out = append(out, "ws{s}?://*"+p.suffix+":*/*")
		case p.prefix.IsSingleIP() && p.prefix.Addr().Is4():
			out = append(out, "ws{s}?://"+p.prefix.Addr().String()+":*/*")
		case p.prefix.IsSingleIP():
			out = append(out, "ws{s}?://["+p.prefix.Addr().String()+"]:*/*")
		}
	}
	return out
}
