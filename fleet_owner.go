package hybroute

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
	"unicode/utf8"

	"github.com/hybroute/hybroute/internal/fleet"
	"github.com/hybroute/hybroute/internal/health"
	itel "github.com/hybroute/hybroute/internal/telemetry"
	"github.com/hybroute/hybroute/provider"
	"github.com/hybroute/hybroute/store"
)

// The fleet (internal/fleet) guards the router's [store.Store] and holds its
// concurrency leases; the provider's health (internal/health) keeps its
// back-off window and its one probe in that store. Neither reads the
// router's options, its telemetry or a provider's errors: this file hands
// them the options, the decorated store, and what a provider's failure
// says.

const (
	// defaultStoreTimeout bounds one store call.
	defaultStoreTimeout = 500 * time.Millisecond
	// defaultSlotTTL is a concurrency lease's life without renewal: a
	// replica that dies holds its slots this long at most. Leases are
	// renewed every third of it.
	defaultSlotTTL = 30 * time.Second
)

// newFleet is the fleet of the options' store, decorated with tel (a
// router without a shared store has only its in-process one, which is
// neither traced nor counted: it cannot fail and is not a dependency to
// watch).
func newFleet(cfg *config, provider string, log *slog.Logger, tel *telemetry) *fleet.Fleet {
	c := fleet.Config{Local: &store.Memory{}, Timeout: cfg.storeTimeout, Provider: provider, Log: log,
		Limit: cfg.providerConcurrency, TTL: cfg.slotTTL}
	if cfg.store != nil {
		c.Shared = itel.Store{Store: cfg.store, Metrics: tel.Metrics, Tracer: tel.tracer}
	}
	return fleet.New(c)
}

// newHealth is the health of provider p, over the fleet's window and probe
// and on the router's clock.
func (r *Router) newHealth(p provider.Provider) *health.Health {
	return health.New(health.Config{Store: r.fleet.Health(), Provider: p.Name(), Cap: r.cfg.maxBackoff,
		Now: func() time.Time { return r.now() }, Explain: providerFailure(p.Name())})
}

// providerFailure reads a failure of the provider named name for the
// health: its account, the window it asked for, and whether it is the
// configuration's.
func providerFailure(name string) func(error) health.Failure {
	return func(err error) health.Failure {
		f := health.Failure{Reason: fallbackReason(name, err), Config: isConfigError(err)}
		var pe *provider.Error
		if errors.As(err, &pe) {
			f.RetryAfter = pe.RetryAfter
		}
		return f
	}
}

// isConfigError reports a failure that is the configuration's, not an outage:
// the key, the project or the plan was refused.
func isConfigError(err error) bool {
	return errors.Is(err, provider.ErrAuth) || errors.Is(err, provider.ErrPayment)
}

// configFix says what to fix for a configuration error.
func configFix(err error) string {
	if errors.Is(err, provider.ErrPayment) {
		return "the provider's account is out of credits or its plan does not allow the session: check the plan and billing, or the session params"
	}
	return "the provider refused the credentials: check the API key (and the project id, for Browserbase) given to the provider client"
}

// fallbackReason is the short, key-free account of a provider failure that
// a Result carries, e.g. "provider Browserbase: HTTP 429 RATE_LIMIT_EXCEEDED
// (retry after 17s)".
func fallbackReason(name string, err error) string {
	var ub *UnsupportedBrowserError
	if errors.As(err, &ub) {
		return "provider " + name + ": " + ub.reason()
	}
	var pe *provider.Error
	if errors.As(err, &pe) {
		s := "provider " + name + ":"
		if pe.Status != 0 {
			s += fmt.Sprintf(" HTTP %d", pe.Status)
		}
		if pe.Code != "" {
			s += " " + pe.Code
		}
		if pe.Status == 0 || (pe.Status < 300 && pe.Err != nil) {
			s += " " + shortCause(pe.Err)
		}
		if pe.RetryAfter > 0 {
			s += " (retry after " + pe.RetryAfter.String() + ")"
		}
		return s
	}
	return "provider " + name + ": " + shortCause(err)
}

// shortCause is the last part of an error chain's text, bounded: the part
// that says what went wrong, without the URL and the path to it.
func shortCause(err error) string {
	if err == nil {
		return "no answer"
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer in time"
	case errors.Is(err, errProviderFellBack):
		return err.Error()
	}
	s := err.Error()
	const limit = 160
	if len(s) > limit {
		i := limit
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		s = s[:i] + "…"
	}
	return s
}
