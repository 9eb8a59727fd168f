// Command dashboard is the morning job hybroute is built for: screenshot a
// dashboard and post it to a channel, even while the cloud browser provider
// is rate-limiting session creation.
//
// Everything stays on this machine: the "cloud" is a stand-in API server on
// loopback that answers exactly what the real one did that morning (HTTP
// 429, RATE_LIMIT_EXCEEDED, retryAfter 17, limit 200), the dashboard is served
// on loopback too, and local Chromium takes the screenshot.
//
//	go run ./examples/dashboard -out dashboard.png
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/provider"
)

// dashboardHost stands for a public dashboard. The demo's resolver calls it
// public (as DNS would for a real one) and Chromium is told to find it on
// loopback, where this program serves it.
const dashboardHost = "dashboard.example"

func main() {
	out := flag.String("out", "dashboard.png", "where to write the screenshot (the 'channel')")
	flag.Parse()
	if err := run(*out); err != nil {
		log.Fatal(err)
	}
}

func run(out string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	dash, err := serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, dashboardHTML)
	}))
	if err != nil {
		return err
	}
	api, err := serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "17")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"error":"RATE_LIMIT_EXCEEDED","retryAfter":17,"limit":200}`)
	}))
	if err != nil {
		return err
	}

	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	router, err := hybroute.New(
		provider.NewBrowserbase("bb_demo_key", "demo-project", provider.WithBaseURL("http://"+api)),
		hybroute.WithLogger(logger),
		hybroute.WithResolver(demoResolver{}),
		// Local Chromium connects through hybroute's egress check, which
		// resolves dashboard.example with demoResolver (a public address)
		// and then dials what it decided on. The demo serves that
		// "public" dashboard on loopback, so the dialer sends the
		// stand-in address there, and refuses anything that is not
		// loopback: the demo sends no traffic off this machine.
		hybroute.WithEgressDialer(loopbackOnly),
		hybroute.WithChromiumFlags(map[string]any{"host-resolver-rules": "MAP " + dashboardHost + " 127.0.0.1"}),
	)
	if err != nil {
		return err
	}
	defer router.Close()

	_, port, _ := net.SplitHostPort(dash)
	url := "http://" + dashboardHost + ":" + port + "/"
	code := fmt.Sprintf(`await page.goto(%q); await page.screenshot({path: "dashboard.png"})`, url)

	fmt.Println("The plans for a few calls:")
	for _, c := range []string{code, `fetch("http://localhost:3000/api")`, `fetch("http://169.254.169.254/latest/meta-data/")`, `document.title`} {
		p, err := router.Plan(ctx, "demo-plans", c)
		if err != nil {
			fmt.Printf("  %-60.60q %v\n", c, err)
			continue
		}
		fmt.Printf("  %-60.60q route=%s key=%s\n", c, p.Route, p.CacheKey)
	}

	fmt.Println("\nThe morning job:")
	start := time.Now()
	var png []byte
	res, err := router.Exec(ctx, "morning-dashboard", code, func(ctx context.Context, call *hybroute.Call) error {
		if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("#chart"))); err != nil {
			return err
		}
		png, err = chromedp.Run(ctx, chromedp.CaptureScreenshot())
		return err
	})
	if err != nil {
		return fmt.Errorf("the morning job failed: %w", err)
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		return err
	}
	fmt.Printf("  posted %s (%d bytes) in %v\n", out, len(png), time.Since(start).Round(time.Millisecond))
	fmt.Printf("  route=%s key=%s fallback_from_cloud=%v landed=%s\n", res.Route, res.CacheKey, res.FallbackFromCloud, res.LandedURL)

	// A second job inside the Retry-After window does not ask the provider
	// again and logs nothing new.
	start = time.Now()
	res, err = router.Navigate(ctx, "evening-dashboard", url, nil)
	if err != nil {
		return err
	}
	fmt.Printf("  second session, straight to local: fallback_from_cloud=%v in %v\n", res.FallbackFromCloud, time.Since(start).Round(time.Millisecond))
	return nil
}

// serve serves h on a loopback port and returns host:port.
func serve(h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go func() { _ = http.Serve(ln, h) }()
	return ln.Addr().String(), nil
}

// dashboardAddr is the public address demoResolver gives the dashboard.
var dashboardAddr = netip.MustParseAddr("93.184.215.14")

// loopbackOnly dials the dashboard's stand-in public address on loopback
// (same port) and any loopback address as it is; it refuses the rest.
func loopbackOnly(ctx context.Context, network, addr string) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, err
	}
	switch a := ap.Addr().Unmap(); {
	case a == dashboardAddr:
		addr = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), ap.Port()).String()
	case !a.IsLoopback():
		return nil, fmt.Errorf("demo: refusing to dial %s: the demo stays on loopback", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// demoResolver answers as public DNS would for a public dashboard, and
// "not found" for everything else.
type demoResolver struct{}

func (demoResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if host == dashboardHost {
		return []netip.Addr{dashboardAddr}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

const dashboardHTML = `<!doctype html><html><head><title>Revenue dashboard</title>
<style>body{font:16px sans-serif;margin:24px;background:#fafafa}#chart{display:flex;align-items:flex-end;gap:12px;height:220px}
#chart div{width:48px;background:#3b82f6;color:#fff;text-align:center}</style></head>
<body><h1>Revenue, last 7 days</h1><div id="chart">
<div style="height:40%">Mon</div><div style="height:55%">Tue</div><div style="height:48%">Wed</div>
<div style="height:70%">Thu</div><div style="height:90%">Fri</div><div style="height:35%">Sat</div><div style="height:30%">Sun</div>
</div></body></html>`
