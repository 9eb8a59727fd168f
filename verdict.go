package hybroute

import (
	"net/netip"

	"github.com/hybroute/hybroute/netpolicy"
)

// Class is what a URL's target is, as far as routing and safety care
// ([netpolicy.Class]). Among the classes of an address the order matters:
// [ClassPublic] < [ClassPrivate] < [ClassMetadata], each more restrictive
// than the one before, so the verdict on a name with several answers is
// the largest of their classes. [ClassInvalid] and [ClassNoRoute] are not
// classes of an address and not on that scale.
type Class = netpolicy.Class

const (
	// ClassPublic is a globally routable address, or a name that resolves
	// only to such addresses (or does not resolve here at all).
	ClassPublic = netpolicy.ClassPublic
	// ClassPrivate is anything not globally routable: loopback, RFC 1918,
	// link-local, ULA, multicast, reserved, localhost names, and names that
	// resolve to any of these. It also covers URLs that only make sense on
	// this machine, such as an allowed file: URL.
	ClassPrivate = netpolicy.ClassPrivate
	// ClassMetadata is a cloud metadata endpoint: blocked on every route.
	ClassMetadata = netpolicy.ClassMetadata
	// ClassInvalid is a URL Chromium would refuse, or a scheme we refuse.
	ClassInvalid = netpolicy.ClassInvalid
	// ClassNoRoute is a URL that loads nothing from any network: about:blank,
	// about:srcdoc, a data: URL, and chrome-error://chromewebdata/ (the page
	// a tab shows after a failed load). It runs wherever the call runs.
	ClassNoRoute = netpolicy.ClassNoRoute
)

// Verdict is the single decision on one URL literal: both the safety check
// and the route are read from it, never recomputed ([netpolicy.Verdict]).
type Verdict = netpolicy.Verdict

// ClassifyAddr classifies one address. Metadata is checked first, because
// several metadata addresses sit inside private ranges; IPv6 forms that embed
// an IPv4 address are judged by the IPv4 address inside; everything that is
// not globally routable is private. It does not allocate.
func ClassifyAddr(a netip.Addr) Class { return netpolicy.ClassifyAddr(a) }
