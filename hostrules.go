package hybroute

import "github.com/hybroute/hybroute/netpolicy"

// Operator rules narrow what the security floor allows: a list of hosts a
// router's browsers may reach (WithAllowedHosts) and a list they may not
// (WithBlockedHosts). They are part of the policy's refuse, so the plan,
// the guard (every request of a remote browser, every document of the
// local one), the landed-URL check and the egress check (every connection
// of the local browser) hold them alike. They never widen: a host on the
// allow list is still refused when it is metadata, or private where
// private URLs may not run.

// WithAllowedHosts lets the router's browsers reach only hosts that match
// one of patterns, on every route: URL literals, every request the guard
// sees, redirect hops, landed URLs and, on the local browser, every
// connection (WebSockets included). Anything else is refused with
// [netpolicy.ReasonHostNotAllowed]. A pattern is a host name (example.com: that
// host only), a wildcard (*.example.com: its subdomains, not example.com
// itself), an IP address, or an address prefix (10.1.0.0/16), which
// matches a literal or a name all of whose addresses fall in it. Names are
// compared as Chromium writes them (lower case, punycode).
func WithAllowedHosts(patterns ...string) Option {
	return func(c *config) { c.allowedHosts = append(c.allowedHosts, patterns...) }
}

// WithBlockedHosts refuses hosts that match one of patterns (the syntax of
// [WithAllowedHosts]), on every route, with [netpolicy.ReasonHostBlocked]. An
// address prefix matches a literal in it or a name with any address in it.
// A blocked host stays blocked when the allow list names it too.
func WithBlockedHosts(patterns ...string) Option {
	return func(c *config) { c.blockedHosts = append(c.blockedHosts, patterns...) }
}

// blockedWebSockets are the offline rules (internal/guard) that stop
// WebSockets to blocked hosts, which the Fetch domain never pauses: exact
// hosts, wildcards and single addresses. A wider address prefix cannot be
// written as a rule (Chromium's matcher honours whole hosts only), nor can
// an allow list; on the local browser the egress check holds both.
func blockedWebSockets(r *netpolicy.HostRules) []string {
	var out []string
	for _, p := range r.Blocked() {
		switch {
		case p.Host != "":
			out = append(out, "ws{s}?://"+p.Host+":*/*")
		case p.Suffix != "":
			out = append(out, "ws{s}?://*"+p.Suffix+":*/*")
		case p.Prefix.IsSingleIP() && p.Prefix.Addr().Is4():
			out = append(out, "ws{s}?://"+p.Prefix.Addr().String()+":*/*")
		case p.Prefix.IsSingleIP():
			out = append(out, "ws{s}?://["+p.Prefix.Addr().String()+"]:*/*")
		}
	}
	return out
}
