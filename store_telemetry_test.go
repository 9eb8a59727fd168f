package hybroute

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/hybroute/hybroute/internal/config"
	itel "github.com/hybroute/hybroute/internal/telemetry"
)

// Every operation on a shared store is a span, and every failed one is
// counted by operation once, by the decorator the fleet calls through.
func TestStoreTelemetryDecoratesTheSharedStore(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	p := &telemetryProbe{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	tel := newTelemetry(sdkmetric.NewMeterProvider(sdkmetric.WithReader(p.reader)),
		sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(p.spans)), "Cloud")
	cfg := config.Default()
	s := &flakyStore{}
	cfg.Store, cfg.ProviderConcurrency, cfg.StoreTimeout = s, 2, 100*time.Millisecond
	f := newFleet(&cfg, "Cloud", slog.New(slog.DiscardHandler), tel)

	a, ok := f.AcquireSlot(ctx)
	require.True(t, ok)
	require.False(t, a.Local())
	spans := p.ended("hybroute.store.acquire_slot")
	require.Len(t, spans, 1, "one span per store operation")
	assert.Equal(t, "Cloud", spanAttr(spans[0], "hybroute.provider"))
	assert.Equal(t, codes.Unset, spans[0].Status().Code)
	assert.Zero(t, p.value(t, itel.MetricStoreErrors), "an answered operation is no error")

	s.mode.Store(1)
	f.Release(ctx, a)
	assert.Equal(t, int64(1), p.value(t, itel.MetricStoreErrors, "op", "release_slot"))
	spans = p.ended("hybroute.store.release_slot")
	require.Len(t, spans, 1)
	assert.Equal(t, codes.Error, spans[0].Status().Code)
	assert.Equal(t, "error", spans[0].Status().Description, "a bounded kind, not the store's text")

	// The in-process store of a router without a shared one is not a
	// dependency: it is neither traced nor counted.
	own := config.Default()
	own.ProviderConcurrency = 2
	g := newFleet(&own, "Cloud", slog.New(slog.DiscardHandler), tel)
	b, ok := g.AcquireSlot(ctx)
	require.True(t, ok)
	g.Release(ctx, b)
	assert.Len(t, p.ended("hybroute.store.acquire_slot"), 1, "the in-process store made a span")
}
