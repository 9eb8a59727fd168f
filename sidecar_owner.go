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

// sidecar is the router's local Chromium (internal/sidecar), with the
// queue of its tab openings.
type sidecar struct {
	*sc.Sidecar
	tabs *admission.Queue // bounds the tabs made at once (maxTabsAtOnce); the rest wait in turn
	// observe is the router's: it records each opening's wait for a turn.
	observe func(waited time.Duration, err error)
}

// newSidecar makes the sidecar of a router with cfg, whose local browser
// decides with pol. It starts nothing; the first open starts Chromium.
func newSidecar(cfg *config.Config, pol *floor.Policy) *sidecar {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &sidecar{tabs: newTabQueue(maxTabsAtOnce)}
	s.Sidecar = sc.New(sc.Config{
		Guard: func() *guard.Guard { return floor.NewGuard(pol, log, route.Local) },
		Egress: func(ctx context.Context) (*egress.Proxy, error) {
			return floor.StartEgress(ctx, pol, cfg.EgressDialer, log)
		},
		Turn: s.turn,
		// A spare's making counts in the queue's estimate: its first
		// estimate comes from the spare made at start, before a burst of
		// sessions asks.
		Opened:         s.tabs.Sample,
		Path:           cfg.ChromiumPath,
		Flags:          cfg.ChromiumFlags,
		ViewportWidth:  cfg.ViewportW,
		ViewportHeight: cfg.ViewportH,
		NoChromium:     ErrNoChromium,
		Dead:           errLocalDead,
		Log:            log,
	})
	return s
}

// turn waits in the admission queue under the terms the call's context
// carries (internal/admission), and has the router record the wait.
func (s *sidecar) turn(ctx context.Context) (func(opened time.Duration), error) {
	waited, done, err := s.tabs.Wait(ctx, admission.TermsOf(ctx))
	if s.observe != nil {
		s.observe(waited, err)
	}
	return done, err
}

// newTabQueue is the admission queue of the local browser's tab openings,
// whose refusals are [*BusyError]s.
func newTabQueue(slots int) *admission.Queue {
	return admission.New(slots, func(b admission.Busy) error {
		return &BusyError{Ahead: b.Ahead, Waited: b.Waited, Estimate: b.Estimate, Budget: b.Budget}
	})
}
