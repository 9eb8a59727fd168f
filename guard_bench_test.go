package hybroute

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute/internal/cloudtest"
)

// BenchmarkGuardCost measures what the guard on every target costs a page
// load and a popup on a remote browser, with the guard off and on, in one
// process against one Chromium. "page" is a document with five images;
// "popup" is a page opening a same-origin popup and waiting for its load
// (the popup is auto-attached paused, set up and resumed).
func BenchmarkGuardCost(b *testing.B) {
	requireChromium(b)
	s := newSite(b, func(mux *http.ServeMux, s *site) {
		mux.HandleFunc("/bench-page", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<!doctype html><title>bench</title>`)
			for i := range 5 {
				fmt.Fprintf(w, `<img src="/img%d?%s">`, i, r.URL.RawQuery)
			}
		})
	})
	cloud := cloudtest.LaunchChromium(b)
	cfg := defaultConfig()
	cfg.allowPrivate = true
	cfg.resolver = testResolver
	pol := newPolicy(&cfg, false)
	for _, guard := range []string{"off", "on"} {
		var g *browserGuard
		if guard == "on" {
			g = newBrowserGuard(&cfg, pol, nil, onRemote)
		}
		ctx := testCtx(b)
		rt, err := connectRemote(ctx, cloud.WSURL, nil, "the benchmark browser", g)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		b.Run("page/guard-"+guard, func(b *testing.B) {
			for b.Loop() {
				n++
				if err := chromedp.Do(rt.ctx, chromedp.Navigate(fmt.Sprintf("%s/bench-page?%d", s.URL, n))); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("popup/guard-"+guard, func(b *testing.B) {
			if err := chromedp.Do(rt.ctx, chromedp.Navigate(s.URL+"/opener")); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				_, err := chromedp.Run(rt.ctx, chromedp.Evaluate[string](`new Promise(r => {
					const w = window.open("/popup-page");
					w.addEventListener("load", () => { w.close(); r("loaded"); });
				})`, chromedp.EvalAwaitPromise, asUserGesture))
				if err != nil {
					b.Fatal(err)
				}
			}
		})
		_ = rt.close(context.Background())
	}
}
