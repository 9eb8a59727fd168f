package hybroute_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"

	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute"
)

// The README's example, kept compiling here. It is not run: it would call
// the real Browserbase API.
func Example() {
	ctx := context.Background()
	router, err := hybroute.New(
		hybroute.NewBrowserbase(os.Getenv("BROWSERBASE_API_KEY"), os.Getenv("BROWSERBASE_PROJECT_ID")),
		hybroute.WithLogger(slog.Default()),
	)
	if err != nil {
		return
	}
	defer router.Close() // releases every session; no Chromium outlives it

	url := "https://dashboard.example.com/"
	var png []byte
	res, err := router.Exec(ctx, "morning-dashboard", `await page.goto("`+url+`")`,
		func(ctx context.Context) error { // ctx is bound to the session's tab
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

func (p *restOnly) CreateSession(_ context.Context, key string) (*hybroute.Session, error) {
	return &hybroute.Session{Key: key, ID: fmt.Sprintf("rest-%d", p.n.Add(1))}, nil
}

func (p *restOnly) ReleaseSession(context.Context, *hybroute.Session) error { return nil }

// A provider whose session has no CDP endpoint (and did not fall back) fails
// the call with the original message: nothing pretends the call ran, and
// nothing is cached, so the next call asks the provider again.
func Example_restOnlyProvider() {
	router, _ := hybroute.New(&restOnly{name: "AcmeREST"})
	defer router.Close()
	_, err := router.Exec(context.Background(), "s", `document.title`, func(context.Context) error {
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
