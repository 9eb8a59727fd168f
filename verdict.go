package hybroute

import (
	"errors"
	"net/netip"
)

// Class is what a URL's target is, as far as routing and safety care.
type Class int

const (
	// ClassPublic is a globally routable address, or a name that resolves
	// only to such addresses (or does not resolve here at all).
	ClassPublic Class = iota
	// ClassPrivate is anything not globally routable: loopback, RFC 1918,
	// link-local, ULA, localhost names and the like.
	ClassPrivate
	// ClassMetadata is a cloud metadata endpoint: blocked on every route.
	ClassMetadata
	// ClassInvalid is a URL Chromium would refuse, or a scheme we refuse.
	ClassInvalid
)

var (
	// ErrMetadata is wrapped by the error of a URL that targets a cloud
	// metadata endpoint.
	ErrMetadata = errors.New("URL targets a cloud metadata endpoint")
	// ErrPrivate is wrapped by the error of a private URL that the options
	// do not let through.
	ErrPrivate = errors.New("URL targets a private or internal address")
	// ErrInvalidURL is wrapped by the error of a URL that cannot be routed.
	ErrInvalidURL = errors.New("invalid URL")
)

// Verdict is the single decision on one URL literal: both the safety check
// and the route are read from it, never recomputed.
type Verdict struct {
	URL   string       // as given
	Host  string       // the host as Chromium would parse it
	Addrs []netip.Addr // the addresses this verdict was decided on (pinned)
	Class Class
	Err   error // non-nil when this URL must be blocked
}
