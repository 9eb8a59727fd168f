package hybroute

import (
	"context"
	"log/slog"
	"time"

	"github.com/hybroute/hybroute/internal/admission"
	"github.com/hybroute/hybroute/internal/config"
	"github.com/hybroute/hybroute/internal/egress"
	"github.com/hybroute/hybroute/internal/floor"
	"github.com/hybroute/hybroute/internal/guard"
	sc "github.com/hybroute/hybroute/internal/sidecar"
	"github.com/hybroute/hybroute/route"
)

// The local Chromium's process lives in internal/sidecar. What it needs of
// the router comes through its sc.Config: the options it reads, the guard
// and the egress proxy of each process it starts, both deciding with the
// router's policy on the local browser, and the turn to open a tab
// (internal/admission). The sidecar holds no rule and no config of the router's.

// maxTabsAtOnce bounds the new tabs the sidecar makes at the same time.
const maxTabsAtOnce = 4

// newSidecar makes the sidecar of a router with cfg, whose local browser
// decides with pol; observe (nil: none) records each tab opening's wait
// for its turn. It starts nothing; the first open starts Chromium.
func newSidecar(cfg *config.Config, pol *floor.Policy, observe func(waited time.Duration, err error)) *sc.Sidecar {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tabs := newTabQueue(maxTabsAtOnce) // the rest wait in turn
	return sc.New(sc.Config{
		Guard: func() *guard.Guard { return floor.NewGuard(pol, log, route.Local) },
		Egress: func(ctx context.Context) (*egress.Proxy, error) {
			return floor.StartEgress(ctx, pol, cfg.EgressDialer, log)
		},
		Turn: tabs.Turn(observe),
		// A spare's making counts in the queue's estimate: its first
		// estimate comes from the spare made at start, before a burst of
		// sessions asks.
		Opened:         tabs.Sample,
		Path:           cfg.ChromiumPath,
		Flags:          cfg.ChromiumFlags,
		ViewportWidth:  cfg.ViewportW,
		ViewportHeight: cfg.ViewportH,
		NoChromium:     ErrNoChromium,
		Dead:           errLocalDead,
		Log:            log,
	})
}

// newTabQueue is the admission queue of the local browser's tab openings,
// whose refusals are [*BusyError]s.
func newTabQueue(slots int) *admission.Queue {
	return admission.New(slots, func(b admission.Busy) error {
		return &BusyError{Ahead: b.Ahead, Waited: b.Waited, Estimate: b.Estimate, Budget: b.Budget}
	})
}
