package hybroute

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/config"
	"github.com/hybroute/hybroute/internal/floor"
	itel "github.com/hybroute/hybroute/internal/telemetry"
	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/route"
)

// telemetryProbe is a router's metrics and spans, read in memory.
type telemetryProbe struct {
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
}

func newTelemetryProbe() (*telemetryProbe, []Option) {
	p := &telemetryProbe{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	return p, []Option{
		WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(p.reader))),
		WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p.spans))),
	}
}

// value is the sum of the int counter (or up-down counter) name over the
// data points whose attributes include want (name=value pairs); for a
// histogram it is the count of recordings.
func (p *telemetryProbe) value(t *testing.T, name string, want ...string) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, p.reader.Collect(context.Background(), &rm))
	match := func(set attribute.Set) bool {
		for i := 0; i+1 < len(want); i += 2 {
			v, ok := set.Value(attribute.Key(want[i]))
			if !ok || v.String() != want[i+1] {
				return false
			}
		}
		return true
	}
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					if match(dp.Attributes) {
						n += dp.Value
					}
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					if match(dp.Attributes) {
						n += int64(dp.Count)
					}
				}
			}
		}
	}
	return n
}

// ended returns the ended spans called name.
func (p *telemetryProbe) ended(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range p.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func spanAttr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

// A refusal at plan time, a 429 outage with its fallback and window, a
// local call and a refused redirect, counted through the SDK's reader and
// recorded as spans, none of which carries a URL or the API key.
func TestTelemetryCountsDecisions(t *testing.T) {
	t.Parallel()
	probe, opts := newTelemetryProbe()
	w := newWorld(t, cloudtest.Browserbase, opts...)
	withClock(w.r)
	w.api.OnCreate(cloudtest.RateLimited("17"))
	ctx := testCtx(t)

	// A metadata URL: blocked before any session exists.
	_, err := w.r.Navigate(ctx, "a", "http://169.254.169.254/latest/meta-data/?token=secret", nil)
	require.ErrorIs(t, err, netpolicy.ErrMetadata)
	assert.EqualValues(t, 1, probe.value(t, itel.MetricBlocked, "reason", "metadata"))
	assert.EqualValues(t, 1, probe.value(t, itel.MetricPlans, "route", "cloud", "class", "metadata"))

	// The 429: one provider request, one fallback, and the window that
	// sends the next new key local without asking.
	res, err := w.r.Navigate(ctx, "a", w.site.url(publicHost, "/one"), nil)
	require.NoError(t, err)
	require.True(t, res.FallbackFromCloud)
	res, err = w.r.Navigate(ctx, "b", w.site.url(publicHost, "/two"), nil)
	require.NoError(t, err)
	require.True(t, res.FallbackFromCloud)
	assert.EqualValues(t, 1, probe.value(t, itel.MetricProviderRequests, "provider", "Browserbase", "operation", "create", "status", "429"))
	assert.EqualValues(t, 1, probe.value(t, itel.MetricFallbacks, "provider", "Browserbase", "reason", itel.FallbackRateLimited))
	assert.EqualValues(t, 1, probe.value(t, itel.MetricFallbacks, "provider", "Browserbase", "reason", itel.FallbackBackoffWindow))
	assert.EqualValues(t, 2, probe.value(t, itel.MetricPlans, "route", "cloud", "class", "public"))
	assert.EqualValues(t, 2, probe.value(t, itel.MetricSessionsOpen, "route", "local"))
	assert.EqualValues(t, 2, probe.value(t, itel.MetricSessionCreate, "route", "local", "fallback", "true"))
	assert.EqualValues(t, 2, probe.value(t, itel.MetricCallDuration, "route", "local"))
	assert.Positive(t, backoffSeconds(t, probe), "the window is open")

	// A private URL: the ::local sidecar.
	_, err = w.r.Navigate(ctx, "c", "http://127.0.0.1:"+w.site.port+"/here", nil)
	require.NoError(t, err)
	assert.EqualValues(t, 1, probe.value(t, itel.MetricPlans, "route", "local", "class", "private"))
	assert.EqualValues(t, 3, probe.value(t, itel.MetricSessionsOpen, "route", "local"))

	// A redirect from public to private, refused by the guard.
	_, err = w.r.Navigate(ctx, "a", w.site.url(publicHost, "/redirect-to/127.0.0.1:"+w.site.port+"/inside"), nil)
	require.ErrorIs(t, err, netpolicy.ErrPrivate)
	assert.EqualValues(t, 1, probe.value(t, itel.MetricRefusals, "source", "guard", "reason", "redirect_to_private"))

	// The spans: one per call, the plan, the session and the provider
	// request under it, with the route and the fallback.
	navs := probe.ended("hybroute.navigate")
	require.Len(t, navs, 5)
	assert.Equal(t, codes.Error, navs[0].Status().Code)
	assert.Equal(t, "blocked: metadata", navs[0].Status().Description)
	assert.Equal(t, "local", spanAttr(navs[1], "hybroute.route"))
	assert.Equal(t, "true", spanAttr(navs[1], "hybroute.fallback_from_cloud"))
	assert.Equal(t, "a", spanAttr(navs[1], "hybroute.cache_key"))
	creates := probe.ended("hybroute.session.create")
	require.Len(t, creates, 3)
	assert.Equal(t, itel.FallbackRateLimited, spanAttr(creates[0], "hybroute.fallback_reason"))
	assert.Equal(t, itel.FallbackBackoffWindow, spanAttr(creates[1], "hybroute.fallback_reason"))
	prov := probe.ended("hybroute.provider.create")
	require.Len(t, prov, 1)
	assert.Equal(t, "429", spanAttr(prov[0], "hybroute.provider.status"))
	assert.Equal(t, creates[0].SpanContext().SpanID(), prov[0].Parent().SpanID(), "the provider request is a child of the creation")
	assert.Equal(t, navs[1].SpanContext().TraceID(), prov[0].SpanContext().TraceID(), "in the call's trace")
	assert.Len(t, probe.ended("hybroute.plan"), 5)
	assert.Len(t, probe.ended("hybroute.run"), 4)
	for _, s := range probe.spans.Ended() {
		for _, kv := range s.Attributes() {
			v := kv.Value.String()
			assert.NotContains(t, v, "://", "span %s attribute %s carries a URL", s.Name(), kv.Key)
			assert.NotContains(t, v, testAPIKey)
			assert.NotContains(t, v, "secret")
		}
		assert.NotContains(t, s.Status().Description, "://")
	}

	// Close releases every session: none is counted open.
	require.NoError(t, w.r.Close())
	assert.EqualValues(t, 0, probe.value(t, itel.MetricSessionsOpen))
}

// backoffSeconds reads the back-off gauge.
func backoffSeconds(t *testing.T, p *telemetryProbe) float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, p.reader.Collect(context.Background(), &rm))
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if g, ok := m.Data.(metricdata.Gauge[float64]); ok && m.Name == itel.MetricBackoff {
				for _, dp := range g.DataPoints {
					return dp.Value
				}
			}
		}
	}
	return -1
}

// The no-op default costs the plan nothing: counting a plan on the global
// (no-op) providers allocates nothing.
func TestTelemetryPlanAllocatesNothingExtra(t *testing.T) {
	r := newRouter(t, &stubProvider{name: "Cloud"}, nil)
	ctx := context.Background()
	vs := []netpolicy.Verdict{{Class: netpolicy.ClassPublic}}
	allocs := testing.AllocsPerRun(100, func() { r.tel.CountPlan(ctx, int(route.Cloud), vs, netpolicy.ReasonMetadata) })
	assert.Zero(t, allocs)
	assert.False(t, strings.Contains(itel.PlanClassName(nil), "public"))
}

// The egress check counts what it refuses, by class and reason, and never
// a host.
func TestTelemetryCountsEgressRefusals(t *testing.T) {
	t.Parallel()
	probe, opts := newTelemetryProbe()
	cfg := config.Default()
	for _, o := range opts {
		o(&cfg)
	}
	pcfg := config.Default()
	pcfg.Resolver = staticResolver{}
	pol := newPolicy(&pcfg, false, newTelemetry(cfg.MeterProvider, cfg.TracerProvider, ""))
	e, err := floor.StartEgress(context.Background(), pol, loopbackDialer(t), slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	defer e.Close()
	for _, host := range []string{"169.254.169.254:80", "metadata.google.internal:80"} {
		c, err := net.Dial("tcp", e.Addr())
		require.NoError(t, err)
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\n", host)
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
		require.NoError(t, err)
		require.Equal(t, http.StatusForbidden, resp.StatusCode)
		_ = c.Close()
	}
	assert.EqualValues(t, 2, probe.value(t, itel.MetricRefusals, "source", "egress", "class", "metadata", "reason", "metadata"))
}
