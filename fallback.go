package hybroute

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// ErrNoCDPEndpoint is wrapped by the error of a cloud session that has no
// CDP endpoint and no fallback: nothing pretends the call ran.
var ErrNoCDPEndpoint = errors.New("returned no CDP endpoint")

// noCDPError is the exact message of SPEC.md failure 1, kept verbatim so
// the people who met it in the original tool recognise it.
type noCDPError struct{ provider string }

func (e *noCDPError) Error() string {
	return fmt.Sprintf("Cloud browser provider %s returned no CDP endpoint, so Browser Use mode cannot drive it. Switch to the built-in browser tools for this provider.", e.provider)
}

func (e *noCDPError) Unwrap() error { return ErrNoCDPEndpoint }

// ErrFallbackFailed is wrapped when the cloud failed and the local floor
// failed too; the error wraps both causes.
var ErrFallbackFailed = errors.New("hybroute: cloud session failed and the local fallback failed too")

// WithProviderBackoffCap caps how long one advertised Retry-After keeps new
// sessions off the provider (default 5 minutes).
func WithProviderBackoffCap(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.maxBackoff = d
		}
	}
}

// backoff is the provider's health as the router has seen it: the window a
// Retry-After opened, and whether the current outage was already logged. One
// backoff is shared by every session key, so one 429 keeps all new sessions
// off the provider for the advertised window, with one log line.
type backoff struct {
	mu          sync.Mutex
	until       time.Time // new sessions skip the provider before this
	outage      bool      // a failure was logged and no success seen since
	floorLogged bool      // the double failure of this outage was logged
	lastErr     error     // the failure that opened the outage
	failedAt    time.Time // the latest failure
}

// skip reports whether a new session goes straight to local, and why.
func (b *backoff) skip(now time.Time) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if now.Before(b.until) {
		return true, b.lastErr
	}
	return false, nil
}

// failed records a provider failure and reports whether it is the first of
// this outage (the one to log).
func (b *backoff) failed(now time.Time, err error, maxWindow time.Duration) (first bool, window time.Duration) {
	window = retryWindow(err, maxWindow)
	b.mu.Lock()
	defer b.mu.Unlock()
	if until := now.Add(window); until.After(b.until) {
		b.until = until
	}
	b.lastErr = err
	b.failedAt = now
	first = !b.outage
	b.outage = true
	return first, window
}

// floorFailed reports whether the double failure is the first of this
// outage (the one to log).
func (b *backoff) floorFailed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	first := !b.floorLogged
	b.floorLogged = true
	return first
}

// succeeded ends an outage and reports whether one was open. A success
// whose attempt began before the latest failure says nothing about the
// provider now (a slow creation finishing after a 429), so it changes
// nothing.
func (b *backoff) succeeded(started time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if started.Before(b.failedAt) {
		return false
	}
	was := b.outage
	b.outage, b.floorLogged, b.until, b.lastErr = false, false, time.Time{}, nil
	return was
}

// defaultRateLimitWindow is the window of a 429 that names none (Browser
// Use's do not): a rate limit is a request to stay away, even unquantified.
// A provider whose own layer fell back gets the same: it has told us the
// cloud is not there, without saying for how long.
const defaultRateLimitWindow = 30 * time.Second

// errProviderFellBack is the cause of a session the provider returned
// already marked FallbackFromCloud.
var errProviderFellBack = errors.New("provider session came back marked fallback from cloud")

// retryWindow is how long the provider asked us to stay away, capped. Other
// failures open no window: the next new session tries the cloud again.
func retryWindow(err error, maxWindow time.Duration) time.Duration {
	if errors.Is(err, errProviderFellBack) {
		return min(defaultRateLimitWindow, maxWindow)
	}
	var pe *ProviderError
	if !errors.As(err, &pe) {
		return 0
	}
	w := pe.RetryAfter
	if w <= 0 && errors.Is(err, ErrRateLimited) {
		w = defaultRateLimitWindow
	}
	return min(max(w, 0), maxWindow)
}

// logProviderFailure is the single warning of an outage: provider, status,
// and the window, so an operator can confirm the fallback engaged.
func (r *Router) logProviderFailure(ctx context.Context, key string, err error, window time.Duration) {
	attrs := []slog.Attr{
		slog.String("provider", r.provider.Name()),
		slog.String("session", key),
		slog.Duration("retry_after", window),
		slog.String("error", err.Error()),
	}
	var pe *ProviderError
	if errors.As(err, &pe) {
		attrs = append(attrs, slog.Int("status", pe.Status))
		if pe.Code != "" {
			attrs = append(attrs, slog.String("code", pe.Code))
		}
	}
	r.log.LogAttrs(ctx, slog.LevelWarn, "hybroute: cloud provider failed, falling back to local Chromium", attrs...)
}

// cloudEntry makes a cloud session for key, or the local floor when the
// provider cannot give one. It never caches a failed cloud session: either
// it returns a working entry (cloud or fallback) or nothing at all.
func (r *Router) cloudEntry(ctx context.Context, key string, budget time.Duration) (*entry, error) {
	if skip, cause := r.back.skip(time.Now()); skip {
		// The provider asked us to stay away: no API call, no log line.
		return r.fallbackEntry(ctx, key, cause)
	}
	started := time.Now()
	pctx, cancel := context.WithTimeout(ctx, budget)
	s, err := r.provider.CreateSession(pctx, key)
	cancel()
	if err != nil {
		return r.providerFailed(ctx, key, err)
	}
	if s == nil {
		return r.providerFailed(ctx, key, fmt.Errorf("provider %s returned no session", r.provider.Name()))
	}
	if s.FallbackFromCloud {
		// The provider's own session layer fell back already. A local
		// session has no CDP URL until its Chromium starts, so resolve the
		// local endpoint exactly as the no-provider path does.
		reason := s.FallbackReason
		if reason == "" {
			reason = "no reason given"
		}
		e, err := r.providerFailed(ctx, key, fmt.Errorf("%w: %s", errProviderFellBack, reason))
		if err != nil {
			_ = r.provider.ReleaseSession(context.WithoutCancel(ctx), s)
			return nil, err
		}
		local := e.release
		e.sess = s
		e.release = func(ctx context.Context) error {
			return errors.Join(local(ctx), r.provider.ReleaseSession(ctx, s))
		}
		return e, nil
	}
	if s.CDPURL == "" {
		// Nothing pretends to work: the exact message of the original
		// failure, and the session is given back, not cached.
		_ = r.provider.ReleaseSession(ctx, s)
		return nil, &noCDPError{provider: r.provider.Name()}
	}
	t, err := connectRemote(ctx, s.CDPURL)
	if err != nil {
		_ = r.provider.ReleaseSession(ctx, s)
		return r.providerFailed(ctx, key, fmt.Errorf("connecting to session %s of %s at %s: %w",
			s.ID, r.provider.Name(), redactURL(s.CDPURL), err))
	}
	if r.back.succeeded(started) {
		r.log.LogAttrs(ctx, slog.LevelInfo, "hybroute: cloud provider recovered",
			slog.String("provider", r.provider.Name()))
	}
	return &entry{key: key, route: RouteCloud, sess: s, tab: t, release: func(ctx context.Context) error {
		_ = t.close(ctx)
		return r.provider.ReleaseSession(ctx, s)
	}}, nil
}

// providerFailed records the failure (one log line per outage) and falls
// back to local Chromium.
func (r *Router) providerFailed(ctx context.Context, key string, err error) (*entry, error) {
	first, window := r.back.failed(time.Now(), err, r.cfg.maxBackoff)
	if first {
		r.logProviderFailure(ctx, key, err, window)
	}
	return r.fallbackEntry(ctx, key, err)
}

// fallbackEntry is the local floor under a cloud session key. Its entry
// keeps the cloud route (the session is a cloud session standing on local
// Chromium) and the plain key, so the hybrid ::local sidecar stays separate.
func (r *Router) fallbackEntry(ctx context.Context, key string, cause error) (*entry, error) {
	e, err := r.localEntry(ctx, key, RouteCloud)
	if err != nil {
		err = fmt.Errorf("%w: cloud: %w; local: %w", ErrFallbackFailed, cause, err)
		if r.life.Err() != nil {
			return nil, ErrClosed // Close ended it: not an outage to report
		}
		if r.back.floorFailed() {
			r.log.LogAttrs(ctx, slog.LevelError, "hybroute: cloud provider and local Chromium both failed",
				slog.String("provider", r.provider.Name()), slog.String("session", key),
				slog.String("error", err.Error()))
		}
		return nil, err
	}
	e.fallback = true
	e.reason = cause.Error()
	return e, nil
}

// providerBudget is how long the provider may take to create a session:
// half of what the caller has left, so the local floor can still start in
// time for it, but never less than minProviderBudget (an impatient caller
// must not turn a normal provider into an "outage") and never more than half
// of the creation's own timeout.
func providerBudget(ctx context.Context, createTimeout time.Duration) time.Duration {
	b := createTimeout / 2
	if dl, ok := ctx.Deadline(); ok {
		b = min(b, max(time.Until(dl)/2, minProviderBudget))
	}
	return b
}

const minProviderBudget = 5 * time.Second
