package hybroute

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/testlog"
	"github.com/hybroute/hybroute/netpolicy"
)

func TestNewRefusesABadHostPattern(t *testing.T) {
	_, err := New(nil, WithBlockedHosts("http://x/"))
	assert.ErrorIs(t, err, netpolicy.ErrHostRule, "New refuses a pattern it cannot read")
}

// TestOperatorRulesHoldOnBothRoutes: a host the operator blocks, or that
// the allow list leaves out, is reached by neither browser through a
// document, a popup, a fetch, a redirect or a WebSocket.
func TestOperatorRulesHoldOnBothRoutes(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	const forbidden = widgetsHost
	for _, rc := range []struct {
		name string
		rule Option
	}{
		{"blocked", WithBlockedHosts(forbidden)},
		{"not-allowed", WithAllowedHosts(publicHost)},
	} {
		for _, route := range []string{"cloud", "local"} {
			t.Run(rc.name+"/"+route, func(t *testing.T) {
				t.Parallel() // each on browsers of its own
				var s *site
				var r *Router
				if route == "cloud" {
					requireCloudGuard(t)
					w := newWorld(t, cloudtest.Browserbase, rc.rule, WithResolver(guardResolver()))
					s, r = w.site, w.r
				} else {
					s = newSite(t)
					r = newRouter(t, nil, &testlog.Buffer{}, rc.rule, WithResolver(guardResolver()))
				}
				ctx := testCtx(t)
				bad := func(path string) string { return s.url(forbidden, path) }

				_, err := r.Navigate(ctx, "s", bad("/document"), nil)
				require.ErrorIs(t, err, netpolicy.ErrHostRule, "document")

				_, err = r.Navigate(ctx, "s", s.url(publicHost, "/redirect-to/"+forbidden+":"+s.port+"/redirected"), nil)
				require.ErrorIs(t, err, netpolicy.ErrHostRule, "redirect")

				res, err := r.Navigate(ctx, "s", s.url(publicHost, "/start"), nil)
				require.NoError(t, err)
				require.Equal(t, route, res.Route.String())
				_, err = r.Exec(ctx, "s", "", func(ctx context.Context, call *Call) error {
					got, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(
						`fetch(%q).then(() => "reached", () => "refused")`, bad("/fetch")), chromedp.EvalAwaitPromise))
					if err == nil && got != "refused" {
						err = fmt.Errorf("fetch: %s", got)
					}
					return err
				})
				require.NoError(t, err, "fetch")
				if route == "local" || rc.name == "blocked" {
					// An allow list cannot be written as a cloud browser's
					// WebSocket rule (docs/security.md, Known limits).
					_, err = r.Exec(ctx, "s", "", func(ctx context.Context, call *Call) error {
						got, err := chromedp.Run(ctx, chromedp.Evaluate[string](webSocketJS("ws://"+forbidden+":"+s.port+"/ws"), chromedp.EvalAwaitPromise))
						if err == nil && got != "network error" {
							err = fmt.Errorf("websocket: %s", got)
						}
						return err
					})
					require.NoError(t, err, "websocket")
				}
				_, err = r.Exec(ctx, "s", "", func(ctx context.Context, call *Call) error {
					// The guard closes a popup it refused: wait for that.
					return chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`new Promise(r => {
  const w = window.open(%q);
  const t = setInterval(() => { if (w.closed) { clearInterval(t); r(); } }, 50);
})`, bad("/popup")), chromedp.EvalAwaitPromise, asUserGesture))
				})
				assert.ErrorIs(t, err, netpolicy.ErrHostRule, "popup")
				assert.Empty(t, s.hitsFor(forbidden), "requests that reached the forbidden host")
				assert.True(t, s.reached("/start"))
			})
		}
	}
}
