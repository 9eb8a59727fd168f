package hybroute_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

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

// Plan is the decision alone: no browser is started.
func ExampleRouter_Plan() {
	router, _ := hybroute.New(hybroute.RESTOnly("Cloud"))
	defer router.Close()
	p, err := router.Plan(context.Background(), "s", `fetch("http://localhost:3000/api")`)
	fmt.Println(p.Route, p.CacheKey, err)
	_, err = router.Plan(context.Background(), "s", `fetch("http://0xa9fea9fe/latest/meta-data/")`)
	fmt.Println(err)
	// Output:
	// local s::local <nil>
	// hybroute: blocked (metadata): URL targets a cloud metadata endpoint: "http://0xa9fea9fe/latest/meta-data/"
}
