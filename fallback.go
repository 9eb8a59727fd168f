package hybroute

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// When the cloud fails: the window a provider's Retry-After opens for every
// session key, the one log line per outage, and the local floor that takes
// a cloud session's place. The successful path is cloud.go's.

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

// remaining is how long the window stays open after now (<= 0: closed).
func (b *backoff) remaining(now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.until.Sub(now)
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

// errConcurrencyLimit is the cause of a cloud session that ran locally
// because the provider's sessions were all taken ([WithProviderConcurrency]).
var errConcurrencyLimit = errors.New("provider concurrency limit")

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

// providerFellBack is a session the provider's own layer already fell back
// to local: it has no CDP URL until a local Chromium starts, so the local
// endpoint is resolved exactly as the no-provider path does, and the
// provider's session is released with it.
func (r *Router) providerFellBack(ctx context.Context, key string, s *Session) (*entry, error) {
	reason := s.FallbackReason
	if reason == "" {
		reason = "no reason given"
	}
	e, err := r.providerFailed(ctx, key, fmt.Errorf("%w: %s", errProviderFellBack, reason), "")
	if err != nil {
		_ = r.providerRelease(context.WithoutCancel(ctx), s)
		return nil, err
	}
	local := e.release
	e.release = func(ctx context.Context) error {
		return errors.Join(local(ctx), r.providerRelease(ctx, s))
	}
	return e, nil
}

// providerFailed records the failure (one log line per outage) and falls
// back to local Chromium. reason names the failure for the metrics; ""
// derives it from err.
func (r *Router) providerFailed(ctx context.Context, key string, err error, reason string) (*entry, error) {
	first, window := r.back.failed(r.now(), err, r.cfg.maxBackoff)
	if first {
		r.logProviderFailure(ctx, key, err, window)
	}
	if reason == "" {
		reason = fallbackKind(err)
	}
	return r.fallbackEntry(ctx, key, err, reason)
}

// fallbackEntry is the local floor under a cloud session key. Its entry
// keeps the cloud route (the session is a cloud session standing on local
// Chromium) and the plain key, so the hybrid ::local sidecar stays separate.
func (r *Router) fallbackEntry(ctx context.Context, key string, cause error, reason string) (*entry, error) {
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
	e.fallbackReason = reason
	r.tel.fellBack(ctx, reason)
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
