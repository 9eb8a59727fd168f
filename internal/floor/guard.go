package floor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/hybroute/hybroute/internal/guard"
	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/route"
)

// The guard (internal/guard) pauses what the pages of a browser ask for
// and asks the decisions here about each URL: the same verdict and policy
// as the plan, so a URL the plan refuses is refused wherever it turns up.
// The guard knows a session as a guard.Session and a call as a
// guard.Scope, which the call hands it (CallScope); it holds nothing of
// the router's.

// NewGuard is the guard of one browser connection on w, deciding with p.
func NewGuard(p *Policy, log *slog.Logger, w route.Route) *guard.Guard {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := guardRules{pol: p, w: w, log: log}
	return guard.New(guard.Config{Route: w, Decide: d.decide, RefuseNavigation: d.refuseNavigation,
		Refused: d.refused, Unsupported: d.unsupported,
		Resolver: p.Cls.Resolver(), LookupTimeout: p.cfg.GuardLookup, Log: log,
		RemotePrivate: p.Rule.PrivateOnCloud, WSRules: p.cfg.WSRules, WebRTC: p.cfg.CloudWebRTC,
		EveryRequest: p.Rule.Hosts != nil})
}

// guardRules are the guard's decisions on the browser w.
type guardRules struct {
	pol *Policy
	w   route.Route
	log *slog.Logger
}

// decide is the verdict on one hop of a paused request, refused as a
// literal would be on this browser, and a private hop after a public one
// refused too. A lookup that ran out of the guard's limit is refused.
func (o guardRules) decide(url string, look guard.Lookup, afterPublic bool) (bool, error) {
	v, name := o.pol.Cls.Parse(url)
	if name != "" {
		addrs, err := look.LookupName(name)
		v = netpolicy.Resolved(v, addrs, err)
		if errors.Is(err, guard.ErrLookupTimeout) {
			return false, netpolicy.Block(v, netpolicy.ReasonLookupTimeout, err)
		}
	}
	return v.Class == netpolicy.ClassPublic, o.pol.RefuseHop(v, o.w, afterPublic)
}

// refuseNavigation lets a navigation command take a page to about:blank,
// about:srcdoc, and on the local browser the schemes WithAllowedSchemes
// names; anything else is refused before it reaches the browser.
func (o guardRules) refuseNavigation(n guard.Navigation) error {
	switch {
	case n.Scheme == "about":
		if netpolicy.IsNoRouteAbout(n.Cleaned) {
			return nil
		}
	case n.Scheme != "" && o.w == route.Local && o.pol.Cls.AllowsScheme(n.Scheme):
		return nil
	}
	return netpolicy.Block(netpolicy.Verdict{URL: guard.ClipURL(n.URL), Class: netpolicy.ClassInvalid}, netpolicy.ReasonSchemeNotAllowed,
		fmt.Errorf("%s to scheme %q is refused before it reaches the browser", n.Method, n.Scheme))

}

// refused logs and counts a request the guard refused.
func (o guardRules) refused(ctx context.Context, key string, x guard.Refusal) {
	o.pol.refused(ctx, "guard", x.Err)
	attrs := []slog.Attr{slog.String("route", o.w.String()), slog.String("target", x.Target),
		slog.String("resource", x.ResourceType), slog.String("reason", netpolicy.ReasonOf(x.Err)),
		slog.String("error", x.Err.Error())}
	if key != "" {
		attrs = append(attrs, slog.String("cache_key", key))
	}
	o.log.LogAttrs(ctx, slog.LevelWarn, "hybroute: browser request refused", attrs...)
}

// unsupported is the error of a browser the guard cannot cover.
func (o guardRules) unsupported(browser, lacks string) error {
	if o.pol.cfg.Unsupported == nil {
		return fmt.Errorf("hybroute: unsupported browser: %s lacks %s", browser, lacks)
	}
	return o.pol.cfg.Unsupported(browser, lacks, o.w)
}

// CallScope is a session's hold on the scope of its running call: the
// names the call's plan resolved, which the guard and the landed-URL check
// decide on, and what the guard refused during the run. Its zero value
// holds no call.
type CallScope struct {
	mu   sync.Mutex
	s    *guard.Session
	sc   *guard.Scope
	look *Lookups // nil between calls
}

// Begin hands the guard session s a scope for a call whose plan got the
// answers look; the func it returns takes the call's scope back when the
// call ends, and with it the answers.
func (g *CallScope) Begin(s *guard.Session, look *Lookups) (end func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.s, g.look = s, look
	g.swapLocked()
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.s.End(g.sc)
		g.look = nil
	}
}

// Reset starts the run's part of the call: what the guard refused before
// it (while the tab was probed or replaced) is not the run's. The scope
// stays the call's: a document paused before the run and refused during
// it (a lookup can take seconds) still fails the call.
func (g *CallScope) Reset() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sc != nil {
		g.sc.Clear()
	}
}

// swapLocked hands g.s a fresh scope on g.look, then takes the old one
// back: no request of the call finds the session without a scope in
// between. Called with g.mu held.
func (g *CallScope) swapLocked() {
	old := g.sc
	var look guard.Lookups
	if g.look != nil {
		look = g.look
	}
	g.sc = guard.NewScope(look)
	g.s.Begin(g.sc)
	if old != nil {
		g.s.End(old)
	}
}

// Err is what the guard refused during the last run.
func (g *CallScope) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sc.Err()
}

// Lookups are the answers of the running call, or nil between calls.
func (g *CallScope) Lookups() *Lookups {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.look
}
