// Package cloud makes a session key's cloud session, or the local floor in
// its place. internal/health decides whether the provider is asked at all:
// not while a window is open, and only one creation (the probe) while the
// provider's health is unknown. A creation the provider may serve then
// takes one of the fleet's concurrency slots, held for the session's life;
// the provider's session is connected to over CDP, or driven through its
// REST API. A provider that fails opens the window every session key then
// sees, is logged once per outage, and the local floor takes the session's
// place, on a budget of its own. What a session is stays the router's: the
// package is generic over its entry.
package cloud

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hybroute/hybroute/internal/browsertab"
	"github.com/hybroute/hybroute/internal/fleet"
	"github.com/hybroute/hybroute/internal/guard"
	"github.com/hybroute/hybroute/internal/health"
	"github.com/hybroute/hybroute/internal/outage"
	"github.com/hybroute/hybroute/internal/redact"
	"github.com/hybroute/hybroute/internal/remotetab"
	"github.com/hybroute/hybroute/internal/teardown"
	itel "github.com/hybroute/hybroute/internal/telemetry"
	"github.com/hybroute/hybroute/provider"
)

// ErrConcurrencyLimit is the reason of a cloud session that ran locally
// because the provider's sessions were all taken (the fleet's limit).
var ErrConcurrencyLimit = errors.New("provider concurrency limit")

// ErrConnecting marks a provider session whose CDP connect failed (the
// connect_failed fallback reason); its text is the start of the message.
var ErrConnecting = errors.New("connecting")

// Config is the provider, and what the router lends to make its sessions:
// its entries, its errors and where the floor's session comes from.
type Config[E any] struct {
	Calls        itel.Provider // the provider, traced and counted: how it is called and named
	Health       *health.Health
	Fleet        *fleet.Fleet
	Tel          *itel.Router
	Log          *slog.Logger
	Life         context.Context  // ends at the router's Close
	Now          func() time.Time // the fallback's clock
	Fallback     bool             // a session the provider cannot give runs on the floor
	LocalTimeout time.Duration    // the floor's own budget
	Guard        func() *guard.Guard

	// Cloud is the entry of the provider's session s on tab t.
	Cloud func(key string, t browsertab.Tab, s *provider.Session) E
	// Local is the entry of a session on the local floor under key.
	Local func(ctx context.Context, key string) (E, error)
	// FellBack marks e a fallback: account is the caller's words for why,
	// label the metrics' bounded name.
	FellBack func(e E, account, label string)
	// Steps are the steps that end e.
	Steps func(e E) *teardown.Steps
	// Ended keeps a cloud session of key that has ended (for Replay).
	Ended func(key string, s *provider.Session)
	// NoCDP is the error of a provider's session with nothing to drive it
	// by; Dead is the death of a remote browser it names.
	NoCDP func(provider string) error
	Dead  func(browser string) error
	// ErrFallbackFailed wraps the failure of the floor under a failed
	// provider; ErrClosed is the end of a creation Close stopped.
	ErrFallbackFailed, ErrClosed error
}

// noCDP marks the error of a session with nothing to drive it by: the
// provider answered, so it is up.
type noCDP struct{ error }

func (e noCDP) Unwrap() error { return e.error }

// Open makes a cloud session for key, or the local floor when the
// provider cannot give one. It never caches a failed cloud session:
// either it returns a working entry (cloud or fallback) or nothing at
// all. budget bounds the provider's part.
func (c *Config[E]) Open(ctx context.Context, key string, budget time.Duration) (E, error) {
	adm, reason := c.Health.Admit(ctx, budget)
	switch adm {
	case health.Local:
		// The provider asked us to stay away: no API call, no log line.
		return c.fallback(ctx, key, reason, c.Health.Last(), nil, itel.FallbackBackoffWindow)
	case health.Refused:
		// The provider refused the key or the payment lately: no API
		// call, and the fallback says so, not "back-off window".
		return c.fallback(ctx, key, reason, c.Health.Last(), nil, "")
	}
	slot, ok := c.Fleet.AcquireSlot(ctx)
	if !ok {
		if adm == health.Probe {
			// No question was asked: the waiters look again, and one of
			// them probes.
			c.Health.ProbeDone()
		}
		return c.fallback(ctx, key, ErrConcurrencyLimit.Error(), nil, nil, itel.FallbackConcurrency)
	}
	e, fellBack, err := c.session(ctx, key, budget, adm)
	if err != nil || fellBack {
		c.Fleet.Release(context.WithoutCancel(ctx), slot)
		return e, err
	}
	if slot != nil {
		c.Steps(e).Add(teardown.Slot, func(ctx context.Context) error {
			c.Fleet.Release(ctx, slot)
			return nil
		})
	}
	return e, nil
}

// session asks the provider for a session and connects to it, or falls
// back to local Chromium (fellBack), and tells internal/health what it
// learnt.
func (c *Config[E]) session(ctx context.Context, key string, budget time.Duration, adm health.Admission) (e E, fellBack bool, err error) {
	started := c.Now()
	s, t, err := c.ask(ctx, key, budget)
	if err == nil || errors.As(err, new(noCDP)) {
		// The provider answered: it is up, whatever its answer lacks.
		if c.Health.Succeeded(ctx, started) {
			c.Log.LogAttrs(ctx, slog.LevelInfo, "hybroute: cloud provider recovered",
				slog.String("provider", c.Calls.Name()))
		}
		if adm == health.Probe {
			c.Health.ProbeDone()
		}
		if err != nil {
			return e, false, err
		}
		e = c.Cloud(key, t, s)
		c.Steps(e).Add(teardown.Tab, func(ctx context.Context) error {
			_ = t.Close(ctx) // the provider's release ends what is left of it
			return nil
		})
		c.Steps(e).Add(teardown.Provider, func(ctx context.Context) error {
			// The tab's close may have spent ctx's budget on a loaded
			// browser; the provider's release gets one of its own, or the
			// session would run on. (The fleet slot's release after it
			// makes its own too: internal/fleet.)
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), teardown.ReleaseTimeout)
			defer cancel()
			// For Replay: some providers make the replay once it has
			// ended. What is kept is what a replay call names.
			ended := *s
			ended.REST = nil
			c.Ended(key, &ended)
			return c.Calls.ReleaseSession(ctx, s)
		})
		return e, false, nil
	}
	var fell *provider.Session
	if errors.Is(err, outage.ErrProviderFellBack) {
		fell = s
	}
	first, window, reason := c.Health.Failed(ctx, err)
	if adm == health.Probe {
		c.Health.ProbeDone() // after the window opened: the waiters go local
	}
	if first {
		c.logFailure(ctx, key, err, window)
	}
	e, err = c.fallback(ctx, key, reason, err, fell, "")
	return e, true, err
}

// tab is the tab of a cloud session: over CDP (remotetab.Tab) or through
// a REST API (remotetab.RESTTab). Close ends it; the provider's release
// follows.
type tab interface {
	browsertab.Tab
	Close(ctx context.Context) error
}

// ask creates the provider's session and connects to it. A session the
// provider created and we cannot use is released here, on a context of
// its own, but for one the provider marked fallback (returned with
// outage.ErrProviderFellBack), which the floor's entry releases.
func (c *Config[E]) ask(ctx context.Context, key string, budget time.Duration) (*provider.Session, tab, error) {
	pctx, cancel := context.WithTimeout(ctx, budget)
	s, err := c.Calls.CreateSession(pctx, key)
	cancel()
	name := c.Calls.Name()
	switch {
	case err != nil:
		return nil, nil, err
	case s == nil:
		return nil, nil, fmt.Errorf("provider %s returned no session", name)
	case s.FallbackFromCloud:
		reason := s.FallbackReason
		if reason == "" {
			reason = "no reason given"
		}
		return s, nil, fmt.Errorf("%w: %s", outage.ErrProviderFellBack, reason)
	case s.CDPURL == "" && s.REST != nil:
		// A browser driven through its REST API (the root's restpage.go).
		return s, remotetab.NewREST(s.REST, name), nil
	case s.CDPURL == "":
		// Nothing pretends to work: the exact message of the original
		// failure, and the session is given back, not cached.
		c.release(s)
		return nil, nil, noCDP{c.NoCDP(name)}
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
	browser := "the cloud browser of " + name
	t, err := remotetab.Connect(connCtx, remotetab.Config{URL: s.CDPURL, HTTPClient: s.HTTPClient, Browser: browser,
		Guard: c.Guard(), Single: s.SingleConnection, Died: c.Dead(browser)})
	if err != nil {
		c.release(s)
		return nil, nil, fmt.Errorf("%w to session %s of %s at %s: %w",
			ErrConnecting, s.ID, name, redact.URL(s.CDPURL), err)
	}
	return s, t, nil
}

// logFailure is the single line of an outage: provider, status, the
// window, and the session params the local floor does without, so an
// operator can confirm the fallback engaged. A configuration error (the
// key, the project, the plan) is logged at ERROR with what to fix: it does
// not heal by waiting.
func (c *Config[E]) logFailure(ctx context.Context, key string, err error, window time.Duration) {
	attrs := []slog.Attr{
		slog.String("provider", c.Calls.Name()),
		slog.String("session", key),
		slog.Duration("retry_after", window),
		slog.String("error", err.Error()),
	}
	attrs = append(attrs, outage.Attrs(err)...)
	if !c.Fallback {
		c.Log.LogAttrs(ctx, slog.LevelError, "hybroute: cloud provider failed and the fallback is off", attrs...)
		return
	}
	attrs = append(attrs, outage.DroppedParams(c.Calls.Provider)...)
	if outage.IsConfigError(err) {
		attrs = append(attrs, slog.String("fix", outage.ConfigFix(err)))
		c.Log.LogAttrs(ctx, slog.LevelError, "hybroute: cloud provider refused the configuration, falling back to local Chromium", attrs...)
		return
	}
	c.Log.LogAttrs(ctx, slog.LevelWarn, "hybroute: cloud provider failed, falling back to local Chromium", attrs...)
}

// fallback is the local floor under a cloud session key: the plain key
// (the hybrid ::local sidecar stays separate), the local route, and the
// reason. It has a budget of its own, so the provider's time never eats the
// floor's. With the fallback off, the call fails with the provider's error.
// kind is the fallback's bounded name for the metrics; "" derives it from
// cause.
func (c *Config[E]) fallback(ctx context.Context, key, reason string, cause error, fellBack *provider.Session, kind string) (E, error) {
	var none E
	if cause == nil {
		// The reason may be a shared store's text: quoted, it stays data.
		cause = fmt.Errorf("%w: %q", provider.ErrUnavailable, reason)
	}
	if !c.Fallback {
		if fellBack != nil {
			c.release(fellBack)
		}
		return none, fmt.Errorf("hybroute: cloud session failed and the fallback is off (%q): %w", reason, cause)
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.LocalTimeout)
	defer cancel()
	defer context.AfterFunc(c.Life, cancel)()
	e, err := c.Local(fctx, key)
	if err != nil {
		if fellBack != nil {
			c.release(fellBack)
		}
		err = fmt.Errorf("%w: cloud: %w; local: %w", c.ErrFallbackFailed, cause, err)
		if c.Life.Err() != nil {
			return none, c.ErrClosed // Close ended it: not an outage to report
		}
		if c.Health.FloorFailed() {
			c.Log.LogAttrs(ctx, slog.LevelError, "hybroute: cloud provider and local Chromium both failed",
				slog.String("provider", c.Calls.Name()), slog.String("session", key),
				slog.String("error", err.Error()))
		}
		return none, err
	}
	if fellBack != nil {
		c.Steps(e).Add(teardown.Provider, func(ctx context.Context) error { return c.Calls.ReleaseSession(ctx, fellBack) })
	}
	if kind == "" {
		kind = c.Tel.FallbackKind(cause)
	}
	c.FellBack(e, reason, kind)
	c.Tel.FellBack(ctx, kind)
	return e, nil
}

// release gives a session back to the provider on a context of its own:
// the creation's may be over (Close, a deadline), and a session left open
// costs the user money and a slot of their concurrency cap.
func (c *Config[E]) release(s *provider.Session) {
	ctx, cancel := context.WithTimeout(context.Background(), teardown.ReleaseTimeout)
	defer cancel()
	if err := c.Calls.ReleaseSession(ctx, s); err != nil {
		c.Log.LogAttrs(ctx, slog.LevelWarn, "hybroute: releasing a provider session",
			slog.String("provider", c.Calls.Name()), slog.String("error", err.Error()))
	}
}
