// Package floor is the router's floor as it applies it: the options turned
// into one [netpolicy.Policy], and the decisions the plan, the guard
// (internal/guard), the landed-URL check and the egress check
// (internal/egress) take with it. It is not an enforcement point: the guard
// and the proxy carry out what it decides, and the root holds one *Policy.
package floor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/route"
)

// The policy is the one place where a URL's class meets the router's
// options. The rule itself is [netpolicy.Policy]; this package turns the
// options into it, and owns what belongs to routing: where a call's
// private URLs go, the route of a call and its cache key. The plan asks the
// policy for every URL literal, the guard for every request it pauses, the
// landed-URL check for the URL a tab ended on, and the egress check for
// every connection of the local browser: they cannot disagree, because
// they ask the same value the same question.

// Config is what of the router's options the policy is made of.
type Config struct {
	Resolver       netpolicy.Resolver
	AllowedSchemes []string             // WithAllowedSchemes, lower-case, no ':'
	Hosts          *netpolicy.HostRules // WithAllowedHosts and WithBlockedHosts

	CDPOverride  bool // WithCDPURL
	HasProvider  bool
	AutoLocal    bool // WithAutoLocalForPrivateURLs
	AllowPrivate bool // WithAllowPrivateURLs
	AllowSecrets bool // WithAllowSecretsInURLs
	CloudWebRTC  bool // WithCloudWebRTC: a remote browser's pages keep WebRTC

	LocalSuffix string // ends the cache key of a session on the local route

	MaxHostsPerCall   int // WithMaxHostsPerCall
	LookupConcurrency int // WithLookupConcurrency

	// GuardLookup bounds the guard's lookup of one name; WSRules are the
	// guard's offline rules for WebSockets to blocked hosts.
	GuardLookup time.Duration
	WSRules     []string

	// Refused counts a request or connection refused after planning;
	// source is "guard", "egress" or "landing". nil counts nothing.
	Refused func(ctx context.Context, source string, err error)
	// Unsupported is the error of a browser the guard cannot cover on w.
	Unsupported func(browser, lacks string, w route.Route) error
}

// Policy is what the router's options allow, and where its calls run. New
// builds one; it never changes after that, so it is shared without a lock.
type Policy struct {
	Cls  *netpolicy.Classifier // classifies with the resolver and the allowed schemes
	Rule netpolicy.Policy      // the allow/refuse rule: private URLs, secrets and host rules per browser

	Override bool // WithCDPURL: every call goes to that browser, none is local
	Local    bool // no provider and no override: every call is local
	Hybrid   bool // a provider, no override, auto-local on: private URLs go to the ::local sidecar

	cfg Config
}

// New is the policy of cfg.
func New(cfg Config) *Policy {
	p := &Policy{cfg: cfg, Override: cfg.CDPOverride}
	p.Local = !p.Override && !cfg.HasProvider
	p.Hybrid = !p.Override && cfg.HasProvider && cfg.AutoLocal
	p.Cls = netpolicy.NewClassifier(cfg.Resolver, cfg.AllowedSchemes...)
	p.Rule = netpolicy.Policy{
		// With no cloud a private URL runs locally; with auto-local it is
		// sent to the sidecar; otherwise only an explicit allow lets it
		// run, on the local fallback too.
		PrivateOnLocal: p.Local || p.Hybrid || cfg.AllowPrivate,
		PrivateOnCloud: cfg.AllowPrivate,
		SecretsOnCloud: cfg.AllowSecrets,
		Hosts:          cfg.Hosts,
	}
	return p
}

// refused counts a refusal after planning, where the router counts them.
func (p *Policy) refused(ctx context.Context, source string, err error) {
	if p.cfg.Refused != nil {
		p.cfg.Refused(ctx, source, err)
	}
}

// Refuse is the allow/refuse rule: nil when a URL of verdict v may be opened
// on the browser of route w, else a *BlockedError that names the reason.
func (p *Policy) Refuse(v netpolicy.Verdict, w route.Route) error {
	return p.Rule.Refuse(v, w)
}

// RefuseLiteral is Refuse for a URL literal of a call being planned: it is
// judged where the router's routes take a private URL, and held to the
// secrets rule there.
func (p *Policy) RefuseLiteral(v netpolicy.Verdict) error {
	return p.Rule.RefuseLiteral(v, p.PrivateRoute())
}

// RefuseHop is Refuse for one document request of a tab, which may be a
// hop of a redirect chain: a private hop after a public one is refused on
// every route, as that is how a public page walks a browser into a LAN.
func (p *Policy) RefuseHop(v netpolicy.Verdict, w route.Route, afterPublic bool) error {
	return p.Rule.RefuseHop(v, w, afterPublic)
}

// Classify computes the class of rawURL, with the policy's resolver and
// schemes. It leaves Err set only for ClassInvalid, with the detail of what
// was wrong.
func (p *Policy) Classify(ctx context.Context, rawURL string) netpolicy.Verdict {
	return p.Cls.Classify(ctx, rawURL, nil)
}

// ClassifyWith is Classify that takes a name's answers from the call's
// lookups when they hold it, instead of asking the resolver again.
func (p *Policy) ClassifyWith(ctx context.Context, rawURL string, known *Lookups) netpolicy.Verdict {
	return p.Cls.Classify(ctx, rawURL, known.np())
}

// CheckPage applies the landed-URL rule to u, the URL of a page on w
// about to be read: an error wrapping the refusal when the page is where
// its browser must not be. known are the call's answers (nil: none).
func (p *Policy) CheckPage(ctx context.Context, u string, w route.Route, known *Lookups) error {
	if err := p.Refuse(p.ClassifyWith(ctx, u, known), w); err != nil {
		return fmt.Errorf("hybroute: the page is at a blocked address: %w", err)
	}
	return nil
}

// PrivateRoute is the browser the router's routes send a private URL to.
func (p *Policy) PrivateRoute() route.Route {
	if p.Local || p.Hybrid {
		return route.Local
	}
	return route.Cloud
}

// RoutesLocally is HybridRoutesLocally on a verdict: on a hybrid router, a
// private URL that is not refused, or a URL literal that carries a
// credential (the secret_in_url rule: kept off the cloud browser).
func (p *Policy) RoutesLocally(v netpolicy.Verdict) bool {
	return p.Hybrid && v.Err == nil && (v.Class == netpolicy.ClassPrivate || p.Rule.KeepsOffCloud(v))
}

// Route is the README's "Which URL goes where" table, for one call whose URL
// literals have the verdicts vs (already asked of Refuse): a CDP override
// takes everything, no cloud means everything is local, and one private URL
// (or one that carries a credential) on a hybrid router takes the whole
// call local. Otherwise navigation picks
// the browser: a navigation to a URL that loads from a network goes to the
// cloud. Any other call runs where the session's page is (last, the route
// its session took last), so a public URL in code (a comment, a fetch)
// does not move it away from its page; a new session starts on the cloud.
// A refused URL does not move the call: the plan still names where it
// would have run.
func (p *Policy) Route(vs []netpolicy.Verdict, last route.Route, hasLast, navigates bool) route.Route {
	switch {
	case p.Override:
		return route.Cloud
	case p.Local:
		return route.Local
	}
	targets := false // some URL loads from a network
	for _, v := range vs {
		if v.Err != nil {
			continue
		}
		if p.RoutesLocally(v) {
			return route.Local
		}
		if v.Class != netpolicy.ClassNoRoute {
			targets = true
		}
	}
	if hasLast && !(targets && navigates) {
		return last
	}
	return route.Cloud
}

// CacheKey names the session a call on route runs in: the local route has
// its own key (Config.LocalSuffix), with no provider as on a hybrid
// router, so the local session of a key never shares a cache entry (or a
// browser) with the cloud's, and its name does not depend on whether a
// provider is configured. A fallback is not a call on the local route:
// it stands in for the cloud session, under the cloud's key.
func (p *Policy) CacheKey(key string, where route.Route) string {
	if where == route.Local {
		return key + p.cfg.LocalSuffix
	}
	return key
}

// invalid makes v a ClassInvalid verdict, refused for reason.
func invalid(v netpolicy.Verdict, reason netpolicy.Reason, detail error) netpolicy.Verdict {
	v.Class = netpolicy.ClassInvalid
	v.Err = netpolicy.Block(v, reason, detail)
	return v
}

// The name lookups of one call ([netpolicy.Lookups]): a plan resolves each
// distinct name once, a bounded number at a time, under the caller's
// context, and every literal of that name is decided on that one answer.
// The guard and the landed-URL check reuse the answers while the call
// runs; the egress check does not (it resolves at connect time, and dials
// what it resolved).

// DecideAll fills vs with the verdicts of the URL literals urls, each
// refused as RefuseLiteral says, resolving each distinct name once, within
// the router's limits ([netpolicy.Classifier.ClassifyAll]). It returns
// the answers, for the guard and the landed-URL check of the call (nil
// when no name was resolved), and the refusals in scan order. Past the
// limit on names it fails with netpolicy.ErrTooManyHosts and decides
// nothing.
func (p *Policy) DecideAll(ctx context.Context, urls []string, vs []netpolicy.Verdict) (*Lookups, []error, error) {
	look, err := p.Cls.ClassifyAll(ctx, urls, vs, p.cfg.MaxHostsPerCall, p.cfg.LookupConcurrency)
	if errors.Is(err, netpolicy.ErrTooManyHosts) {
		return nil, nil, fmt.Errorf("%w (WithMaxHostsPerCall)", err)
	}
	var refused []error
	for i := range vs {
		netpolicy.MarkLiteral(&vs[i])
		if vs[i].Err = p.RefuseLiteral(vs[i]); vs[i].Err != nil {
			refused = append(refused, vs[i].Err)
		}
	}
	return (*Lookups)(look), refused, err
}

// MayHold reports whether a browser at w may hold the state (a cookie, a
// storage) of the origin of rawURL: on the local browser, any origin its
// guard would let a page open; on a remote one only what the router would
// send there: a public host, or a private one the options let remote
// browsers open, never one hybrid routing keeps local, never one whose
// lookup failed (unsure: kept local).
func (p *Policy) MayHold(ctx context.Context, rawURL string, w route.Route) bool {
	v := p.Classify(ctx, rawURL)
	ok := p.Refuse(v, w) == nil
	if w != route.Local {
		// A name under a private-use suffix is private data whatever
		// it resolves to here.
		ok = ok && v.ResolveErr == nil && !netpolicy.PrivateUseName(v.Host) &&
			(v.Class == netpolicy.ClassPublic || v.Class == netpolicy.ClassPrivate) && !p.RoutesLocally(v)
	}
	return ok
}
