package hybroute

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hybroute/hybroute/internal/browsertab"
	"github.com/hybroute/hybroute/internal/cdpconn"
	"github.com/hybroute/hybroute/internal/floor"
	"github.com/hybroute/hybroute/internal/health"
	"github.com/hybroute/hybroute/internal/outage"
	"github.com/hybroute/hybroute/internal/redact"
	"github.com/hybroute/hybroute/internal/remotetab"
	"github.com/hybroute/hybroute/internal/teardown"
	itel "github.com/hybroute/hybroute/internal/telemetry"
	"github.com/hybroute/hybroute/provider"
	"github.com/hybroute/hybroute/route"
)

// Connecting to a remote browser: a cloud provider's session, or the CDP
// override. A provider that fails is fallback.go's.

// cloudEntry makes a cloud session for key, or the local floor when the
// provider cannot give one (fallback.go). It never caches a failed cloud
// session: either it returns a working entry (cloud or fallback) or nothing
// at all. internal/health decides whether it asks the provider at all: not while
// a window is open, and only one creation (the probe) while the provider's
// health is unknown. A creation the provider may serve then takes one of
// the fleet's concurrency slots ([WithProviderConcurrency]), held for the
// session's life.
func (r *Router) cloudEntry(ctx context.Context, key string, budget time.Duration) (*entry, error) {
	adm, reason := r.health.Admit(ctx, budget)
	switch adm {
	case health.Local:
		// The provider asked us to stay away: no API call, no log line.
		return r.fallbackEntry(ctx, key, reason, r.health.Last(), nil, itel.FallbackBackoffWindow)
	case health.Refused:
		// The provider refused the key or the payment lately: no API
		// call, and the fallback says so, not "back-off window".
		return r.fallbackEntry(ctx, key, reason, r.health.Last(), nil, "")
	}
	slot, ok := r.fleet.AcquireSlot(ctx)
	if !ok {
		if adm == health.Probe {
			// No question was asked: the waiters look again, and one of
			// them probes.
			r.health.ProbeDone()
		}
		return r.fallbackEntry(ctx, key, errConcurrencyLimit.Error(), nil, nil, itel.FallbackConcurrency)
	}
	e, err := r.cloudSession(ctx, key, budget, adm)
	if err != nil || e.fallback {
		r.fleet.Release(context.WithoutCancel(ctx), slot)
		return e, err
	}
	if slot != nil {
		e.ending.Add(teardown.Slot, func(ctx context.Context) error {
			r.fleet.Release(ctx, slot)
			return nil
		})
	}
	return e, nil
}

// cloudSession asks the provider for a session and connects to it, or
// falls back to local Chromium, and tells internal/health what it learnt.
func (r *Router) cloudSession(ctx context.Context, key string, budget time.Duration, adm health.Admission) (*entry, error) {
	started := r.now()
	s, t, err := r.askProvider(ctx, key, budget)
	var nc *noCDPError
	switch {
	case err == nil || errors.As(err, &nc):
		// The provider answered: it is up, whatever its answer lacks.
		if r.health.Succeeded(ctx, started) {
			r.log.LogAttrs(ctx, slog.LevelInfo, "hybroute: cloud provider recovered",
				slog.String("provider", r.provider.Name()))
		}
		if adm == health.Probe {
			r.health.ProbeDone()
		}
		if err != nil {
			return nil, err
		}
		e := &entry{key: key, route: route.Cloud, h: browsertab.NewHandle(t), cloud: s}
		e.ending.Add(teardown.Tab, func(ctx context.Context) error {
			_ = t.Close(ctx) // the provider's release ends what is left of it
			return nil
		})
		e.ending.Add(teardown.Provider, func(ctx context.Context) error {
			// The tab's close may have spent ctx's budget on a loaded
			// browser; the provider's release gets one of its own, or the
			// session would run on. (The fleet slot's release after it
			// makes its own too: internal/fleet.)
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
			defer cancel()
			// For Replay: some providers make the replay once it has
			// ended. What is kept is what a replay call names.
			ended := *s
			ended.REST = nil
			r.ended.Put(key, &ended)
			return r.calls.ReleaseSession(ctx, s)
		})
		return e, nil
	}
	var fellBack *provider.Session
	if errors.Is(err, outage.ErrProviderFellBack) {
		fellBack = s
	}
	first, window, reason := r.health.Failed(ctx, err)
	if adm == health.Probe {
		r.health.ProbeDone() // after the window opened: the waiters go local
	}
	if first {
		r.logProviderFailure(ctx, key, err, window)
	}
	return r.fallbackEntry(ctx, key, reason, err, fellBack, "")
}

// errConnecting marks a provider session whose CDP connect failed (the
// connect_failed fallback reason); its text is the start of the message.
var errConnecting = errors.New("connecting")

// askProvider creates the provider's session and connects to it. A session
// the provider created and we cannot use is released here, on a context of
// its own, but for one the provider marked fallback (returned with
// outage.ErrProviderFellBack), which the floor's entry releases.
func (r *Router) askProvider(ctx context.Context, key string, budget time.Duration) (*provider.Session, cloudTab, error) {
	pctx, cancel := context.WithTimeout(ctx, budget)
	s, err := r.calls.CreateSession(pctx, key)
	cancel()
	switch {
	case err != nil:
		return nil, nil, err
	case s == nil:
		return nil, nil, fmt.Errorf("provider %s returned no session", r.provider.Name())
	case s.FallbackFromCloud:
		reason := s.FallbackReason
		if reason == "" {
			reason = "no reason given"
		}
		return s, nil, fmt.Errorf("%w: %s", outage.ErrProviderFellBack, reason)
	case s.CDPURL == "" && s.REST != nil:
		// A browser driven through its REST API (restpage.go).
		return s, newRESTTab(s.REST, r.provider.Name()), nil
	case s.CDPURL == "":
		// Nothing pretends to work: the exact message of the original
		// failure, and the session is given back, not cached.
		r.releaseProviderSession(s)
		return nil, nil, &noCDPError{provider: r.provider.Name()}
	}
	// The connect is not cut short by Close (only by the creation's
	// deadline): a tab half made on the cloud browser when its connection
	// is dropped would stay open there.
	connCtx := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		connCtx, cancel = context.WithDeadline(connCtx, dl)
		defer cancel()
	}
	browser := "the cloud browser of " + r.provider.Name()
	t, err := remotetab.Connect(connCtx, remotetab.Config{URL: s.CDPURL, HTTPClient: s.HTTPClient, Browser: browser,
		Guard: floor.NewGuard(r.pol, r.log, route.Cloud), Single: s.SingleConnection, Died: remoteDead(browser)})
	if err != nil {
		r.releaseProviderSession(s)
		return nil, nil, fmt.Errorf("%w to session %s of %s at %s: %w",
			errConnecting, s.ID, r.provider.Name(), redact.URL(s.CDPURL), err)
	}
	return s, t, nil
}

// cloudTab is the tab of a cloud session: over CDP (remotetab.Tab) or
// through a REST API (restTab). Close ends it; the provider's release
// follows.
type cloudTab interface {
	browsertab.Tab
	Close(ctx context.Context) error
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
