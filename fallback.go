package hybroute

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hybroute/hybroute/internal/config"
	"github.com/hybroute/hybroute/internal/fleet"
	"github.com/hybroute/hybroute/internal/health"
	"github.com/hybroute/hybroute/internal/outage"
	"github.com/hybroute/hybroute/internal/teardown"
	itel "github.com/hybroute/hybroute/internal/telemetry"
	"github.com/hybroute/hybroute/provider"
	"github.com/hybroute/hybroute/route"
	"github.com/hybroute/hybroute/store"
)

// When the cloud fails: the window every provider failure opens for every
// session key (internal/health keeps it, with the single probe), the one log
// line per outage, and the local floor that takes a cloud session's place.
// The successful path is cloud.go's.

// errConcurrencyLimit is the reason of a cloud session that ran locally
// because the provider's sessions were all taken ([WithProviderConcurrency]).
var errConcurrencyLimit = errors.New("provider concurrency limit")

// logProviderFailure is the single line of an outage: provider, status,
// the window, and the session params the local floor does without, so an
// operator can confirm the fallback engaged. A configuration error (the
// key, the project, the plan) is logged at ERROR with what to fix: it does
// not heal by waiting.
func (r *Router) logProviderFailure(ctx context.Context, key string, err error, window time.Duration) {
	attrs := []slog.Attr{
		slog.String("provider", r.provider.Name()),
		slog.String("session", key),
		slog.Duration("retry_after", window),
		slog.String("error", err.Error()),
	}
	attrs = append(attrs, outage.Attrs(err)...)
	if !r.cfg.Fallback {
		r.log.LogAttrs(ctx, slog.LevelError, "hybroute: cloud provider failed and the fallback is off", attrs...)
		return
	}
	attrs = append(attrs, outage.DroppedParams(r.provider)...)
	if outage.IsConfigError(err) {
		attrs = append(attrs, slog.String("fix", outage.ConfigFix(err)))
		r.log.LogAttrs(ctx, slog.LevelError, "hybroute: cloud provider refused the configuration, falling back to local Chromium", attrs...)
		return
	}
	r.log.LogAttrs(ctx, slog.LevelWarn, "hybroute: cloud provider failed, falling back to local Chromium", attrs...)
}

// fallbackEntry is the local floor under a cloud session key: the plain key
// (the hybrid ::local sidecar stays separate), the local route, and the
// reason. It has a budget of its own, so the provider's time never eats the
// floor's. With the fallback off, the call fails with the provider's error.
// kind is the fallback's bounded name for the metrics; "" derives it from
// cause.
func (r *Router) fallbackEntry(ctx context.Context, key, reason string, cause error, fellBack *provider.Session, kind string) (*entry, error) {
	if cause == nil {
		// The reason may be a shared store's text: quoted, it stays data.
		cause = fmt.Errorf("%w: %q", provider.ErrUnavailable, reason)
	}
	if !r.cfg.Fallback {
		if fellBack != nil {
			r.releaseProviderSession(fellBack)
		}
		return nil, fmt.Errorf("hybroute: cloud session failed and the fallback is off (%q): %w", reason, cause)
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.LocalTimeout)
	defer cancel()
	defer context.AfterFunc(r.life, cancel)()
	e, err := r.localEntry(fctx, key, route.Local)
	if err != nil {
		if fellBack != nil {
			r.releaseProviderSession(fellBack)
		}
		err = fmt.Errorf("%w: cloud: %w; local: %w", ErrFallbackFailed, cause, err)
		if r.life.Err() != nil {
			return nil, ErrClosed // Close ended it: not an outage to report
		}
		if r.health.FloorFailed() {
			r.log.LogAttrs(ctx, slog.LevelError, "hybroute: cloud provider and local Chromium both failed",
				slog.String("provider", r.provider.Name()), slog.String("session", key),
				slog.String("error", err.Error()))
		}
		return nil, err
	}
	e.fallback, e.fallbackAccount = true, reason
	if fellBack != nil {
		e.ending.Add(teardown.Provider, func(ctx context.Context) error { return r.calls.ReleaseSession(ctx, fellBack) })
	}
	if kind == "" {
		kind = r.tel.FallbackKind(cause)
	}
	e.fallbackLabel = kind
	r.tel.FellBack(ctx, kind)
	return e, nil
}

// releaseProviderSession gives a session back to the provider on a context
// of its own: the creation's may be over (Close, a deadline), and a session
// left open costs the user money and a slot of their concurrency cap.
func (r *Router) releaseProviderSession(s *provider.Session) {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	if err := r.calls.ReleaseSession(ctx, s); err != nil {
		r.log.LogAttrs(ctx, slog.LevelWarn, "hybroute: releasing a provider session",
			slog.String("provider", r.provider.Name()), slog.String("error", err.Error()))
	}
}

// releaseTimeout bounds one release: the provider's API call, a tab's close.
const releaseTimeout = 10 * time.Second

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
