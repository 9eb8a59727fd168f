package guard

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"

	"github.com/hybroute/hybroute/internal/metadata"

	"github.com/hybroute/hybroute/route"
)

// FetchPatterns are the requests Fetch pauses on the browser w: every
// request on a remote browser; on the local one every document and any
// request whose canonical URL could name a metadata endpoint (the egress
// check sees the rest at connect time). A pattern is only a filter:
// Config.Decide decides each request it pauses.
func FetchPatterns(w route.Route) []*fetch.RequestPattern {
	if w != route.Local {
		return EveryRequest
	}
	return guardPatterns
}

// EveryRequest pauses every request at its request stage. It is a
// variable so that a test can give it a shape Chromium refuses.
var EveryRequest = []*fetch.RequestPattern{{URLPattern: "*"}}

// guardPatterns are the local browser's: documents, and any request whose
// canonical URL holds the text of a metadata endpoint (metadataURLText).
var guardPatterns = func() []*fetch.RequestPattern {
	ps := []*fetch.RequestPattern{{URLPattern: "*", ResourceType: network.ResourceTypeDocument}}
	for _, s := range metadataURLText() {
		ps = append(ps, &fetch.RequestPattern{URLPattern: "*" + s + "*"})
	}
	return ps
}()

// ipv6LiteralText is the fixed text of every URL whose host is an IPv6
// literal, with or without userinfo before it.
var ipv6LiteralText = [...]string{"://[", "@["}

// metadataURLText is the text some part of which every canonical URL
// naming an endpoint of the metadata table contains, derived from the
// table: each name; each IPv4 block's fixed octets ("169.254.", or the
// whole of a single address); and, for IPv6 blocks and for the IPv6 forms
// that embed an IPv4 address (which ClassifyAddr judges by that address,
// and Chromium spells in hex), the bracket of an IPv6 literal. A text that
// holds another is dropped: the shorter one's pattern matches it already
// (metadata.goog by *metadata*).
func metadataURLText() []string {
	var all []string
	add := func(s ...string) {
		for _, x := range s {
			if !slices.Contains(all, x) {
				all = append(all, x)
			}
		}
	}
	for _, e := range metadata.Table() {
		switch {
		case e.Name != "":
			add(e.Name)
		case e.Prefix.Addr().Is4():
			add(v4PrefixText(e.Prefix))
			add(ipv6LiteralText[:]...)
		default:
			add(ipv6LiteralText[:]...)
		}
	}
	var out []string
	for _, n := range all {
		if !slices.ContainsFunc(all, func(m string) bool { return m != n && strings.Contains(n, m) }) {
			out = append(out, n)
		}
	}
	return out
}

// v4PrefixText is the dotted text every address of an IPv4 block starts
// with: its whole octets, and the dot after them unless the block is one
// address. A block that ends inside an octet is widened to the octet
// before it, so the pattern matches more, never less.
func v4PrefixText(p netip.Prefix) string {
	b := p.Addr().As4()
	n := p.Bits() / 8
	parts := make([]string, 0, n)
	for _, x := range b[:n] {
		parts = append(parts, strconv.Itoa(int(x)))
	}
	if n == 4 {
		return strings.Join(parts, ".")
	}
	return strings.Join(append(parts, ""), ".")
}

// MetadataLiterals are the metadata endpoints that are single addresses,
// spelled as canonical URL hosts (metadataLiterals).
func MetadataLiterals() []string { return slices.Clone(metadataLiterals) }

// metadataLiterals are the metadata endpoints that are single addresses,
// spelled as canonical URL hosts: the offline rules name each one
// (Chromium's rule matcher only honours whole canonical hosts, so
// 169.254.0.0/16 cannot be written as a pattern). They come from the
// metadata table: its single-address blocks and the well-known addresses
// inside its wider ones.
var metadataLiterals = func() []string {
	var out []string
	for _, a := range metadata.Addrs() {
		out = append(out, metadata.Host(a))
	}
	return out
}()

// OfflineRules are the URL patterns whose requests fail as if offline in
// every target: what stops a WebSocket handshake, which Fetch never
// pauses. Every metadata address that is a single address, and every
// WebSocket to a metadata name, on both routes. On a remote browser that
// may not open private addresses, also every WebSocket to an IPv6 literal
// (one can embed any IPv4 address) and to the loopback hosts the matcher
// can hold (privateWSPatterns). HTTP is Fetch's: the name, IPv6 and
// loopback rules name ws and wss only, so an HTTP request to such a host
// still meets the verdict rather than a rule.
func OfflineRules(w route.Route, remotePrivate bool) []string {
	var pats []string
	for _, h := range metadataLiterals {
		pats = append(pats, "*://"+h+":*/*")
	}
	for _, n := range metadata.Names() {
		pats = append(pats, WSHostRule(n))
	}
	if w != route.Local && !remotePrivate {
		pats = append(pats, privateWSPatterns...)
	}
	return pats
}

// WSHostRule is the offline rule that stops every WebSocket (ws and wss,
// any port) to the host name host, in every spelling Chromium reads as
// that host. The matcher sees the URL as Chromium canonicalised it, so
// case, percent-encoding (widgets.test%2e) and IDNA are already undone;
// what is left is the trailing dot, which the name keeps (widgets.test.
// and widgets.test.. are other hosts to the matcher, the same one to DNS),
// so the rule takes any run of them (TestOperatorRulesHoldOnBothRoutes).
// host is a canonical name: lower case, punycode, no trailing dot.
func WSHostRule(host string) string {
	return "ws{s}?://" + escapePattern(host) + "{.}*:*/*"
}

// WSSubdomainRule is WSHostRule for every subdomain of domain (a.domain,
// a.b.domain), not domain itself.
func WSSubdomainRule(domain string) string {
	return "ws{s}?://*." + escapePattern(domain) + "{.}*:*/*"
}

// escapePattern escapes the characters URLPattern reads as syntax. The URL
// standard forbids none of "+", "*", "(", ")", "{" or "}" in a domain:
// escaped, a rule never means more than its host.
func escapePattern(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\+*?:(){}`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// privateWSPatterns are the private hosts a WebSocket rule can name on a
// remote browser. Chromium 156's matcher canonicalises the fixed text of a
// hostname pattern as a host, so a partly-fixed pattern (127.:b.:c.:d,
// 10.:b.:c.:d, 169.254.:c.:d) never matches (TestOfflineRulePatterns), and
// :a.:b.:c.:d would also match every four-label name: private IPv4 ranges
// cannot be written as a rule, only single hosts. An IPv4 literal needs no
// trailing-dot form (Chromium drops the dot of 127.0.0.1.); a name does.
// localhost and every name under it reach loopback without DNS in
// Chromium; the other names are the loopback names of common /etc/hosts
// files (Debian's and Docker's ip6-*, Red Hat's localhost4 and
// localhost6 forms), which a provider's container resolves the same way.
var privateWSPatterns = []string{
	"ws{s}?://[*]:*/*",
	"ws{s}?://127.0.0.1:*/*",
	"ws{s}?://0.0.0.0:*/*",
	WSHostRule("localhost"),
	WSSubdomainRule("localhost"),
	WSHostRule("ip6-localhost"),
	WSHostRule("ip6-loopback"),
	WSHostRule("localhost.localdomain"),
	WSHostRule("localhost4"),
	WSHostRule("localhost4.localdomain4"),
	WSHostRule("localhost6"),
	WSHostRule("localhost6.localdomain6"),
}
