package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent"
	"github.com/hybroute/hybroute/internal/agenttest"
	"github.com/hybroute/hybroute/internal/testenv"
)

// benchToolset is a toolset on a warm local tab showing path of the site.
func benchToolset(b *testing.B, path string) (*agent.Toolset, context.Context) {
	ts, _, ctx := benchToolsetRouter(b, path)
	return ts, ctx
}

func benchToolsetRouter(b *testing.B, path string) (*agent.Toolset, *hybroute.Router, context.Context) {
	b.Helper()
	site := agenttest.NewSite(b)
	r := agenttest.NewRouter(b, nil)
	ts := agent.New(r)
	b.Cleanup(func() { _ = ts.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	b.Cleanup(cancel)
	res, err := ts.Call(ctx, "bench", agent.ToolNavigate, json.RawMessage(`{"url":"`+site.URL("127.0.0.1", path)+`"}`))
	if err != nil || res.IsError {
		b.Fatalf("navigate: %v %s", err, res.Text)
	}
	return ts, r, ctx
}

// bareTab is a plain chromedp tab on a Chromium of its own (same binary, no
// router, no toolset) showing path of the site: the baseline.
func bareTab(b *testing.B, path string) context.Context {
	b.Helper()
	testenv.RequireChromium(b)
	site := agenttest.NewSite(b)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.Flag("no-sandbox", os.Geteuid() == 0))
	if p := os.Getenv("CHROMIUM"); p != "" {
		opts = append(opts, chromedp.ExecPath(p))
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	b.Cleanup(cancelA)
	ctx, cancel := chromedp.NewContext(actx)
	b.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.Navigate(site.URL("127.0.0.1", path))); err != nil {
		b.Fatal(err)
	}
	return ctx
}

// BenchmarkExecBare is the baseline: one Runtime.evaluate on a plain tab.
func BenchmarkExecBare(b *testing.B) {
	ctx := bareTab(b, "/")
	for b.Loop() {
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[int]("1+1")); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExecRouter is the same evaluation through Router.Exec alone
// (plan, session lookup, landed-URL check), on the toolset's tab.
func BenchmarkExecRouter(b *testing.B) {
	_, r, ctx := benchToolsetRouter(b, "/")
	run := func(ctx context.Context, _ *hybroute.Call) error {
		_, err := chromedp.Run(ctx, chromedp.Evaluate[int]("1+1"))
		return err
	}
	for b.Loop() {
		if _, err := r.Exec(ctx, "bench", "", run); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExecTool is browser_exec of the same expression: the Router's
// plan and landed-URL check, the page-URL re-check and title read, the
// compile check, the evaluation, the navigation watch.
func BenchmarkExecTool(b *testing.B) {
	ts, ctx := benchToolset(b, "/")
	args := json.RawMessage(`{"code":"1+1"}`)
	for b.Loop() {
		res, err := ts.Call(ctx, "bench", agent.ToolExec, args)
		if err != nil || res.IsError {
			b.Fatalf("%v %s", err, res.Text)
		}
	}
}

// BenchmarkSnapshotBare is the baseline of a snapshot: the AX tree alone.
func BenchmarkSnapshotBare(b *testing.B) {
	for _, c := range snapshotPages {
		b.Run(c.name, func(b *testing.B) {
			ctx := bareTab(b, c.path)
			for b.Loop() {
				if _, err := chromedp.Call(ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

var snapshotPages = []struct{ name, path string }{
	{"shop", "/"},                  // a typical small page: a heading, a form, a few controls
	{"catalogue300", "/big?n=300"}, // 300 list items with a link and a button each
}

// BenchmarkSnapshotTool is browser_snapshot, with the size of its text.
func BenchmarkSnapshotTool(b *testing.B) {
	for _, c := range snapshotPages {
		b.Run(c.name, func(b *testing.B) {
			ts, ctx := benchToolset(b, c.path)
			var size int
			for b.Loop() {
				res, err := ts.Call(ctx, "bench", agent.ToolSnapshot, nil)
				if err != nil || res.IsError {
					b.Fatalf("%v %s", err, res.Text)
				}
				size = len(res.Text)
			}
			b.ReportMetric(float64(size), "bytes/snapshot")
		})
	}
}

// viewportTab is a plain tab on the site's root with the toolset's
// 1280x720 viewport emulated, as the Router sets it.
func viewportTab(b *testing.B) context.Context {
	ctx := bareTab(b, "/")
	if _, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: hybroute.DefaultViewportWidth, Height: hybroute.DefaultViewportHeight, DeviceScaleFactor: 1,
	}); err != nil {
		b.Fatal(err)
	}
	return ctx
}

// BenchmarkScreenshotBare is the baseline of a screenshot: one
// Page.captureScreenshot of the viewport as PNG on a plain tab, emulating
// the toolset's 1280x720 viewport as the Router does.
func BenchmarkScreenshotBare(b *testing.B) {
	ctx := viewportTab(b)
	for b.Loop() {
		if _, err := chromedp.Call(ctx, page.CaptureScreenshot, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScreenshotAfterFrame is the capture of BenchmarkScreenshotBare
// asked for after 150 ms without a frame, and asked for right after the
// page ran one (as the settle that ends a click, a keystroke or a script
// leaves it): Chromium captures in the frame after the request, a vsync
// interval later when the page has just had one.
func BenchmarkScreenshotAfterFrame(b *testing.B) {
	for _, c := range []struct {
		name  string
		frame bool
	}{{"idle", false}, {"after-frame", true}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := viewportTab(b)
			for b.Loop() {
				b.StopTimer()
				time.Sleep(150 * time.Millisecond)
				if c.frame {
					if _, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{
						Expression: "new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)))", AwaitPromise: new(true),
					}); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				if _, err := chromedp.Call(ctx, page.CaptureScreenshot, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng, OptimizeForSpeed: new(true)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkScreenshotTool is browser_screenshot of the 1280x720 viewport.
func BenchmarkScreenshotTool(b *testing.B) {
	ts, ctx := benchToolset(b, "/")
	for b.Loop() {
		res, err := ts.Call(ctx, "bench", agent.ToolScreenshot, nil)
		if err != nil || res.IsError {
			b.Fatalf("%v %s", err, res.Text)
		}
	}
}

// BenchmarkSnapshotRouter is the AX tree alone through Router.Exec on the
// toolset's tab: what the toolset adds to a snapshot is the difference to
// BenchmarkSnapshotTool.
func BenchmarkSnapshotRouter(b *testing.B) {
	_, r, ctx := benchToolsetRouter(b, "/")
	run := func(ctx context.Context, _ *hybroute.Call) error {
		_, err := chromedp.Call(ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
		return err
	}
	for b.Loop() {
		if _, err := r.Exec(ctx, "bench", "", run); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSnapshotFreshPage is the first snapshot of a page just opened,
// as an agent takes it (and as make bench-anchors measures it): the
// navigation is not timed, the snapshot is.
func BenchmarkSnapshotFreshPage(b *testing.B) {
	for _, c := range snapshotPages {
		b.Run(c.name, func(b *testing.B) {
			site := agenttest.NewSite(b)
			ts, ctx := benchToolset(b, c.path)
			nav := json.RawMessage(`{"url":"` + site.URL("127.0.0.1", c.path) + `"}`)
			for b.Loop() {
				b.StopTimer()
				if res, err := ts.Call(ctx, "bench", agent.ToolNavigate, nav); err != nil || res.IsError {
					b.Fatalf("navigate: %v %s", err, res.Text)
				}
				b.StartTimer()
				if res, err := ts.Call(ctx, "bench", agent.ToolSnapshot, nil); err != nil || res.IsError {
					b.Fatalf("%v %s", err, res.Text)
				}
			}
		})
	}
}
