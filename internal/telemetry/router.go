package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/provider"
	"github.com/hybroute/hybroute/route"
)

// The Router's glue: its plans, sessions and results become the bounded
// names here, and the spans of its calls are made. A span's attributes are
// bounded names too, or the caller's own session key: never a URL, a host,
// an API key or an error text.

// The fallback reasons, the bounded names of why a cloud session ran on
// local Chromium (the fallback_reason attribute).
const (
	FallbackRateLimited        = "rate_limited"
	FallbackUnauthorized       = "unauthorized"
	FallbackPaymentRequired    = "payment_required"
	FallbackUnavailable        = "unavailable"
	FallbackTimeout            = "timeout"
	FallbackConnectFailed      = "connect_failed"
	FallbackProviderFellBack   = "provider_fell_back"
	FallbackBackoffWindow      = "backoff_window"
	FallbackConcurrency        = "concurrency_limit"
	FallbackUnsupportedBrowser = "unsupported_browser"
	fallbackOther              = "error"
)

// Named is an error sentinel of the router's, with its bounded name.
type Named struct {
	Err  error
	Name string
}

// RouterConfig is what a Router is made of. The root's errors come as
// tables, asked in order before the errors this package knows.
type RouterConfig struct {
	Meters   metric.MeterProvider // nil: the global one
	Tracers  trace.TracerProvider // nil: the global one
	Provider string               // the provider's Name(), "" without one

	Busy      error   // the error of an opening that found no turn (the queued outcome "busy")
	Kinds     []Named // the names of a failed call's errors on a span's status
	Fallbacks []Named // the names of why a provider gave no session (fallback_reason)
}

// Router is the router's instruments and its tracer, with the provider's
// Name() and the names of the router's errors.
type Router struct {
	*Metrics
	Tracer   trace.Tracer
	Provider string // the provider's Name(), "" without one

	busy      error
	kinds     []Named
	fallbacks []Named
}

// NewRouter makes the instruments and the tracer on the providers cfg
// names, the global ones by default.
func NewRouter(cfg RouterConfig) *Router {
	tp := cfg.Tracers
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	m := New(cfg.Meters, cfg.Provider, route.None.String(), route.Cloud.String(), route.Local.String())
	kinds := append(cfg.Kinds[:len(cfg.Kinds):len(cfg.Kinds)],
		Named{Err: context.DeadlineExceeded, Name: "deadline_exceeded"}, Named{Err: context.Canceled, Name: "canceled"})
	return &Router{Metrics: m, Tracer: tp.Tracer(Scope), Provider: cfg.Provider,
		busy: cfg.Busy, kinds: kinds, fallbacks: cfg.Fallbacks}
}

// QueuedAfter records one opening's wait for its turn, which ended with
// err.
func (t *Router) QueuedAfter(waited time.Duration, err error) {
	outcome := "admitted"
	switch {
	case t.busy != nil && errors.Is(err, t.busy):
		outcome = "busy"
	case err != nil:
		outcome = "gone"
	}
	t.Queued(waited, outcome)
}

// Refused counts a request or connection refused after planning. source is
// "guard", "egress" or "landing". A nil Router (a policy made by a test
// without a router) counts nothing.
func (t *Router) Refused(ctx context.Context, source string, err error) {
	if t != nil {
		t.Metrics.Refused(ctx, source, err)
	}
}

// FallbackKind is the bounded name of why the provider gave no session.
func (t *Router) FallbackKind(err error) string {
	for _, k := range t.fallbacks {
		if errors.Is(err, k.Err) {
			return k.Name
		}
	}
	var pe *provider.Error
	switch {
	case errors.Is(err, provider.ErrRateLimited):
		return FallbackRateLimited
	case errors.Is(err, provider.ErrAuth):
		return FallbackUnauthorized
	case errors.Is(err, provider.ErrPayment):
		return FallbackPaymentRequired
	case errors.Is(err, context.DeadlineExceeded):
		return FallbackTimeout
	case errors.Is(err, provider.ErrUnavailable):
		return FallbackUnavailable
	case errors.As(err, &pe):
		return FallbackUnavailable
	}
	return fallbackOther
}

// ObserveWindow reports the provider's back-off window, read with window
// and measured on the clock now, until Stop.
func (t *Router) ObserveWindow(window func(ctx context.Context, provider string) (until time.Time, reason string, err error), now func() time.Time) {
	t.ObserveBackoff(func(ctx context.Context) (time.Duration, bool) {
		until, _, err := window(ctx, t.Provider)
		if err != nil {
			return 0, false // no window known: nothing to report
		}
		return until.Sub(now()), true
	})
}

// StartCall starts the span of one Exec or Navigate call.
func (t *Router) StartCall(ctx context.Context, name, sessionKey string) (context.Context, trace.Span) {
	return t.Tracer.Start(ctx, name, trace.WithAttributes(attribute.String("hybroute.session_key", sessionKey)))
}

// EndCall records a call's outcome on its span, and ends it. The status
// description is a bounded reason, never an error text (which may hold a
// URL).
func (t *Router) EndCall(span trace.Span, w route.Route, cacheKey string, fallback bool, err error) {
	if span.IsRecording() {
		span.SetAttributes(attribute.String("hybroute.route", w.String()),
			attribute.String("hybroute.cache_key", cacheKey),
			attribute.Bool("hybroute.fallback_from_cloud", fallback))
		if err != nil {
			span.SetStatus(codes.Error, t.ErrorKind(err))
		}
	}
	span.End()
}

// ErrorKind names an error for a span's status without its text.
func (t *Router) ErrorKind(err error) string {
	if be, ok := errors.AsType[*netpolicy.BlockedError](err); ok {
		return "blocked: " + be.Reason.String()
	}
	for _, k := range t.kinds {
		if errors.Is(err, k.Err) {
			return k.Name
		}
	}
	return "error"
}

// EndPlan records a plan on its span, and ends it.
func (t *Router) EndPlan(span trace.Span, w route.Route, vs []netpolicy.Verdict, err error) {
	if span.IsRecording() {
		span.SetAttributes(attribute.String("hybroute.route", w.String()),
			attribute.String("hybroute.class", PlanClassName(vs)),
			attribute.Int("hybroute.urls", len(vs)))
		if err != nil {
			span.SetStatus(codes.Error, t.ErrorKind(err))
		}
	}
	span.End()
}

// Acquired is the session a call got: its route, and why it fell back
// when it did.
type Acquired struct {
	Route    route.Route
	Fallback bool
	Reason   string // the bounded fallback reason
}

// EndAcquire records the session a call got (nil: none) on its span, and
// ends it.
func (t *Router) EndAcquire(span trace.Span, got *Acquired, err error) {
	if span.IsRecording() {
		if got != nil {
			span.SetAttributes(attribute.String("hybroute.route", got.Route.String()),
				attribute.Bool("hybroute.fallback_from_cloud", got.Fallback))
			if got.Fallback {
				span.SetAttributes(attribute.String("hybroute.fallback_reason", got.Reason))
			}
		}
		if err != nil {
			span.SetStatus(codes.Error, t.ErrorKind(err))
		}
	}
	span.End()
}

// LogPlan logs a call's plan at debug level: its session key, route,
// cache key and how many URLs it decided on.
func LogPlan(ctx context.Context, log *slog.Logger, key string, w route.Route, cacheKey string, urls int) {
	if !log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	log.LogAttrs(ctx, slog.LevelDebug, "hybroute plan",
		slog.String("session", key),
		slog.String("route", w.String()),
		slog.String("cache_key", cacheKey),
		slog.Int("urls", urls))
}
