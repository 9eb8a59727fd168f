package hybroute_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"sync/atomic"

	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/provider"
)

// The README's example, kept compiling here: the morning dashboard
// screenshot, on the cloud browser or, when the provider fails, on the
// local Chromium. It is not run: it would call the real Browserbase API.
func Example() {
	ctx := context.Background()
	router, err := hybroute.New(
		provider.NewBrowserbase(os.Getenv("BROWSERBASE_API_KEY"), os.Getenv("BROWSERBASE_PROJECT_ID")),
		hybroute.WithLogger(slog.Default()),
	)
	if err != nil {
		return
	}
	defer router.Close() // releases every session; no Chromium outlives it

	url := "https://dashboard.example.com/"
	var png []byte
	res, err := router.Exec(ctx, "morning-dashboard", `await page.goto("`+url+`")`,
		func(ctx context.Context, call *hybroute.Call) error { // ctx is bound to the session's tab
			if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
				return err
			}
			png, err = chromedp.Run(ctx, chromedp.CaptureScreenshot())
			return err
		})
	_, _, _ = res, png, err
}

// restOnly is a provider for a browser service that exposes a REST API
// and no CDP endpoint: its sessions come back with an ID and no CDPURL.
// Any type with Name, CreateSession and ReleaseSession is a provider.
type restOnly struct {
	name string
	n    atomic.Int64
}

func (p *restOnly) Name() string { return p.name }

func (p *restOnly) CreateSession(_ context.Context, key string) (*provider.Session, error) {
	return &provider.Session{Key: key, ID: fmt.Sprintf("rest-%d", p.n.Add(1))}, nil
}

func (p *restOnly) ReleaseSession(context.Context, *provider.Session) error { return nil }

// A provider whose session has no CDP endpoint (and did not fall back) fails
// the call with the original message: nothing pretends the call ran, and
// nothing is cached, so the next call asks the provider again.
func Example_restOnlyProvider() {
	router, _ := hybroute.New(&restOnly{name: "AcmeREST"})
	defer router.Close()
	_, err := router.Exec(context.Background(), "s", `document.title`, func(context.Context, *hybroute.Call) error {
		panic("not called: there is no browser to run on")
	})
	fmt.Println(errors.Is(err, hybroute.ErrNoCDPEndpoint))
	fmt.Println(err)
	// Output:
	// true
	// hybroute: session "s": Cloud browser provider AcmeREST returned no CDP endpoint, so Browser Use mode cannot drive it. Switch to the built-in browser tools for this provider.
}

// Plan is the decision alone: no browser is started.
func ExampleRouter_Plan() {
	router, _ := hybroute.New(&restOnly{name: "Cloud"})
	defer router.Close()
	p, err := router.Plan(context.Background(), "s", `fetch("http://localhost:3000/api")`)
	fmt.Println(p.Route, p.CacheKey, err)
	_, err = router.Plan(context.Background(), "s", `fetch("http://0xa9fea9fe/latest/meta-data/")`)
	fmt.Println(err)
	// Output:
	// local s::local <nil>
	// hybroute: blocked (metadata): URL targets a cloud metadata endpoint: "http://0xa9fea9fe/latest/meta-data/"
}

// Navigate opens a URL in the browser its verdict picks: a public page on
// the cloud browser, localhost on the local Chromium. A run of the
// caller's own navigates and then drives the tab. Not run here: it starts
// a local Chromium.
func ExampleRouter_Navigate() {
	ctx := context.Background()
	router, err := hybroute.New(nil) // no provider: every call runs on the local Chromium
	if err != nil {
		return
	}
	defer router.Close()

	var title string
	u := "http://localhost:3000/"
	res, err := router.Navigate(ctx, "dev", u, func(ctx context.Context, call *hybroute.Call) error {
		if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
			return err
		}
		title, err = chromedp.Run(ctx, chromedp.Title())
		return err
	})
	if err != nil {
		return
	}
	fmt.Println(res.Route, res.LandedURL, title)
}

// Exec plans a call from its code before any browser sees it: a literal
// that names a cloud metadata endpoint, in any spelling Chromium reads,
// refuses the whole call, and run is never called.
func ExampleRouter_Exec() {
	router, _ := hybroute.New(&restOnly{name: "Cloud"})
	defer router.Close()
	code := `fetch("http://0251.0376.0251.0376/latest/meta-data/iam/")` // 169.254.169.254 in octal
	_, err := router.Exec(context.Background(), "s", code, func(context.Context, *hybroute.Call) error {
		panic("not called: the call is refused before it runs")
	})
	fmt.Println(errors.Is(err, netpolicy.ErrMetadata))
	var blocked *netpolicy.BlockedError
	if errors.As(err, &blocked) {
		fmt.Println(blocked.Reason)
	}
	// Output:
	// true
	// metadata
}

// publicDNS answers every name with one public address, so that the
// examples that name hosts run without asking the network. A Router asks
// its Resolver (net.DefaultResolver by default) for the names a call uses.
type publicDNS struct{}

func (publicDNS) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
}

// A navigation picks the browser: a private address runs on the local
// Chromium under the session's local cache key, a public one on the
// cloud. Plan with Navigation is Navigate's plan: it starts nothing and
// remembers nothing.
func ExampleRouter_Plan_navigation() {
	router, _ := hybroute.New(&restOnly{name: "Cloud"}, hybroute.WithResolver(publicDNS{}))
	defer router.Close()
	ctx := context.Background()
	for _, u := range []string{"http://192.168.1.9/", "http://2130706433:3000/", "https://example.com/"} {
		p, err := router.Plan(ctx, "s", u, hybroute.Navigation())
		fmt.Println(u, "→", p.Route, p.CacheKey, err)
	}
	// Output:
	// http://192.168.1.9/ → local s::local <nil>
	// http://2130706433:3000/ → local s::local <nil>
	// https://example.com/ → cloud s <nil>
}

// rateLimited is a provider whose every session creation is refused with
// HTTP 429, as a cloud provider's is when an account is over its limit.
type rateLimited struct{}

func (rateLimited) Name() string { return "Busy" }

func (rateLimited) CreateSession(context.Context, string) (*provider.Session, error) {
	return nil, &provider.Error{Provider: "Busy", Op: "create", Status: 429, Code: "RATE_LIMIT_EXCEEDED"}
}

func (rateLimited) ReleaseSession(context.Context, *provider.Session) error { return nil }

// With the fallback on (the default), a call whose cloud session the
// provider refuses runs on the local Chromium, and its Result says so and
// why. Not run here: it starts a local Chromium.
func Example_fallback() {
	ctx := context.Background()
	router, err := hybroute.New(rateLimited{})
	if err != nil {
		return
	}
	defer router.Close()
	res, err := router.Navigate(ctx, "morning-dashboard", "https://example.com/", nil)
	if err != nil {
		return
	}
	fmt.Println(res.Route, res.FallbackFromCloud, res.FallbackReason)
	// local true provider Busy: HTTP 429 RATE_LIMIT_EXCEEDED
}

// With the fallback off, the provider's refusal is the call's error,
// matched by its sentinel, and no browser is started.
func ExampleWithFallback() {
	router, _ := hybroute.New(rateLimited{}, hybroute.WithFallback(false), hybroute.WithResolver(publicDNS{}))
	defer router.Close()
	_, err := router.Navigate(context.Background(), "s", "https://example.com/", nil)
	fmt.Println(errors.Is(err, provider.ErrRateLimited))
	// Output:
	// true
}
