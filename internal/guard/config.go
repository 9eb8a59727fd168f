package guard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/hybroute/hybroute/route"
)

// Navigation is a navigation command (Page.navigate, Target.createTarget)
// the guard holds before it is sent.
type Navigation struct {
	Method string // the command
	URL    string // as the command names it
	// Cleaned is URL as Chromium reads it: C0 controls and spaces trimmed,
	// tabs and newlines removed.
	Cleaned string
	// Scheme is Cleaned's scheme, lower case; "" when it has none.
	Scheme string
}

// Lookup answers the names a decision needs: from the call's answers when
// the session's call named the name, else from the session's own lookups
// (one per name, reused for a while), else, for a target no session owns,
// from a lookup of its own. A lookup that runs out of the guard's limit
// fails with an error wrapping [ErrLookupTimeout].
type Lookup interface {
	LookupName(name string) ([]netip.Addr, error)
}

// ErrLookupTimeout is the error of a name whose lookup did not answer
// within the guard's limit: the request is refused (fail closed).
var ErrLookupTimeout = errors.New("the lookup timed out")

// Resolver resolves names, as net.Resolver does.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Config is what a guard is built with: where the browser runs, the
// decision on one URL, and the errors it refuses with. The guard holds no
// rule of its own about where a URL may go; it decides what to pause,
// when, and in which target, and asks Decide about each URL it paused.
// The functions run on the guard's goroutines, several at once.
type Config struct {
	// Route is the browser the guard covers: on route.Cloud the guard is
	// all that stands between its pages and where they go; on route.Local
	// the egress check sees every connection too.
	Route route.Route
	// Decide decides one paused request for url, a hop of a redirect
	// chain: afterPublic says an earlier hop of the chain was public. look
	// answers the names the decision needs, for the session and the call
	// the request belongs to. public says the hop counts as public for the
	// hops after it; a non-nil error refuses the request. Nil refuses
	// every request.
	Decide func(url string, look Lookup, afterPublic bool) (public bool, err error)
	// RefuseNavigation decides a navigation command the guard holds before
	// it reaches the browser, one whose scheme is not http, https, ws, wss
	// or data: nil sends it, an error refuses it. A nil RefuseNavigation
	// refuses them all.
	RefuseNavigation func(n Navigation) error
	// Refused records a request the guard refused, of the session of
	// cache key key ("" when no session owns its target): it is in that
	// session's refusal log already, and failed its call if it was a
	// document. Nil: the guard's own log line only.
	Refused func(ctx context.Context, key string, r Refusal)
	// Unsupported is the error of a browser the guard cannot cover, which
	// lacks what lacks says. Nil: an error that says so.
	Unsupported func(browser, lacks string) error
	// Resolver answers the names the call's answers do not hold.
	Resolver Resolver
	// LookupTimeout bounds the lookup of one paused request; 0 is
	// [LookupTimeout].
	LookupTimeout time.Duration
	// Log gets the guard's refusals and failures; nil discards them.
	Log *slog.Logger
	// RemotePrivate: a remote browser may open private addresses, so its
	// WebSockets to loopback and IPv6 literals are not stopped.
	RemotePrivate bool
	// WSRules are more offline rules, for the operator's host rules.
	WSRules []string
	// EveryRequest: the decisions need every request of a remote
	// browser paused (the operator's host rules, which no browser check
	// applies), so the guard keeps ModeEveryRequest (lna.go).
	EveryRequest bool
	// WebRTC: a remote browser's pages keep WebRTC, which then reaches
	// whatever address a page names (webrtc.go). Off by default there; the
	// local browser's WebRTC is the egress check's.
	WebRTC bool
}

// errNoDecision refuses what a Config without Decide or RefuseNavigation
// would have to decide (fail closed).
var errNoDecision = errors.New("hybroute: the guard has no decision for this")

// orDefault fills the optional functions of c.
func (c Config) orDefault() Config {
	if c.Decide == nil {
		c.Decide = func(string, Lookup, bool) (bool, error) { return false, errNoDecision }
	}
	if c.RefuseNavigation == nil {
		c.RefuseNavigation = func(Navigation) error { return errNoDecision }
	}
	if c.Refused == nil {
		c.Refused = func(context.Context, string, Refusal) {}
	}
	if c.Unsupported == nil {
		c.Unsupported = func(browser, lacks string) error {
			return fmt.Errorf("hybroute: the browser %s lacks %s", browser, lacks)
		}
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.LookupTimeout <= 0 {
		c.LookupTimeout = LookupTimeout
	}
	return c
}

// LookupTimeout bounds the name lookup of one paused request. A name that
// does not answer in time is refused (fail closed): Chromium would hold
// the request for as long as we do not answer, so only our own bound ends
// it, and an address we cannot see is one we cannot allow.
const LookupTimeout = 5 * time.Second
