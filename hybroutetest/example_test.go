package hybroutetest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/hybroutetest"
	"github.com/hybroute/hybroute/netpolicy"
)

// An agent's test: the morning the provider answers 429, the screenshot is
// taken all the same, on the local browser, and the Router says why. (In a
// test of your own, t is the test's *testing.T and ctx its t.Context().)
func Example_rateLimitedMorning() {
	t, ctx := exampleTest()
	defer t.finish()

	cloud := hybroutetest.NewCloud(t, hybroutetest.Browserbase)
	cloud.Answer(hybroutetest.RateLimited(17 * time.Second))
	site := hybroutetest.NewSite(t, nil)
	r := hybroutetest.NewRouter(t, cloud)

	var png []byte
	dash := site.URL("/dashboard")
	res, err := r.Navigate(ctx, "morning", dash, func(ctx context.Context, _ *hybroute.Call) error {
		err := chromedp.Do(ctx, chromedp.Navigate(dash))
		if err == nil {
			png, err = chromedp.Run(ctx, chromedp.CaptureScreenshot())
		}
		return err
	})
	fmt.Println(err, len(png) > 0, res.Route, site.FetchedBy("/dashboard"))
	fmt.Println(res.FallbackFromCloud, res.FallbackReason)
	fmt.Println("creates:", cloud.Creates())
	// Output:
	// <nil> true local local
	// true provider Browserbase: HTTP 429 Too Many Requests (retry after 17s)
	// creates: 1
}

// A provider that never answers costs a call no more than the create
// timeout: the call runs on the local browser.
func Example_hangingProvider() {
	t, ctx := exampleTest()
	defer t.finish()

	cloud := hybroutetest.NewCloud(t, hybroutetest.Steel)
	cloud.Answer(hybroutetest.Hang())
	site := hybroutetest.NewSite(t, nil)
	r := hybroutetest.NewRouter(t, cloud, hybroute.WithCreateTimeout(2*time.Second))

	res, err := r.Navigate(ctx, "job", site.URL("/report"), nil)
	fmt.Println(err, res.Route, site.FetchedBy("/report"))
	fmt.Println(res.FallbackFromCloud, res.FallbackReason)
	fmt.Println("creates:", cloud.Creates())
	// Output:
	// <nil> local local
	// true provider Steel: no answer in time
	// creates: 1
}

// A session that dies mid-call fails that call with ErrBrowserDead; the
// key's next call gets a new session from the provider.
func Example_sessionDiesMidCall() {
	t, ctx := exampleTest()
	defer t.finish()

	cloud := hybroutetest.NewCloud(t, hybroutetest.BrowserUse)
	site := hybroutetest.NewSite(t, nil)
	r := hybroutetest.NewRouter(t, cloud)

	report := site.URL("/report")
	_, err := r.Navigate(ctx, "job", report, func(ctx context.Context, _ *hybroute.Call) error {
		if err := chromedp.Do(ctx, chromedp.Navigate(report)); err != nil {
			return err
		}
		cloud.KillSessions()
		for { // the agent works on until the browser is gone
			if _, err := chromedp.Run(ctx, chromedp.Title()); err != nil {
				return err
			}
		}
	})
	fmt.Println(errors.Is(err, hybroute.ErrBrowserDead))

	res, err := r.Navigate(ctx, "job", report, nil)
	fmt.Println(err, res.Route, site.FetchedBy("/report"))
	fmt.Println("creates:", cloud.Creates())
	// Output:
	// true
	// <nil> cloud cloud
	// creates: 2
}

// The routing and the guard on loopback: a public page runs in the cloud,
// a private one on the local browser only, and the metadata service
// nowhere.
func Example_guard() {
	t, ctx := exampleTest()
	defer t.finish()

	cloud := hybroutetest.NewCloud(t, hybroutetest.Browserbase)
	site := hybroutetest.NewSite(t, nil)
	r := hybroutetest.NewRouter(t, cloud)

	res, err := r.Navigate(ctx, "s", site.URL("/shop"), nil)
	fmt.Println(err, res.Route, site.FetchedBy("/shop"))
	res, err = r.Navigate(ctx, "s", site.URLOn(hybroutetest.PrivateHost, "/payroll"), nil)
	fmt.Println(err, res.Route, site.FetchedBy("/payroll"))
	_, err = r.Navigate(ctx, "s", "http://"+hybroutetest.MetadataHost+"/computeMetadata/v1/", nil)
	fmt.Println(errors.Is(err, netpolicy.ErrMetadata))
	// Output:
	// <nil> cloud cloud
	// <nil> local local
	// true
}
