package hybroute

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
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
// document, a popup, a fetch, a redirect or a WebSocket, the last in every
// spelling Chromium reads as the same host (wsSpellings). On the cloud
// browser the built-in WebSocket rules hold in every spelling too: its own
// loopback by name, and the metadata names.
func TestOperatorRulesHoldOnBothRoutes(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	const forbidden = widgetsHost
	for _, rc := range []struct {
		name string
		rule Option
	}{
		{"blocked", WithBlockedHosts(forbidden, "*."+wildDomain)},
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
				var hosts []string
				if route == "local" || rc.name == "blocked" {
					// An allow list cannot be written as a cloud browser's
					// WebSocket rule (docs/security.md, Known limits).
					hosts = append(hosts, wsSpellings(forbidden)...)
				}
				if rc.name == "blocked" {
					hosts = append(hosts, wsSpellings("a."+wildDomain)...)
				}
				if route == "cloud" {
					hosts = append(hosts, wsSpellings("localhost")...)
					hosts = append(hosts, wsSpellings("x.localhost")...)
					hosts = append(hosts, wsSpellings(metadataHost)...)
					hosts = append(hosts, "127.0.0.1.", "0x7f.1")
				}
				wsURL := func(i int) string { return fmt.Sprintf("ws://%s:%s/ws-spelling/%d", hosts[i], s.port, i) }
				var got []string
				_, err = r.Exec(ctx, "s", "", func(ctx context.Context, call *Call) error {
					var urls []string
					for i := range hosts {
						urls = append(urls, wsURL(i))
					}
					var err error
					got, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](webSocketsJS(urls), chromedp.EvalAwaitPromise))
					return err
				})
				require.NoError(t, err, "websockets")
				require.Len(t, got, len(hosts))
				for i := range hosts {
					assert.Equal(t, "network error", got[i], wsURL(i))
					assert.False(t, s.reached(fmt.Sprintf("/ws-spelling/%d", i)), "%s reached the site", wsURL(i))
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

// wildDomain is a domain whose subdomains the blocked case blocks; both
// browsers map its names to the site (hostRules).
const wildDomain = "wild.test"

// wsSpellings are spellings of host Chromium reads as host, or as a
// trailing-dot form DNS answers as it: upper case, trailing dots (one and
// two), a percent-encoded dot, a percent-encoded letter, full-width
// letters and an ideographic full stop (which IDNA maps to ASCII).
func wsSpellings(host string) []string {
	fullWidth := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' {
			return r - 'a' + 'ａ'
		}
		return r
	}, host)
	return []string{host, strings.ToUpper(host), host + ".", host + "..", host + "%2e", strings.ToUpper(host) + "%2E",
		strings.Replace(host, "o", "%6f", 1) + ".", fullWidth, host + "\u3002"}
}

// webSocketsJS opens a WebSocket to each of urls at once and settles to
// what each did, in order: "open" or "network error".
func webSocketsJS(urls []string) string {
	b, _ := json.Marshal(urls)
	return fmt.Sprintf(`Promise.all(%s.map(u => new Promise(res => {
  let s;
  try { s = new WebSocket(u); } catch (e) { res("throws: " + e); return; }
  s.onopen = () => { res("open"); s.close(); };
  s.onerror = () => res("network error");
})))`, b)
}
