package hybroute

import (
	"context"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/hybroute/hybroute/internal/browsertab"
	"github.com/hybroute/hybroute/internal/chromium"
	"github.com/hybroute/hybroute/internal/teardown"
	"github.com/hybroute/hybroute/internal/testlog"
	"github.com/hybroute/hybroute/route"
)

// BenchmarkNewKeySideBySide is the cost of a new session key, side by side
// in one process so that the machine's load weighs on all alike: each
// iteration opens newKeysPerOp new keys, each loading one loopback page,
// with the router on a warm sidecar, with plain chromedp in a new browser
// context, and with plain chromedp in a new tab, interleaved (run it with
// -benchtime 4x for 20 keys). It reports each one's p50 and the router's
// ratio to both, and where the router's time goes: from its spans (the
// session's creation, the run) and from the same steps done by hand on a
// key of their own (the session's tab, the guard's enabling, the page).
func BenchmarkNewKeySideBySide(b *testing.B) {
	spans := tracetest.NewSpanRecorder()
	requireChromium(b)
	r, s := newRouter(b, nil, &testlog.Buffer{},
		WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)))), testSite(b)
	// Every step has a deadline of its own: on a loaded machine a stuck
	// step fails the benchmark instead of holding it for good.
	step := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), 2*time.Minute)
	}
	ctx, cancel := step()
	require.NoError(b, r.Warm(ctx))
	_, err := r.Navigate(ctx, "warm", s.URL+"/warm", nil)
	require.NoError(b, err)
	cancel()

	path, err := chromium.Find("")
	require.NoError(b, err)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.Flag("no-sandbox", os.Geteuid() == 0))...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	// The browser starts on bctx itself (its first run's context is its
	// lifetime); only the warm-up navigation is bounded.
	require.NoError(b, chromedp.Do(bctx))
	ctx, cancel = step()
	wctx, cancelWarm := browsertab.Bind(bctx, ctx)
	require.NoError(b, chromedp.Do(wctx, chromedp.Navigate(s.URL+"/warm")))
	cancelWarm()
	cancel()

	plain := func(opts ...chromedp.ContextOption) time.Duration {
		ctx, cancel := step()
		defer cancel()
		start := time.Now()
		tctx, stop := chromedp.NewContext(bctx, opts...)
		defer stop()
		dctx, cancelDL := browsertab.Bind(tctx, ctx)
		defer cancelDL()
		require.NoError(b, chromedp.Do(dctx, chromedp.Navigate(s.URL+"/p")))
		return time.Since(start)
	}
	var router, ctxs, tabs, open, guard, page []time.Duration
	ready := 0 // router keys that found the spare ready
	for i := 0; b.Loop(); i++ {
		for k := range newKeysPerOp {
			key := "k" + strconv.Itoa(i) + "-" + strconv.Itoa(k)
			ctx, cancel := step()
			// The router's parts, on a key of their own.
			start := time.Now()
			tab, err := r.side.Open(ctx, key+"-parts")
			require.NoError(b, err)
			open = append(open, time.Since(start))
			e := &entry{key: key, route: route.Local, h: browsertab.NewHandle(tab)}
			e.ending.Add(teardown.Tab, func(context.Context) error { return tab.Close() })
			start = time.Now()
			g, err := r.enableGuard(e)
			require.NoError(b, err)
			guard = append(guard, time.Since(start))
			done := make(chan struct{})
			go func() { defer close(done); g() }()
			start = time.Now()
			pctx, cancelPage := browsertab.Bind(tab.Context(), ctx)
			require.NoError(b, chromedp.Do(pctx, chromedp.Navigate(s.URL+"/p")))
			cancelPage()
			tab.Settled()
			page = append(page, time.Since(start))
			require.NoError(b, e.end())
			select {
			case <-done:
			case <-ctx.Done():
				b.Fatal("the guard's waiter did not end with its tab")
			}

			ctxs = append(ctxs, plain(chromedp.WithNewBrowserContext()))
			tabs = append(tabs, plain())

			// Last, so that the spare the parts took has had the time
			// of the two plain keys to come back: a warm sidecar.
			if r.side.SpareState().Ready {
				ready++
			}
			start = time.Now()
			_, err = r.Navigate(ctx, key, s.URL+"/p", nil)
			router = append(router, time.Since(start))
			require.NoError(b, err)
			require.NoError(b, r.Release(ctx, key))
			cancel()
		}
	}
	b.StopTimer()
	bySpan := map[string][]time.Duration{}
	for _, sp := range spans.Ended() {
		bySpan[sp.Name()] = append(bySpan[sp.Name()], sp.EndTime().Sub(sp.StartTime()))
	}
	p50 := func(ds []time.Duration) float64 {
		if len(ds) == 0 {
			return 0
		}
		ds = slices.Clone(ds)
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Microseconds()) / 1000
	}
	b.ReportMetric(p50(router), "router-p50-ms")
	b.ReportMetric(p50(ctxs), "chromedp-context-p50-ms")
	b.ReportMetric(p50(tabs), "chromedp-tab-p50-ms")
	b.ReportMetric(p50(router)/p50(ctxs), "ratio-to-context")
	b.ReportMetric(p50(router)/p50(tabs), "ratio-to-tab")
	b.ReportMetric(p50(bySpan["hybroute.session.create"]), "create-p50-ms")
	b.ReportMetric(p50(bySpan["hybroute.run"]), "run-p50-ms")
	b.ReportMetric(p50(open), "open-p50-ms")
	b.ReportMetric(p50(guard), "guard-p50-ms")
	b.ReportMetric(p50(page), "page-p50-ms")
	b.ReportMetric(float64(ready)/float64(len(router)), "spare-ready-frac")
}

// newKeysPerOp is how many new keys one iteration of
// BenchmarkNewKeySideBySide opens with each of the three: few, so that an
// iteration ends on a loaded machine and -benchtime sets the total.
const newKeysPerOp = 5
