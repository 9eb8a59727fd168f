package hybroute

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hybroute/hybroute/internal/browsertab"
	"github.com/hybroute/hybroute/internal/cdpconn"
	"github.com/hybroute/hybroute/internal/cloud"
	"github.com/hybroute/hybroute/internal/config"
	"github.com/hybroute/hybroute/internal/fleet"
	"github.com/hybroute/hybroute/internal/floor"
	"github.com/hybroute/hybroute/internal/guard"
	"github.com/hybroute/hybroute/internal/health"
	"github.com/hybroute/hybroute/internal/outage"
	"github.com/hybroute/hybroute/internal/redact"
	"github.com/hybroute/hybroute/internal/remotetab"
	"github.com/hybroute/hybroute/internal/teardown"
	itel "github.com/hybroute/hybroute/internal/telemetry"
	"github.com/hybroute/hybroute/provider"
	"github.com/hybroute/hybroute/route"
	"github.com/hybroute/hybroute/store"
)

// Connecting to a remote browser: a cloud provider's session
// (internal/cloud, with the floor under a failing provider), or the CDP
// override; the provider's health over the fleet's store; the replay of a
// cloud session.

// newCloud is how the router makes the cloud sessions of its provider
// (r.calls), and the local floor under them (internal/cloud).
func (r *Router) newCloud() *cloud.Config[*entry] {
	return &cloud.Config[*entry]{
		Calls: r.calls, Health: r.health, Fleet: r.fleet, Tel: r.tel, Log: r.log,
		Life: r.life, Now: func() time.Time { return r.now() }, Fallback: r.cfg.Fallback, LocalTimeout: r.cfg.LocalTimeout,
		Guard: func() *guard.Guard { return floor.NewGuard(r.pol, r.log, route.Cloud) },
		Cloud: func(key string, t browsertab.Tab, s *provider.Session) *entry {
			return &entry{key: key, route: route.Cloud, h: browsertab.NewHandle(t), cloud: s}
		},
		Local: func(ctx context.Context, key string) (*entry, error) { return r.localEntry(ctx, key, route.Local) },
		FellBack: func(e *entry, account, label string) {
			e.fallback, e.fallbackAccount, e.fallbackLabel = true, account, label
		},
		Steps: func(e *entry) *teardown.Steps { return &e.ending },
		Ended: r.ended.Put,
		NoCDP: func(name string) error { return &noCDPError{provider: name} },
		Dead:  remoteDead, ErrFallbackFailed: ErrFallbackFailed, ErrClosed: ErrClosed,
	}
}

// overrideEntry is a session on the CDP override's browser: a new tab on it.
func (r *Router) overrideEntry(ctx context.Context, key string) (*entry, error) {
	ws, err := cdpconn.Resolve(ctx, r.cfg.CDPClient, r.cfg.CDPURL, nil)
	if err == nil {
		var t *remotetab.Tab
		browser := "the browser of the CDP override"
		if t, err = remotetab.Connect(ctx, remotetab.Config{URL: ws, HTTPClient: r.cfg.CDPClient, Browser: browser,
			Guard: floor.NewGuard(r.pol, r.log, route.Cloud), Died: remoteDead(browser)}); err == nil {
			e := &entry{key: key, route: route.Cloud, h: browsertab.NewHandle(t)}
			e.ending.Add(teardown.Tab, t.Close)
			return e, nil
		}
	}
	return nil, fmt.Errorf("hybroute: connecting to the CDP override %s: %w", redact.URL(r.cfg.CDPURL), err)
}

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

// Replay returns where the recording of sessionKey's cloud session plays:
// the URL its create answer named, else what the provider answers when
// asked ([provider.Replayer]: an API call, which [Router.Status] never
// makes). It asks about the key's open cloud session, else the last one
// released: some providers make the recording only once the session has
// ended (Browser Use), so Replay works after [Router.Release], after the
// idle reaper's release and after Close. The Router keeps the last ended
// cloud session of the most recent keys only ; an
// older key's replay is no longer known to it (sessions.MaxEnded).
//
// The error matches [provider.ErrNoReplay] when there is none: the key
// has had no cloud session (it ran locally, or not at all), the provider
// gives no replay URL, or the session was not recorded or its recording
// is not ready yet. A failed call to the provider is its
// [*provider.Error].
func (r *Router) Replay(ctx context.Context, sessionKey string) (string, error) {
	key, err := normalizeKey(sessionKey)
	if err != nil {
		return "", err
	}
	var s *provider.Session
	r.mu.Lock()
	if e := r.sess.M[key]; e != nil && e.cloud != nil && !e.released.Load() {
		s = e.cloud
	}
	r.mu.Unlock()
	if s == nil {
		s = r.ended.Get(key)
	}
	if s == nil {
		return "", fmt.Errorf("%w: session key %q has had no cloud session", provider.ErrNoReplay, key)
	}
	if s.ReplayURL != "" {
		return s.ReplayURL, nil
	}
	rp, ok := r.provider.(provider.Replayer)
	if !ok {
		return "", fmt.Errorf("%w: %s gives no replay URL", provider.ErrNoReplay, r.provider.Name())
	}
	return rp.Replay(ctx, s)
}
