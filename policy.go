package hybroute

import (
	"github.com/hybroute/hybroute/internal/config"
	"github.com/hybroute/hybroute/internal/floor"
	itel "github.com/hybroute/hybroute/internal/telemetry"
	"github.com/hybroute/hybroute/route"
)

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
	if w == route.Cloud {
		where = "cloud"
	}
	return &UnsupportedBrowserError{Browser: browser, Lacks: lacks, Route: where}
}
