package hybroute

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/fetch"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/guard"
	"github.com/hybroute/hybroute/internal/metadata"
	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/route"
)

// tableHosts are the hosts of canonical URLs that name endpoint e: a name
// as written and with a trailing dot; for a block its first and last
// address and its Known addresses, and for an IPv4 block the IPv6 forms
// that embed those (IPv4-mapped and NAT64), spelled in hex as Chromium
// canonicalises them.
func tableHosts(e metadata.Endpoint) []string {
	if e.Name != "" {
		return []string{e.Name, e.Name + "."}
	}
	addrs := append([]netip.Addr{e.Prefix.Addr(), lastAddr(e.Prefix)}, e.Known...)
	var out []string
	for _, a := range addrs {
		out = append(out, metadata.Host(a))
		if a.Is4() {
			b := a.As4()
			out = append(out, fmt.Sprintf("[::ffff:%x:%x]", uint16(b[0])<<8|uint16(b[1]), uint16(b[2])<<8|uint16(b[3])))
			nat64 := netip.MustParseAddr("64:ff9b::").As16()
			copy(nat64[12:], b[:])
			out = append(out, metadata.Host(netip.AddrFrom16(nat64)))
		}
	}
	return out
}

// lastAddr is the highest address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// tableURLs are the URLs a page could request of host.
func tableURLs(host string) []string {
	return []string{"http://" + host + "/", "https://user:pass@" + host + ":8443/latest/meta-data/?x=1"}
}

// fetchPatternMatch reports whether url matches a Fetch URLPattern:
// '*' is any run, '?' one character, backslash escapes the next.
func fetchPatternMatch(pattern, url string) bool {
	if pattern == "" {
		return url == ""
	}
	switch c := pattern[0]; c {
	case '*':
		for i := 0; i <= len(url); i++ {
			if fetchPatternMatch(pattern[1:], url[i:]) {
				return true
			}
		}
		return false
	case '?':
		return url != "" && fetchPatternMatch(pattern[1:], url[1:])
	case '\\':
		if len(pattern) > 1 {
			c = pattern[1]
			pattern = pattern[1:]
		}
		fallthrough
	default:
		return url != "" && url[0] == c && fetchPatternMatch(pattern[1:], url[1:])
	}
}

func TestFetchPatternMatch(t *testing.T) {
	t.Parallel()
	assert.True(t, fetchPatternMatch("*169.254.*", "http://169.254.1.2/"))
	assert.False(t, fetchPatternMatch("*169.254.*", "http://169.25.4.1/"))
	assert.True(t, fetchPatternMatch("a?c", "abc"))
	assert.False(t, fetchPatternMatch(`a\*c`, "abc"))
	assert.True(t, fetchPatternMatch(`a\*c`, "a*c"))
}

// TestMetadataTableCoverage: every spelling of every endpoint of the
// metadata table is refused by the verdict even where private URLs are
// allowed, paused by a Fetch pattern of the local browser's guard, and,
// when it is a single address or a name, stopped by a WebSocket offline
// rule; and the guard's patterns and its literals hold nothing that is not in the
// table.
func TestMetadataTableCoverage(t *testing.T) {
	t.Parallel()
	r := newTestRouter(t, nil, WithAllowPrivateURLs(true))
	local := guard.OfflineRules(route.Local, false)
	fetchPats := guard.FetchPatterns(route.Local)[1:] // [0] is every document, whatever its host
	metadataLiterals := guard.MetadataLiterals()
	table := metadata.Table()
	require.NotEmpty(t, table)

	var spellings []string
	for _, e := range table {
		for _, h := range tableHosts(e) {
			for _, u := range tableURLs(h) {
				spellings = append(spellings, u)
				v := r.verdict(testCtx(t), u)
				assert.Equal(t, netpolicy.ClassMetadata, v.Class, "%s (%s)", u, e.Who)
				assert.ErrorIs(t, v.Err, netpolicy.ErrMetadata, u)
				assert.True(t, slices.ContainsFunc(fetchPats, func(p *fetch.RequestPattern) bool {
					return fetchPatternMatch(p.URLPattern, u)
				}), "no guard pattern pauses %s (%s)", u, e.Who)
			}
		}
	}
	for _, a := range metadata.Addrs() {
		h := metadata.Host(a)
		assert.Equal(t, netpolicy.ClassMetadata, netpolicy.ClassifyAddr(a), h)
		assert.Contains(t, metadataLiterals, h)
		assert.Contains(t, local, "*://"+h+":*/*", "no WebSocket rule names %s", h)
	}
	for _, n := range metadata.Names() {
		assert.Contains(t, local, guard.WSHostRule(n), "no WebSocket rule names %s", n)
	}
	for _, want := range []string{"169.254.169.254", "169.254.170.2", "100.100.100.200", "[fd00:a9fe:a9fe::1]", "[fd00:ec2::254]"} {
		assert.Contains(t, metadataLiterals, want, "the table lost a well-known endpoint")
	}

	// Nothing derived that the table does not hold (the verdict's blocks:
	// netpolicy's TestVerdictMetadataBlocksAreTheTable).
	for _, p := range fetchPats {
		assert.True(t, slices.ContainsFunc(spellings, func(u string) bool { return fetchPatternMatch(p.URLPattern, u) }),
			"pattern %s matches no spelling of the table", p.URLPattern)
		assert.Empty(t, p.ResourceType, p.URLPattern)
	}
	assert.Len(t, metadataLiterals, len(metadata.Addrs()), "a literal the table does not hold")
	assert.Len(t, local, len(metadataLiterals)+len(metadata.Names()), "the local browser's offline rules are the literals and the names")

	// The patterns are not wider than they must be: the fixed text of the
	// names and the IPv4 blocks, and no pattern held by another.
	var subs []string
	for _, p := range fetchPats {
		subs = append(subs, strings.Trim(p.URLPattern, "*"))
	}
	assert.Contains(t, subs, "169.254.")
	assert.Contains(t, subs, "100.100.100.200")
	assert.Contains(t, subs, "metadata")
	assert.NotContains(t, subs, "metadata.goog", "*metadata* matches it already")
	assert.Equal(t, len(subs), len(slices.Compact(slices.Sorted(slices.Values(subs)))), "a pattern twice")
}
