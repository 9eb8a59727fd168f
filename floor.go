package hybroute

import (
	"errors"

	"github.com/hybroute/hybroute/internal/config"
	"github.com/hybroute/hybroute/internal/floor"
	"github.com/hybroute/hybroute/internal/guard"
	"github.com/hybroute/hybroute/internal/remotetab"
	sc "github.com/hybroute/hybroute/internal/sidecar"
	itel "github.com/hybroute/hybroute/internal/telemetry"
	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/route"
)

// The guard (internal/guard) pauses what the pages of a browser ask for
// and asks internal/floor about each URL: the same verdict and policy as
// the plan. The guard knows a session as a guard.Session (entry.gs) and a
// call as a guard.Scope, which the call hands it (entry.guard); it holds
// nothing of the router's.

// enableGuard makes the browser's guard watch the entry's tab, which
// also keeps where its main frame is (landedURL). It returns what the sessions'
// WaitGroup runs until the tab closes: the guard then forgets the entry.
func (r *Router) enableGuard(e *entry) (func(), error) {
	if _, ok := e.h.Tab().(*restTab); ok {
		// No CDP, no guard in that browser: its landing is what its
		// REST answers report (restpage.go).
		return func() {}, nil
	}
	tabCtx := e.h.Context()
	var g *guard.Guard
	switch t := e.h.Tab().(type) {
	case *remotetab.Tab:
		g = t.Guard()
	case *sc.Tab:
		g = t.Proc().Guard()
	}
	if g == nil {
		return nil, errors.New("hybroute: the tab's browser has no guard")
	}
	if err := g.Register(&e.gs, e.key, tabCtx, e.h.Tab().BrowserContextID()); err != nil {
		return nil, err
	}
	e.bg = g
	tab := e.gs.Tab()
	return func() {
		select {
		case <-tabCtx.Done():
		case <-g.Done():
		}
		g.Unregister(&e.gs, tab)
	}, nil
}

// newPolicy is the policy of cfg (internal/floor), for a router with a
// provider or without: the one value the plan, the guard, the landed-URL
// check and the egress check ask. tel counts the refusals of the guard and
// the egress check; nil in tests without a router.
func newPolicy(cfg *config.Config, hasProvider bool, tel *itel.Router) *floor.Policy {
	return floor.New(floor.Config{
		Resolver: cfg.Resolver, AllowedSchemes: cfg.AllowedSchemes, Hosts: cfg.Rules,
		CDPOverride: cfg.CDPURL != "", HasProvider: hasProvider, AutoLocal: cfg.AutoLocal,
		AllowPrivate: cfg.AllowPrivate, AllowSecrets: cfg.AllowSecrets, LocalSuffix: LocalSuffix,
		MaxHostsPerCall: cfg.MaxHostsPerCall, LookupConcurrency: cfg.LookupConcurrency,
		GuardLookup: cfg.GuardLookup, WSRules: floor.BlockedWebSockets(cfg.Rules),
		Refused: tel.Refused, Unsupported: unsupportedBrowser,
	})
}

// unsupportedBrowser is the error of a browser the guard cannot cover on w.
func unsupportedBrowser(browser, lacks string, w route.Route) error {
	where := "local"
	if w != route.Local {
		where = "cloud"
	}
	return &UnsupportedBrowserError{Browser: browser, Lacks: lacks, Route: where}
}

// grantCall gives a session on the local browser the grant its call earns
// (floor.GrantCall), through the door of its browser context; a tab of any
// other browser has no door, and its call no grant.
func grantCall(e *entry, vs []netpolicy.Verdict) (done func()) {
	lt, ok := e.h.Tab().(*sc.Tab)
	if !ok || lt.Door() == nil {
		return func() {}
	}
	return floor.GrantCall(lt.Door(), vs, e.landedURL)
}
