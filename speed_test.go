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
)

// BenchmarkNewKeySideBySide is the cost of a new session key, side by side
// in one process so that the machine's load weighs on all alike: each round
// opens 20 new keys, each loading one loopback page, with the router on a
// warm sidecar, with plain chromedp in a new browser context, and with
// plain chromedp in a new tab, interleaved. It reports each one's p50 and
// the router's ratio to both, and where the router's time goes: the
// session (the spare tab, or a new one), the guard's enabling, the page.
func BenchmarkNewKeySideBySide(b *testing.B) {
	r, s := newLocalRouter(b, &logBuffer{})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute) // a loaded machine
	defer cancel()
	require.NoError(b, r.Warm(ctx))
	_, err := r.Navigate(ctx, "warm", s.URL+"/warm")
	require.NoError(b, err)

	path, err := findChromium(&config{})
	require.NoError(b, err)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.Flag("no-sandbox", os.Geteuid() == 0))...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	require.NoError(b, chromedp.Do(bctx, chromedp.Navigate(s.URL+"/warm")))

	plain := func(opts ...chromedp.ContextOption) time.Duration {
		start := time.Now()
		tctx, cancel := chromedp.NewContext(bctx, opts...)
		defer cancel()
		require.NoError(b, chromedp.Do(tctx, chromedp.Navigate(s.URL+"/p")))
		return time.Since(start)
	}
	var router, ctxs, tabs, open, guard, page []time.Duration
	const keys = 20
	for i := 0; b.Loop(); i++ {
		for k := range keys {
			key := "k" + strconv.Itoa(i) + "-" + strconv.Itoa(k)
			start := time.Now()
			_, err := r.Navigate(ctx, key, s.URL+"/p")
			router = append(router, time.Since(start))
			require.NoError(b, err)
			require.NoError(b, r.Release(ctx, key))

			ctxs = append(ctxs, plain(chromedp.WithNewBrowserContext()))
			tabs = append(tabs, plain())

			// The router's parts, on a key of their own.
			start = time.Now()
			tab, err := r.side.open(ctx, key+"-parts")
			require.NoError(b, err)
			open = append(open, time.Since(start))
			e := &entry{key: key, route: RouteLocal, tab: tab, release: func(context.Context) error { return tab.close() }}
			start = time.Now()
			g, err := r.enableGuard(e)
			require.NoError(b, err)
			guard = append(guard, time.Since(start))
			done := make(chan struct{})
			go func() { defer close(done); g() }()
			start = time.Now()
			require.NoError(b, chromedp.Do(tab.context(), chromedp.Navigate(s.URL+"/p")))
			page = append(page, time.Since(start))
			require.NoError(b, e.end())
			<-done
		}
	}
	p50 := func(ds []time.Duration) float64 {
		ds = slices.Clone(ds)
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Microseconds()) / 1000
	}
	b.ReportMetric(p50(router), "router-p50-ms")
	b.ReportMetric(p50(ctxs), "chromedp-context-p50-ms")
	b.ReportMetric(p50(tabs), "chromedp-tab-p50-ms")
	b.ReportMetric(p50(router)/p50(ctxs), "ratio-to-context")
	b.ReportMetric(p50(router)/p50(tabs), "ratio-to-tab")
	b.ReportMetric(p50(open), "open-p50-ms")
	b.ReportMetric(p50(guard), "guard-p50-ms")
	b.ReportMetric(p50(page), "page-p50-ms")
}
