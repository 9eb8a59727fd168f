package hybroute

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
)

// A call that wedges its tab ends at its deadline; the next call on the
// key gets a fresh tab in the same browser context, says so, and the
// cookies set before are still there. On both routes. The wedge re-arms
// itself (a timer that spins again): a plain while(true){} is terminated
// when its call ends (Handle.Quiet, TestAHangUpQuietsThePage) and wedges
// nothing.
func TestWedgedTabIsReplaced(t *testing.T) {
	t.Parallel()
	for _, route := range []string{"local", "cloud"} {
		t.Run(route, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, cloudtest.CDP)
			host := "localhost"
			if route == "cloud" {
				host = publicHost
			}
			// Generous: two browsers on a shared machine, and a probe.
			ctx, cancelAll := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancelAll()
			_, err := w.r.Navigate(ctx, "w", w.site.url(host, "/before"), nil)
			require.NoError(t, err)
			_, err = w.r.Exec(ctx, "w", "", func(ctx context.Context, call *Call) error {
				_, err := evalString(ctx, `document.cookie = "kept=yes; max-age=600"; "ok"`)
				return err
			})
			require.NoError(t, err)

			short, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, err = w.r.Exec(short, "w", "", func(ctx context.Context, call *Call) error {
				_, err := evalString(ctx, `setInterval(() => { for (;;) {} }, 0); while (true) {}`)
				return err
			})
			cancel()
			require.ErrorIs(t, err, context.DeadlineExceeded)

			res, err := w.r.Navigate(ctx, "w", w.site.url(host, "/after"), nil)
			require.NoError(t, err, "the next call on the key works; logs: %s", w.logs)
			assert.True(t, res.TabReplaced)
			assert.Equal(t, w.site.url(host, "/after"), res.LandedURL)
			var cookie string
			res, err = w.r.Exec(ctx, "w", "", func(ctx context.Context, call *Call) (err error) {
				cookie, err = evalString(ctx, `document.cookie`)
				return err
			})
			require.NoError(t, err)
			assert.False(t, res.TabReplaced, "once")
			assert.Equal(t, "kept=yes", cookie, "the browser context, with its cookies, is kept")

			// A call that merely timed out on a tab that still answers
			// keeps its tab.
			short, cancel = context.WithTimeout(ctx, 500*time.Millisecond)
			_, err = w.r.Exec(short, "w", "", func(ctx context.Context, call *Call) error {
				_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`new Promise(r => setTimeout(() => r(true), 5000))`))
				return err
			})
			cancel()
			require.Error(t, err)
			res, err = w.r.Exec(ctx, "w", "", func(ctx context.Context, call *Call) (err error) {
				cookie, err = evalString(ctx, `location.pathname`)
				return err
			})
			require.NoError(t, err)
			assert.False(t, res.TabReplaced, "a busy page that answers is not replaced")
			assert.Equal(t, "/after", cookie)
		})
	}
}
