package hybroute

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	itel "github.com/hybroute/hybroute/internal/telemetry"
	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/provider"
	"github.com/hybroute/hybroute/route"
)

// Metrics and traces. The instruments and the bounded names they count
// under are internal/telemetry's; here the router's own types (a plan's
// route, a session, a result, a provider's error) become those names, and
// the spans of its calls are made. A span's attributes are bounded names
// too, or the caller's own session key: never a URL, a host, an API key or
// an error text.

// The fallback reasons, the bounded names of why a cloud session ran on
// local Chromium (the fallback_reason attribute).
const (
	fallbackRateLimited        = "rate_limited"
	fallbackUnauthorized       = "unauthorized"
	fallbackPaymentRequired    = "payment_required"
	fallbackUnavailable        = "unavailable"
	fallbackTimeout            = "timeout"
	fallbackConnectFailed      = "connect_failed"
	fallbackProviderFellBack   = "provider_fell_back"
	fallbackBackoffWindow      = "backoff_window"
	fallbackConcurrency        = "concurrency_limit"
	fallbackUnsupportedBrowser = "unsupported_browser"
	fallbackOther              = "error"
)

// telemetry is the router's instruments (internal/telemetry) and its
// tracer, with the provider's Name().
type telemetry struct {
	*itel.Metrics
	tracer   trace.Tracer
	provider string // the provider's Name(), "" without one
}

// newTelemetry makes the instruments and the tracer on the providers the
// options chose, the global ones by default.
func newTelemetry(mp metric.MeterProvider, tp trace.TracerProvider, provider string) *telemetry {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	m := itel.New(mp, provider, route.Cloud.String(), route.Local.String())
	return &telemetry{Metrics: m, tracer: tp.Tracer(itel.Scope), provider: provider}
}

// countPlan counts one planned call; reason is the blocked call's leading
// reason, 0 for a call that may run.
func (t *telemetry) countPlan(ctx context.Context, route route.Route, vs []netpolicy.Verdict, reason netpolicy.Reason) {
	t.CountPlan(ctx, int(route), vs, reason)
}

// queued records one opening's wait for its turn.
func (t *telemetry) queued(waited time.Duration, err error) {
	outcome := "admitted"
	switch {
	case errors.Is(err, ErrBusy):
		outcome = "busy"
	case err != nil:
		outcome = "gone"
	}
	t.Queued(waited, outcome)
}

// refused counts a request or connection refused after planning. source is
// "guard", "egress" or "landing". A nil telemetry (a policy made by a test
// without a router) counts nothing.
func (t *telemetry) refused(ctx context.Context, source string, err error) {
	if t != nil {
		t.Refused(ctx, source, err)
	}
}

// fallbackKind is the bounded name of why the provider gave no session.
func fallbackKind(err error) string {
	var pe *provider.Error
	switch {
	case errors.Is(err, errConcurrencyLimit):
		return fallbackConcurrency
	case errors.Is(err, ErrUnsupportedBrowser):
		return fallbackUnsupportedBrowser
	case errors.Is(err, errConnecting):
		return fallbackConnectFailed
	case errors.Is(err, errProviderFellBack):
		return fallbackProviderFellBack
	case errors.Is(err, provider.ErrRateLimited):
		return fallbackRateLimited
	case errors.Is(err, provider.ErrAuth):
		return fallbackUnauthorized
	case errors.Is(err, provider.ErrPayment):
		return fallbackPaymentRequired
	case errors.Is(err, context.DeadlineExceeded):
		return fallbackTimeout
	case errors.Is(err, provider.ErrUnavailable):
		return fallbackUnavailable
	case errors.As(err, &pe):
		return fallbackUnavailable
	}
	return fallbackOther
}

// sessionOpened counts an entry that the cache now holds, and makes its
// end count it closed.
func (t *telemetry) sessionOpened(ctx context.Context, e *entry) {
	closed := t.SessionOpened(ctx, e.route.String())
	e.ending.add(endCount, func(ctx context.Context) error {
		closed(ctx)
		return nil
	})
}

// observeBackoff reports the provider's back-off window, read from the
// fleet's store on the router's clock, until the telemetry stops at Close.
func (r *Router) observeBackoff() {
	if r.provider == nil {
		return
	}
	h := r.fleet.Health()
	r.tel.ObserveBackoff(func(ctx context.Context) (time.Duration, bool) {
		until, _, err := h.Window(ctx, r.tel.provider)
		if err != nil {
			return 0, false // no window known: nothing to report
		}
		return until.Sub(r.now()), true
	})
}

// spanCall starts the span of one Exec or Navigate call.
func (r *Router) spanCall(ctx context.Context, name, sessionKey string) (context.Context, trace.Span) {
	return r.tel.tracer.Start(ctx, name, trace.WithAttributes(attribute.String("hybroute.session_key", sessionKey)))
}

// endCall records a call's outcome on its span, and ends it. The status
// description is a bounded reason, never an error text (which may hold a
// URL).
func endCall(span trace.Span, res Result, err error) {
	if span.IsRecording() {
		span.SetAttributes(attribute.String("hybroute.route", res.Route.String()),
			attribute.String("hybroute.cache_key", res.CacheKey),
			attribute.Bool("hybroute.fallback_from_cloud", res.FallbackFromCloud))
		if err != nil {
			span.SetStatus(codes.Error, errorKind(err))
		}
	}
	span.End()
}

// errorKind names an error for a span's status without its text.
func errorKind(err error) string {
	if be, ok := errors.AsType[*netpolicy.BlockedError](err); ok {
		return "blocked: " + be.Reason.String()
	}
	for _, k := range [...]struct {
		err  error
		name string
	}{
		{ErrClosed, "closed"}, {ErrInvalidSessionKey, "invalid_session_key"},
		{ErrFallbackFailed, "fallback_failed"}, {ErrNoCDPEndpoint, "no_cdp_endpoint"},
		{ErrBrowserDead, "browser_dead"}, {ErrNoChromium, "no_chromium"},
		{context.DeadlineExceeded, "deadline_exceeded"}, {context.Canceled, "canceled"},
	} {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return "error"
}

// endPlan records a plan on its span, and ends it.
func endPlan(span trace.Span, p Plan, err error) {
	if span.IsRecording() {
		span.SetAttributes(attribute.String("hybroute.route", p.Route.String()),
			attribute.String("hybroute.class", itel.PlanClassName(p.Verdicts)),
			attribute.Int("hybroute.urls", len(p.Verdicts)))
		if err != nil {
			span.SetStatus(codes.Error, errorKind(err))
		}
	}
	span.End()
}

// endAcquire records the session a call got on its span, and ends it.
func endAcquire(span trace.Span, e *entry, err error) {
	if span.IsRecording() {
		if e != nil {
			span.SetAttributes(attribute.String("hybroute.route", e.route.String()),
				attribute.Bool("hybroute.fallback_from_cloud", e.fallback))
			if e.fallback {
				span.SetAttributes(attribute.String("hybroute.fallback_reason", e.fallbackLabel))
			}
		}
		if err != nil {
			span.SetStatus(codes.Error, errorKind(err))
		}
	}
	span.End()
}
