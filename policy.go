package hybroute

import (
	"context"

	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/route"
)

// The policy is the one place where a URL's class meets the router's
// options. The rule itself is [netpolicy.Policy]; this file turns the
// options into it, and owns what belongs to routing: where a call's
// private URLs go, the route of a call and its cache key. The plan asks the
// policy for every URL literal, the guard for every request it pauses, the
// landed-URL check for the URL a tab ended on, and the egress check for
// every connection of the local browser: they cannot disagree, because
// they ask the same value the same question.

// policy is what the router's options allow, and where its calls run. New
// builds one; it never changes after that, so it is shared without a lock.
type policy struct {
	cls  *netpolicy.Classifier // classifies with the resolver and the allowed schemes
	rule netpolicy.Policy      // the allow/refuse rule: private URLs, secrets and host rules per browser

	override bool // WithCDPURL: every call goes to that browser, none is local
	local    bool // no provider and no override: every call is local
	hybrid   bool // a provider, no override, auto-local on: private URLs go to the ::local sidecar

	tel *telemetry // counts the refusals of the guard and the egress check; nil in tests without a router
}

// newPolicy is the policy of cfg, for a router with a provider or without.
func newPolicy(cfg *config, hasProvider bool, tel *telemetry) *policy {
	p := &policy{tel: tel, override: cfg.cdpURL != ""}
	p.local = !p.override && !hasProvider
	p.hybrid = !p.override && hasProvider && cfg.autoLocal
	p.cls = netpolicy.NewClassifier(cfg.resolver, cfg.allowedSchemes...)
	p.rule = netpolicy.Policy{
		// With no cloud a private URL runs locally; with auto-local it is
		// sent to the sidecar; otherwise only an explicit allow lets it
		// run, on the local fallback too.
		PrivateOnLocal: p.local || p.hybrid || cfg.allowPrivate,
		PrivateOnCloud: cfg.allowPrivate,
		SecretsOnCloud: cfg.allowSecrets,
		Hosts:          cfg.rules,
	}
	return p
}

// refuse is the allow/refuse rule: nil when a URL of verdict v may be opened
// on the browser of route w, else a *BlockedError that names the reason.
func (p *policy) refuse(v netpolicy.Verdict, w route.Route) error {
	return p.rule.Refuse(v, w)
}

// refuseLiteral is refuse for a URL literal of a call being planned: it is
// judged where the router's routes take a private URL, and held to the
// secrets rule there.
func (p *policy) refuseLiteral(v netpolicy.Verdict) error {
	return p.rule.RefuseLiteral(v, p.privateRoute())
}

// refuseHop is refuse for one document request of a tab, which may be a
// hop of a redirect chain: a private hop after a public one is refused on
// every route, as that is how a public page walks a browser into a LAN.
func (p *policy) refuseHop(v netpolicy.Verdict, w route.Route, afterPublic bool) error {
	return p.rule.RefuseHop(v, w, afterPublic)
}

// classify computes the class of rawURL, with the policy's resolver and
// schemes. It leaves Err set only for ClassInvalid, with the detail of what
// was wrong.
func (p *policy) classify(ctx context.Context, rawURL string) netpolicy.Verdict {
	return p.cls.Classify(ctx, rawURL, nil)
}

// classifyWith is classify that takes a name's answers from the call's
// lookups when they hold it, instead of asking the resolver again.
func (p *policy) classifyWith(ctx context.Context, rawURL string, known *callLookups) netpolicy.Verdict {
	return p.cls.Classify(ctx, rawURL, known.np())
}

// classifyParsed is the part of classify that needs no DNS
// ([netpolicy.Classifier.Parse]).
func (p *policy) classifyParsed(rawURL string) (v netpolicy.Verdict, name string) {
	return p.cls.Parse(rawURL)
}

// privateRoute is the browser the router's routes send a private URL to.
func (p *policy) privateRoute() route.Route {
	if p.local || p.hybrid {
		return route.Local
	}
	return route.Cloud
}

// routesLocally is HybridRoutesLocally on a verdict: on a hybrid router, a
// private URL that is not refused, or a URL literal that carries a
// credential (the secret_in_url rule: kept off the cloud browser).
func (p *policy) routesLocally(v netpolicy.Verdict) bool {
	return p.hybrid && v.Err == nil && (v.Class == netpolicy.ClassPrivate || p.rule.KeepsOffCloud(v))
}

// route is the README's "Which URL goes where" table, for one call whose URL
// literals have the verdicts vs (already asked of refuse): a CDP override
// takes everything, no cloud means everything is local, and one private URL
// (or one that carries a credential) on a hybrid router takes the whole
// call local. Otherwise navigation picks
// the browser: a navigation to a URL that loads from a network goes to the
// cloud. Any other call runs where the session's page is (last, the route
// its session took last), so a public URL in code (a comment, a fetch)
// does not move it away from its page; a new session starts on the cloud.
// A refused URL does not move the call: the plan still names where it
// would have run.
func (p *policy) route(vs []netpolicy.Verdict, last route.Route, hasLast, navigates bool) route.Route {
	switch {
	case p.override:
		return route.Cloud
	case p.local:
		return route.Local
	}
	targets := false // some URL loads from a network
	for _, v := range vs {
		if v.Err != nil {
			continue
		}
		if p.routesLocally(v) {
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

// cacheKey names the session a call on route runs in: the sidecar of a
// hybrid router has its own key, so it never shares a cache entry (or a
// browser) with the cloud.
func (p *policy) cacheKey(key string, where route.Route) string {
	if where == route.Local && p.hybrid {
		return key + LocalSuffix
	}
	return key
}

// invalid makes v a ClassInvalid verdict, refused for reason.
func invalid(v netpolicy.Verdict, reason netpolicy.Reason, detail error) netpolicy.Verdict {
	v.Class = netpolicy.ClassInvalid
	v.Err = netpolicy.Block(v, reason, detail)
	return v
}
