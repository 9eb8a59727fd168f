package netpolicy

import (
	"net/netip"

	"github.com/hybroute/hybroute/internal/redact"
)

// Verdict is the single decision on one URL literal: both the safety check
// and the route are read from it, never recomputed.
type Verdict struct {
	URL   string       // as given
	Host  string       // the host as Chromium would parse it
	Addrs []netip.Addr // the addresses this verdict was decided on (pinned)
	Class Class
	Err   error // non-nil when this URL must be blocked

	// Credential names the credential the URL carries, if any: the first
	// credential-named query parameter with a value (token, api_key,
	// X-Amz-Signature, …, as written), or "password" for a userinfo
	// password. Set for the literals a call is planned on ([MarkLiteral]),
	// where it keeps the URL off cloud browsers ([ReasonSecretInURL]);
	// empty for a URL that loads nothing, cannot be routed, or is refused
	// anyway.
	Credential string

	// ResolveErr is what the [Resolver] said when a name did not resolve.
	// Such a name is public (the cloud browser does its own DNS) unless its
	// suffix is reserved for private use; the error is kept for callers.
	ResolveErr error
}

// Blocked reports whether the URL must not be opened by any browser.
func (v Verdict) Blocked() bool { return v.Err != nil }

// MarkLiteral sets v.Credential for a URL literal that loads from a
// network, so that [Policy.RefuseLiteral] and [Policy.KeepsOffCloud] can
// hold it to the secrets rule. Only literals are marked: a guard or a
// landed-URL check classifies without it, so a redirect to a URL with a
// token (an OAuth flow) is not refused.
func MarkLiteral(v *Verdict) {
	if v.Class == ClassPublic || v.Class == ClassPrivate {
		v.Credential, _ = redact.Credential(v.URL)
	}
}
