package hybroute

import (
	"errors"
	"log/slog"
	"time"

	"github.com/hybroute/hybroute/internal/config"
	"github.com/hybroute/hybroute/internal/fleet"
	"github.com/hybroute/hybroute/internal/health"
	"github.com/hybroute/hybroute/internal/outage"
	itel "github.com/hybroute/hybroute/internal/telemetry"
	"github.com/hybroute/hybroute/provider"
	"github.com/hybroute/hybroute/store"
)

// When the cloud fails: the window every provider failure opens for every
// session key (internal/health keeps it, with the single probe) over the
// fleet's store, and how a failure reads in a Result. The local floor that
// takes a cloud session's place is internal/cloud's.

// newFleet is the fleet of the options' store, decorated with tel (a
// router without a shared store has only its in-process one, which is
// neither traced nor counted: it cannot fail and is not a dependency to
// watch).
func newFleet(cfg *config.Config, provider string, log *slog.Logger, tel *itel.Router) *fleet.Fleet {
	c := fleet.Config{Local: &store.Memory{}, Timeout: cfg.StoreTimeout, Provider: provider, Log: log,
		Limit: cfg.ProviderConcurrency, TTL: cfg.SlotTTL}
	if cfg.Store != nil {
		c.Shared = itel.Store{Store: cfg.Store, Metrics: tel.Metrics, Tracer: tel.Tracer}
	}
	return fleet.New(c)
}

// newHealth is the health of provider p, over the fleet's window and probe
// and on the router's clock.
func (r *Router) newHealth(p provider.Provider) *health.Health {
	return health.New(health.Config{Store: r.fleet.Health(), Provider: p.Name(), Cap: r.cfg.MaxBackoff,
		Now: func() time.Time { return r.now() }, Explain: outage.Explain(func(err error) string { return fallbackReason(p.Name(), err) })})
}

// fallbackReason is the short, key-free account of a provider failure that
// a Result carries (internal/outage); a browser the guard cannot cover says
// which it is.
func fallbackReason(name string, err error) string {
	var ub *UnsupportedBrowserError
	if errors.As(err, &ub) {
		return "provider " + name + ": " + ub.reason()
	}
	return outage.Reason(name, err)
}
