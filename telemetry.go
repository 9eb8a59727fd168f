package hybroute

import (
	"context"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/hybroute/hybroute/internal/cloud"
	"github.com/hybroute/hybroute/internal/outage"
	"github.com/hybroute/hybroute/internal/teardown"
	itel "github.com/hybroute/hybroute/internal/telemetry"
)

// Metrics and traces are internal/telemetry's: the instruments, the bounded
// names they count under and the spans of a call. The router hands it the
// names of its own errors.

// newTelemetry makes the instruments and the tracer on the providers the
// options chose, the global ones by default.
func newTelemetry(mp metric.MeterProvider, tp trace.TracerProvider, provider string) *itel.Router {
	return itel.NewRouter(itel.RouterConfig{Meters: mp, Tracers: tp, Provider: provider, Busy: ErrBusy,
		Kinds: []itel.Named{
			{Err: ErrClosed, Name: "closed"},
			{Err: ErrInvalidSessionKey, Name: "invalid_session_key"},
			{Err: ErrFallbackFailed, Name: "fallback_failed"},
			{Err: ErrNoCDPEndpoint, Name: "no_cdp_endpoint"},
			{Err: ErrBrowserDead, Name: "browser_dead"},
			{Err: ErrNoChromium, Name: "no_chromium"},
		},
		Fallbacks: []itel.Named{
			{Err: cloud.ErrConcurrencyLimit, Name: itel.FallbackConcurrency},
			{Err: ErrUnsupportedBrowser, Name: itel.FallbackUnsupportedBrowser},
			{Err: cloud.ErrConnecting, Name: itel.FallbackConnectFailed},
			{Err: outage.ErrProviderFellBack, Name: itel.FallbackProviderFellBack},
		}})
}

// sessionOpened counts an entry that the cache now holds, and makes its
// end count it closed.
func (r *Router) sessionOpened(ctx context.Context, e *entry) {
	closed := r.tel.SessionOpened(ctx, e.route.String())
	e.ending.Add(teardown.Count, func(ctx context.Context) error {
		closed(ctx)
		return nil
	})
}

// observeBackoff reports the provider's back-off window, read from the
// fleet's store on the router's clock, until the telemetry stops at Close.
func (r *Router) observeBackoff() {
	if r.provider != nil {
		r.tel.ObserveWindow(r.fleet.Health().Window, r.now)
	}
}

// endAcquire records the session a call got (e, nil for none) on its span,
// and ends it.
func (r *Router) endAcquire(span trace.Span, e *entry, err error) {
	var got *itel.Acquired
	if e != nil {
		got = &itel.Acquired{Route: e.route, Fallback: e.fallback, Reason: e.fallbackLabel}
	}
	r.tel.EndAcquire(span, got, err)
}
