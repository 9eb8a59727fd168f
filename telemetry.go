package hybroute

import (
	"context"
	"errors"
	"strconv"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"

	"github.com/hybroute/hybroute/provider"
)

// Metrics and traces. Every attribute is one of a bounded set of names
// (routes, classes, reasons, operations, HTTP statuses, the provider's
// configured name) or the caller's own session key on a span: never a URL,
// a host, an API key or an error text, which could carry any of these.

// instrumentationName is the OpenTelemetry scope of the library's meter and
// tracer.
const instrumentationName = "github.com/hybroute/hybroute"

// The metric names, as docs/operations.md (Observability) lists them.
const (
	metricPlans            = "hybroute.plans"
	metricBlocked          = "hybroute.blocked"
	metricFallbacks        = "hybroute.fallbacks"
	metricProviderRequests = "hybroute.provider.requests"
	metricSessionsOpen     = "hybroute.sessions.open"
	metricRefusals         = "hybroute.refusals"
	metricSessionCreate    = "hybroute.session.create.duration"
	metricCallDuration     = "hybroute.call.duration"
	metricBackoff          = "hybroute.provider.backoff.remaining"
	metricStoreErrors      = "hybroute.store.errors"
	metricTabQueueWait     = "hybroute.tab.queue.wait"
	metricEvictions        = "hybroute.sessions.evicted"
)

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

// planClassNone is the class attribute of a plan with no URL literal.
const planClassNone = "none"

// telemetry holds the router's instruments. The plan's counters take
// attribute sets built once in newTelemetry, so that counting a plan
// allocates nothing.
type telemetry struct {
	tracer trace.Tracer

	plans            metric.Int64Counter
	blocked          metric.Int64Counter
	fallbacks        metric.Int64Counter
	providerRequests metric.Int64Counter
	sessionsOpen     metric.Int64UpDownCounter
	refusals         metric.Int64Counter
	createDuration   metric.Float64Histogram
	callDuration     metric.Float64Histogram
	storeErrors      metric.Int64Counter
	tabQueueWait     metric.Float64Histogram
	evictions        metric.Int64Counter

	provider string // the provider's Name(), "" without one

	planOpts    [2][len(classNames) + 1][]metric.AddOption // by route, by plan class (the last one: none)
	blockedOpts [len(reasons)][]metric.AddOption           // by reason

	backoffReg metric.Registration
}

// newTelemetry makes the instruments on the providers the options chose,
// the global ones by default. An instrument that cannot be made (a
// misconfigured SDK) is replaced by a no-op one: telemetry never fails the
// router.
func newTelemetry(mp metric.MeterProvider, tp trace.TracerProvider, provider string) *telemetry {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	m := mp.Meter(instrumentationName)
	t := &telemetry{tracer: tp.Tracer(instrumentationName), provider: provider}
	t.plans = counter(m, metricPlans, "Calls planned, by route and by the most restrictive class of their URL literals.")
	t.blocked = counter(m, metricBlocked, "Calls refused at plan time, by the reason of their most serious literal.")
	t.fallbacks = counter(m, metricFallbacks, "Cloud sessions that ran on local Chromium instead, by provider and reason.")
	t.providerRequests = counter(m, metricProviderRequests, "Requests to the cloud provider's API, by provider, operation and status.")
	t.refusals = counter(m, metricRefusals, "Browser requests and connections refused after planning, by source (guard, egress, landing), class and reason.")
	t.storeErrors = counter(m, metricStoreErrors, "Store operations that failed or timed out and fell back to in-process state, by operation.")
	var err error
	if t.sessionsOpen, err = m.Int64UpDownCounter(metricSessionsOpen, metric.WithDescription("Sessions open, by route (a fallback counts as local).")); err != nil {
		t.sessionsOpen, _ = noopMeter.Int64UpDownCounter(metricSessionsOpen)
	}
	t.createDuration = histogram(m, metricSessionCreate, "Time to create a session (the provider, the connect or the local tab), by route.")
	t.callDuration = histogram(m, metricCallDuration, "Time of the caller's run function on a session, by route.")
	t.tabQueueWait = histogram(m, metricTabQueueWait, "Time a new local session waited for its turn to open a tab, by outcome (admitted, busy, gone), apart from the page's time (hybroute.call.duration).")
	t.evictions = counter(m, metricEvictions, "Idle sessions ended to stay within the session cap or the local memory budget, by reason (max_sessions, max_local_memory).")

	for route := range t.planOpts {
		for c := range t.planOpts[route] {
			name := planClassNone
			if c < len(classNames) {
				name = classNames[c]
			}
			t.planOpts[route][c] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(
				attribute.String("route", Route(route).String()), attribute.String("class", name)))}
		}
	}
	for r := range t.blockedOpts {
		t.blockedOpts[r] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(
			attribute.String("reason", Reason(r).String())))}
	}
	return t
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
	t.tabQueueWait.Record(context.Background(), waited.Seconds(), metric.WithAttributes(attribute.String("outcome", outcome)))
}

// noopMeter makes the stand-ins of instruments a provider refused to make.
var noopMeter = metricnoop.NewMeterProvider().Meter(instrumentationName)

func counter(m metric.Meter, name, desc string) metric.Int64Counter {
	c, err := m.Int64Counter(name, metric.WithDescription(desc))
	if err != nil {
		c, _ = noopMeter.Int64Counter(name)
	}
	return c
}

func histogram(m metric.Meter, name, desc string) metric.Float64Histogram {
	h, err := m.Float64Histogram(name, metric.WithDescription(desc), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))
	if err != nil {
		h, _ = noopMeter.Float64Histogram(name)
	}
	return h
}

// planClass is the class a plan is counted under: the most restrictive of
// its literals (metadata, invalid, private, public, then noroute), or none.
func planClass(vs []Verdict) int {
	if len(vs) == 0 {
		return len(classNames)
	}
	rank := func(c Class) int {
		switch c {
		case ClassMetadata:
			return 4
		case ClassInvalid:
			return 3
		case ClassPrivate:
			return 2
		case ClassPublic:
			return 1
		}
		return 0
	}
	best := vs[0].Class
	for _, v := range vs[1:] {
		if rank(v.Class) > rank(best) {
			best = v.Class
		}
	}
	if best < 0 || int(best) >= len(classNames) {
		return len(classNames)
	}
	return int(best)
}

// countPlan counts one planned call; reason is the blocked call's leading
// reason, 0 for a call that may run.
func (t *telemetry) countPlan(ctx context.Context, route Route, vs []Verdict, reason Reason) {
	if route < 0 || int(route) >= len(t.planOpts) {
		return
	}
	t.plans.Add(ctx, 1, t.planOpts[route][planClass(vs)]...)
	if reason != 0 {
		if reason < 0 || int(reason) >= len(t.blockedOpts) {
			reason = ReasonInvalidURL
		}
		t.blocked.Add(ctx, 1, t.blockedOpts[reason]...)
	}
}

// leadingReason is the reason a blocked call is counted under: metadata
// first, then invalid, then private, as blockedCall orders its errors.
func leadingReason(errs []error) Reason {
	var best Reason
	rank := func(r Reason) int {
		switch r {
		case ReasonMetadata:
			return 3
		case ReasonInvalidURL, ReasonSchemeNotAllowed:
			return 2
		case 0:
			return 0
		}
		return 1
	}
	for _, err := range errs {
		if be, ok := errors.AsType[*BlockedError](err); ok && rank(be.Reason) > rank(best) {
			best = be.Reason
		}
	}
	if best == 0 {
		best = ReasonInvalidURL
	}
	return best
}

// refused counts a request or connection refused after planning. source is
// "guard", "egress" or "landing". A nil telemetry (a policy made by a test
// without a router) counts nothing.
func (t *telemetry) refused(ctx context.Context, source string, err error) {
	if t == nil {
		return
	}
	be, ok := errors.AsType[*BlockedError](err)
	if !ok {
		return
	}
	t.refusals.Add(ctx, 1, metric.WithAttributes(attribute.String("source", source),
		attribute.String("class", be.Class.String()), attribute.String("reason", be.Reason.String())))
}

// fellBack counts a cloud session that ran on local Chromium.
func (t *telemetry) fellBack(ctx context.Context, reason string) {
	t.fallbacks.Add(ctx, 1, metric.WithAttributes(attribute.String("provider", t.provider), attribute.String("reason", reason)))
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

// providerStatus is the status attribute of a provider request: "ok", the
// HTTP status of a refusal, or "error" when no answer came.
func providerStatus(err error) string {
	if err == nil {
		return "ok"
	}
	var pe *provider.Error
	if errors.As(err, &pe) && pe.Status != 0 {
		return strconv.Itoa(pe.Status)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timeout"
	}
	return "error"
}

// sessionOpened counts an entry that the cache now holds, and makes its
// end count it closed.
func (t *telemetry) sessionOpened(ctx context.Context, e *entry) {
	opts := metric.WithAttributes(attribute.String("route", e.route.String()))
	t.sessionsOpen.Add(ctx, 1, opts)
	e.ending.add(endCount, func(ctx context.Context) error {
		t.sessionsOpen.Add(ctx, -1, opts)
		return nil
	})
}

// observeBackoff reports the provider's back-off window, in seconds left
// (0: closed), until unregistered at Close.
func (r *Router) observeBackoff(m metric.MeterProvider) {
	if r.provider == nil {
		return
	}
	if m == nil {
		m = otel.GetMeterProvider()
	}
	g, err := m.Meter(instrumentationName).Float64ObservableGauge(metricBackoff, metric.WithUnit("s"),
		metric.WithDescription("Seconds left in the provider's back-off window (0 when it is closed)."))
	if err != nil {
		return
	}
	attrs := metric.WithAttributes(attribute.String("provider", r.tel.provider))
	r.tel.backoffReg, _ = m.Meter(instrumentationName).RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		until, _, err := fleetHealth{r.fleet}.Window(ctx, r.tel.provider)
		if err != nil {
			return nil // no window known: nothing to report
		}
		o.ObserveFloat64(g, max(until.Sub(r.now()), 0).Seconds(), attrs)
		return nil
	}, g)
}

// stopTelemetry unregisters the router's callbacks.
func (t *telemetry) stop() {
	if t.backoffReg != nil {
		_ = t.backoffReg.Unregister()
	}
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
	if be, ok := errors.AsType[*BlockedError](err); ok {
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

// since is the seconds since start, for a histogram.
func since(start time.Time) float64 { return time.Since(start).Seconds() }

// endPlan records a plan on its span, and ends it.
func endPlan(span trace.Span, p Plan, err error) {
	if span.IsRecording() {
		span.SetAttributes(attribute.String("hybroute.route", p.Route.String()),
			attribute.String("hybroute.class", planClassName(p.Verdicts)),
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

func planClassName(vs []Verdict) string {
	if c := planClass(vs); c < len(classNames) {
		return classNames[c]
	}
	return planClassNone
}
