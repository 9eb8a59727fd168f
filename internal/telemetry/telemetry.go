// Package telemetry holds the router's metric instruments and the bounded
// names they are counted under. Every attribute is one of a bounded set of
// names (routes, classes, reasons, operations, HTTP statuses, the
// provider's configured name): never a URL, a host, an API key or an error
// text, which could carry any of these. The names are a contract:
// docs/library.md (Observability) lists them.
//
// [Router] turns the router's plans, sessions, results and errors (the
// root names its own sentinels) into these names and makes the spans of its
// calls; [Provider] and [Store] decorate the provider and the shared store
// with theirs, so neither the clients nor the fleet know of telemetry.
package telemetry

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"

	"github.com/hybroute/hybroute/netpolicy"
)

// Scope is the OpenTelemetry scope of the library's meter and tracer.
const Scope = "github.com/hybroute/hybroute"

// The metric names, as docs/library.md (Observability) lists them.
const (
	MetricPlans            = "hybroute.plans"
	MetricBlocked          = "hybroute.blocked"
	MetricFallbacks        = "hybroute.fallbacks"
	MetricProviderRequests = "hybroute.provider.requests"
	MetricSessionsOpen     = "hybroute.sessions.open"
	MetricRefusals         = "hybroute.refusals"
	MetricSessionCreate    = "hybroute.session.create.duration"
	MetricCallDuration     = "hybroute.call.duration"
	MetricBackoff          = "hybroute.provider.backoff.remaining"
	MetricStoreErrors      = "hybroute.store.errors"
	MetricTabQueueWait     = "hybroute.tab.queue.wait"
	MetricEvictions        = "hybroute.sessions.evicted"
)

// planClassNone is the class attribute of a plan with no URL literal.
const planClassNone = "none"

// classNames are the classes' names by class, and reasons index the
// reasons (0 is none), for the attribute sets New makes ahead of time.
// TestTablesCoverEveryName holds them to netpolicy's.
var (
	classNames = [...]string{
		netpolicy.ClassPublic:   netpolicy.ClassPublic.String(),
		netpolicy.ClassPrivate:  netpolicy.ClassPrivate.String(),
		netpolicy.ClassMetadata: netpolicy.ClassMetadata.String(),
		netpolicy.ClassInvalid:  netpolicy.ClassInvalid.String(),
		netpolicy.ClassNoRoute:  netpolicy.ClassNoRoute.String(),
	}
	reasons [netpolicy.ReasonPrivateNotNamed + 1]struct{}
)

// Metrics holds the router's instruments. The plan's counters take
// attribute sets built once in New, so that counting a plan allocates
// nothing.
type Metrics struct {
	meter metric.Meter

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

	planOpts    [][len(classNames) + 1][]metric.AddOption // by route, by plan class (the last one: none)
	blockedOpts [len(reasons)][]metric.AddOption          // by reason

	backoffReg metric.Registration
}

// New makes the instruments on mp, the global provider if nil. routes
// are the routes' names by route, the plan counter's route attribute. An
// instrument that cannot be made (a misconfigured SDK) is replaced by a
// no-op one: telemetry never fails the router.
func New(mp metric.MeterProvider, provider string, routes ...string) *Metrics {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(Scope)
	t := &Metrics{meter: m, provider: provider}
	t.plans = counter(m, MetricPlans, "Calls planned, by route and by the most restrictive class of their URL literals.")
	t.blocked = counter(m, MetricBlocked, "Calls refused at plan time, by the reason of their most serious literal.")
	t.fallbacks = counter(m, MetricFallbacks, "Cloud sessions that ran on local Chromium instead, by provider and reason.")
	t.providerRequests = counter(m, MetricProviderRequests, "Requests to the cloud provider's API, by provider, operation and status.")
	t.refusals = counter(m, MetricRefusals, "Browser requests and connections refused after planning, by source (guard, egress, landing), class and reason.")
	t.storeErrors = counter(m, MetricStoreErrors, "Store operations that failed or timed out and fell back to in-process state, by operation.")
	var err error
	if t.sessionsOpen, err = m.Int64UpDownCounter(MetricSessionsOpen, metric.WithDescription("Sessions open, by route (a fallback counts as local).")); err != nil {
		t.sessionsOpen, _ = noopMeter.Int64UpDownCounter(MetricSessionsOpen)
	}
	t.createDuration = histogram(m, MetricSessionCreate, "Time to create a session (the provider, the connect or the local tab), by route.")
	t.callDuration = histogram(m, MetricCallDuration, "Time of the caller's run function on a session, by route.")
	t.tabQueueWait = histogram(m, MetricTabQueueWait, "Time a new local session waited for its turn to open a tab, by outcome (admitted, busy, gone), apart from the page's time (hybroute.call.duration).")
	t.evictions = counter(m, MetricEvictions, "Idle sessions ended to stay within the session cap or the local memory budget, by reason (max_sessions, max_local_memory).")

	t.planOpts = make([][len(classNames) + 1][]metric.AddOption, len(routes))
	for route := range t.planOpts {
		for c := range t.planOpts[route] {
			name := planClassNone
			if c < len(classNames) {
				name = classNames[c]
			}
			t.planOpts[route][c] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(
				attribute.String("route", routes[route]), attribute.String("class", name)))}
		}
	}
	for r := range t.blockedOpts {
		t.blockedOpts[r] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(
			attribute.String("reason", netpolicy.Reason(r).String())))}
	}
	return t
}

// noopMeter makes the stand-ins of instruments a provider refused to make.
var noopMeter = metricnoop.NewMeterProvider().Meter(Scope)

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
func planClass(vs []netpolicy.Verdict) int {
	if len(vs) == 0 {
		return len(classNames)
	}
	rank := func(c netpolicy.Class) int {
		switch c {
		case netpolicy.ClassMetadata:
			return 4
		case netpolicy.ClassInvalid:
			return 3
		case netpolicy.ClassPrivate:
			return 2
		case netpolicy.ClassPublic:
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

// PlanClassName is the class a plan with verdicts vs is counted under, the
// hybroute.class attribute of its span.
func PlanClassName(vs []netpolicy.Verdict) string {
	if c := planClass(vs); c < len(classNames) {
		return classNames[c]
	}
	return planClassNone
}

// CountPlan counts one planned call on route (an index of New's routes);
// reason is the blocked call's leading reason, 0 for a call that may run.
func (t *Metrics) CountPlan(ctx context.Context, route int, vs []netpolicy.Verdict, reason netpolicy.Reason) {
	if route < 0 || route >= len(t.planOpts) {
		return
	}
	t.plans.Add(ctx, 1, t.planOpts[route][planClass(vs)]...)
	if reason != 0 {
		if reason < 0 || int(reason) >= len(t.blockedOpts) {
			reason = netpolicy.ReasonInvalidURL
		}
		t.blocked.Add(ctx, 1, t.blockedOpts[reason]...)
	}
}

// LeadingReason is the reason a blocked call is counted under: metadata
// first, then invalid, then private, as the plan orders its errors.
func LeadingReason(errs []error) netpolicy.Reason {
	var best netpolicy.Reason
	rank := func(r netpolicy.Reason) int {
		switch r {
		case netpolicy.ReasonMetadata:
			return 3
		case netpolicy.ReasonInvalidURL, netpolicy.ReasonSchemeNotAllowed:
			return 2
		case 0:
			return 0
		}
		return 1
	}
	for _, err := range errs {
		if be, ok := errors.AsType[*netpolicy.BlockedError](err); ok && rank(be.Reason) > rank(best) {
			best = be.Reason
		}
	}
	if best == 0 {
		best = netpolicy.ReasonInvalidURL
	}
	return best
}

// Refused counts a request or connection refused after planning, by the
// class and reason of its BlockedError; source is "guard", "egress" or
// "landing".
func (t *Metrics) Refused(ctx context.Context, source string, err error) {
	be, ok := errors.AsType[*netpolicy.BlockedError](err)
	if !ok {
		return
	}
	t.refusals.Add(ctx, 1, metric.WithAttributes(attribute.String("source", source),
		attribute.String("class", be.Class.String()), attribute.String("reason", be.Reason.String())))
}

// FellBack counts a cloud session that ran on local Chromium, by the
// bounded name of why.
func (t *Metrics) FellBack(ctx context.Context, reason string) {
	t.fallbacks.Add(ctx, 1, metric.WithAttributes(attribute.String("provider", t.provider), attribute.String("reason", reason)))
}

// Queued records one opening's wait for its turn, by outcome (admitted,
// busy, gone).
func (t *Metrics) Queued(waited time.Duration, outcome string) {
	t.tabQueueWait.Record(context.Background(), waited.Seconds(), metric.WithAttributes(attribute.String("outcome", outcome)))
}

// SessionOpened counts a session open on route, and returns the step of
// its end that counts it closed.
func (t *Metrics) SessionOpened(ctx context.Context, route string) (closed func(context.Context) error) {
	opts := metric.WithAttributes(attribute.String("route", route))
	t.sessionsOpen.Add(ctx, 1, opts)
	return func(ctx context.Context) error { t.sessionsOpen.Add(ctx, -1, opts); return nil }
}

// Created records the time to create a session that ran on route, since
// started.
func (t *Metrics) Created(ctx context.Context, route string, fallback bool, started time.Time) {
	t.createDuration.Record(ctx, time.Since(started).Seconds(), metric.WithAttributes(
		attribute.String("route", route), attribute.Bool("fallback", fallback)))
}

// Ran records the time of the caller's run function on route, since
// started.
func (t *Metrics) Ran(ctx context.Context, route string, started time.Time) {
	t.callDuration.Record(ctx, time.Since(started).Seconds(), metric.WithAttributes(attribute.String("route", route)))
}

// Evicted counts an idle session ended for reason.
func (t *Metrics) Evicted(ctx context.Context, reason string) {
	t.evictions.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", reason)))
}

// StoreFailed counts a store operation that failed or timed out.
func (t *Metrics) StoreFailed(ctx context.Context, op string) {
	t.storeErrors.Add(ctx, 1, metric.WithAttributes(attribute.String("op", op)))
}

// ObserveBackoff reports the provider's back-off window, in seconds left
// (0: closed), until Stop. left reads it; false: no window is known, and
// nothing is reported.
func (t *Metrics) ObserveBackoff(left func(ctx context.Context) (time.Duration, bool)) {
	g, err := t.meter.Float64ObservableGauge(MetricBackoff, metric.WithUnit("s"),
		metric.WithDescription("Seconds left in the provider's back-off window (0 when it is closed)."))
	if err != nil {
		return
	}
	attrs := metric.WithAttributes(attribute.String("provider", t.provider))
	t.backoffReg, _ = t.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		d, ok := left(ctx)
		if !ok {
			return nil
		}
		o.ObserveFloat64(g, max(d, 0).Seconds(), attrs)
		return nil
	}, g)
}

// Stop unregisters the callbacks.
func (t *Metrics) Stop() {
	if t.backoffReg != nil {
		_ = t.backoffReg.Unregister()
	}
}
