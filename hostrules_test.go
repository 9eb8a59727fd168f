package hybroute

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
)

func TestHostPatterns(t *testing.T) {
	rules, err := parseHostRules([]string{"example.com", "*.good.test", "10.1.0.0/16"}, []string{"bad.good.test", "10.1.2.3", "*.EVIL.test"})
	require.NoError(t, err)
	for _, c := range []struct {
		url   string
		addrs []string
		want  Reason
	}{
		{"https://example.com/", nil, 0},
		{"https://EXAMPLE.com./x", nil, 0},
		{"https://www.example.com/", nil, ReasonHostNotAllowed}, // a host pattern is that host only
		{"https://a.good.test/", nil, 0},
		{"https://good.test/", nil, ReasonHostNotAllowed},  // *.name is its subdomains
		{"https://bad.good.test/", nil, ReasonHostBlocked}, // block wins over allow
		{"https://x.evil.test/", nil, ReasonHostBlocked},
		{"http://10.1.9.9/", nil, 0},
		{"http://10.1.2.3/", nil, ReasonHostBlocked},
		{"http://0x0a010203/", nil, ReasonHostBlocked}, // as Chromium reads it
		{"http://10.2.0.1/", nil, ReasonHostNotAllowed},
		{"http://intranet.test/", []string{"10.1.0.7"}, 0},
		{"http://split.test/", []string{"10.1.0.7", "10.9.0.1"}, ReasonHostNotAllowed},    // every address must be in
		{"http://rebind.test/", []string{"93.184.215.14", "10.1.2.3"}, ReasonHostBlocked}, // any address blocks
		{"about:blank", nil, 0},
	} {
		v, _ := testPolicy(staticResolver{}, true).classifyParsed(c.url)
		if c.addrs != nil {
			v = resolved(v, addrs(c.addrs...), nil)
		} else if v.Class == 0 {
			v.Class = ClassPublic
		}
		assert.Equal(t, c.want, rules.refuse(v), c.url)
	}
	for _, bad := range []string{"", "*", "http://x/", "a b", "*.*.x", "x:80"} {
		_, err := parseHostRules(nil, []string{bad})
		assert.ErrorIs(t, err, ErrHostRule, "%q", bad)
	}
	_, err = New(nil, WithBlockedHosts("http://x/"))
	assert.ErrorIs(t, err, ErrHostRule, "New refuses a pattern it cannot read")
}

// TestOperatorRulesHoldOnBothRoutes: a host the operator blocks, or that
// the allow list leaves out, is reached by neither browser through a
// document, a popup, a fetch, a redirect or a WebSocket.
func TestOperatorRulesHoldOnBothRoutes(t *testing.T) {
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
				var s *site
				var r *Router
				if route == "cloud" {
					requireCloudGuard(t)
					w := newWorld(t, cloudtest.Browserbase, rc.rule, WithResolver(guardResolver()))
					s, r = w.site, w.r
				} else {
					s = newSite(t)
					r = newBrowserRouter(t, nil, &logBuffer{}, rc.rule, WithResolver(guardResolver()))
				}
				ctx := testCtx(t)
				bad := func(path string) string { return s.url(forbidden, path) }

				_, err := r.Navigate(ctx, "s", bad("/document"))
				require.ErrorIs(t, err, ErrHostRule, "document")

				_, err = r.Navigate(ctx, "s", s.url(publicHost, "/redirect-to/"+forbidden+":"+s.port+"/redirected"))
				require.ErrorIs(t, err, ErrHostRule, "redirect")

				res, err := r.Navigate(ctx, "s", s.url(publicHost, "/start"))
				require.NoError(t, err)
				require.Equal(t, route, res.Route.String())
				_, err = r.Exec(ctx, "s", "", func(ctx context.Context) error {
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
					_, err = r.Exec(ctx, "s", "", func(ctx context.Context) error {
						got, err := chromedp.Run(ctx, chromedp.Evaluate[string](webSocketJS("ws://"+forbidden+":"+s.port+"/ws"), chromedp.EvalAwaitPromise))
						if err == nil && got != "network error" {
							err = fmt.Errorf("websocket: %s", got)
						}
						return err
					})
					require.NoError(t, err, "websocket")
				}
				_, err = r.Exec(ctx, "s", "", func(ctx context.Context) error {
					// The guard closes a popup it refused: wait for that.
					return chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`new Promise(r => {
  const w = window.open(%q);
  const t = setInterval(() => { if (w.closed) { clearInterval(t); r(); } }, 50);
})`, bad("/popup")), chromedp.EvalAwaitPromise, asUserGesture))
				})
				assert.ErrorIs(t, err, ErrHostRule, "popup")
				assert.Empty(t, s.hitsFor(forbidden), "requests that reached the forbidden host")
				assert.True(t, s.reached("/start"))
			})
		}
	}
}
