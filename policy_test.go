package hybroute

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/config"
	"github.com/hybroute/hybroute/internal/floor"
	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/route"
)

// policySetups are the option sets the security rules name (docs/security.md), by name.
var policySetups = map[string]struct {
	provider bool
	opts     []Option
}{
	"hybrid":                        {true, nil},
	"no provider":                   {false, nil},
	"auto-local off":                {true, []Option{WithAutoLocalForPrivateURLs(false)}},
	"auto-local off, allow-private": {true, []Option{WithAutoLocalForPrivateURLs(false), WithAllowPrivateURLs(true)}},
	"CDP override":                  {false, []Option{WithCDPURL("ws://127.0.0.1:9222/devtools/browser/x")}},
	"CDP override, allow-private":   {true, []Option{WithCDPURL("ws://127.0.0.1:9222/devtools/browser/x"), WithAllowPrivateURLs(true)}},
}

func setupPolicy(t *testing.T, name string) *floor.Policy {
	t.Helper()
	s, ok := policySetups[name]
	require.True(t, ok, name)
	cfg := config.Default()
	cfg.Resolver = testResolver
	for _, o := range s.opts {
		o(&cfg)
	}
	return newPolicy(&cfg, s.provider, nil)
}

// outcome is what the policy makes of one call: "<route> <cache key>", or
// "blocked <reason of the first refusal>".
func outcome(t *testing.T, p *floor.Policy, urls ...string) string {
	t.Helper()
	vs := make([]netpolicy.Verdict, len(urls))
	for i, u := range urls {
		vs[i] = p.Classify(context.Background(), u)
		vs[i].Err = p.RefuseLiteral(vs[i])
	}
	for _, v := range vs {
		if v.Err != nil {
			return "blocked " + netpolicy.ReasonOf(v.Err)
		}
	}
	route := p.Route(vs, route.Local, false, true)
	return route.String() + " " + p.CacheKey("s", route)
}

// TestRoutingTable is the README's "Which URL goes where" table, for every
// set of options docs/security.md names. Its rows are the README's rows.
func TestRoutingTable(t *testing.T) {
	t.Parallel()
	readme := []struct {
		row  string
		urls []string
	}{
		{"public", []string{"https://example.com"}},
		{"localhost", []string{"http://localhost:3000"}},
		{"LAN", []string{"http://192.168.1.9"}},
		{"metadata", []string{"http://169.254.169.254"}},
		{"mixed", []string{"https://example.com", "http://localhost:3000"}},
		{"no URL", nil},
	}
	want := map[string][]string{
		//                               public           localhost                  LAN                        metadata            mixed                      no URL (new session)
		"hybrid":                        {"cloud s", "local s::local", "local s::local", "blocked metadata", "local s::local", "cloud s"},
		"no provider":                   {"local s::local", "local s::local", "local s::local", "blocked metadata", "local s::local", "local s::local"},
		"auto-local off":                {"cloud s", "blocked private_on_remote", "blocked private_on_remote", "blocked metadata", "blocked private_on_remote", "cloud s"},
		"auto-local off, allow-private": {"cloud s", "cloud s", "cloud s", "blocked metadata", "cloud s", "cloud s"},
		"CDP override":                  {"cloud s", "blocked private_on_remote", "blocked private_on_remote", "blocked metadata", "blocked private_on_remote", "cloud s"},
		"CDP override, allow-private":   {"cloud s", "cloud s", "cloud s", "blocked metadata", "cloud s", "cloud s"},
	}
	for setup, outcomes := range want {
		p := setupPolicy(t, setup)
		for i, row := range readme {
			assert.Equal(t, outcomes[i], outcome(t, p, row.urls...), "%s: %s", setup, row.row)
		}
	}
}

// TestRefuseIsOneRule asks the policy what the plan, the local browser and
// a remote browser may open, for every class: metadata and URLs that cannot
// be routed are refused everywhere, private addresses where the options do
// not let them run.
func TestRefuseIsOneRule(t *testing.T) {
	t.Parallel()
	urls := map[netpolicy.Class]string{
		netpolicy.ClassPublic:   "https://example.com/",
		netpolicy.ClassPrivate:  "http://127.0.0.1/",
		netpolicy.ClassMetadata: "http://169.254.169.254/",
		netpolicy.ClassInvalid:  "javascript:alert(1)",
		netpolicy.ClassNoRoute:  "about:blank",
	}
	// Per setup: the reason the plan, the local browser and a remote
	// browser give for a private address ("" where it may be opened).
	private := map[string][3]string{
		"hybrid":                        {"", "", "private_on_remote"},
		"no provider":                   {"", "", "private_on_remote"},
		"auto-local off":                {"private_on_remote", "private", "private_on_remote"},
		"auto-local off, allow-private": {"", "", ""},
		"CDP override":                  {"private_on_remote", "private", "private_on_remote"},
		"CDP override, allow-private":   {"", "", ""},
	}
	for setup, wantPrivate := range private {
		p := setupPolicy(t, setup)
		for c, u := range urls {
			v := p.Classify(context.Background(), u)
			require.Equal(t, c, v.Class, u)
			for i, refuse := range refusers(p) {
				err := refuse(v)
				var want string
				switch c {
				case netpolicy.ClassMetadata:
					want = "metadata"
				case netpolicy.ClassInvalid:
					want = "scheme_not_allowed"
				case netpolicy.ClassPrivate:
					want = wantPrivate[i]
				}
				assert.Equal(t, want, netpolicy.ReasonOf(err), "%s: %s at %d", setup, u, i)
				if want != "" {
					var be *netpolicy.BlockedError
					require.ErrorAs(t, err, &be)
					assert.Contains(t, err.Error(), "("+want+")", "the error names the reason")
				}
			}
		}
		// A private hop after a public one is refused on every route.
		v := p.Classify(context.Background(), "http://127.0.0.1/")
		for _, w := range []route.Route{route.Local, route.Cloud} {
			err := p.RefuseHop(v, w, true)
			require.ErrorIs(t, err, netpolicy.ErrPrivate, setup)
			if p.Refuse(v, w) == nil {
				assert.Equal(t, "redirect_to_private", netpolicy.ReasonOf(err), setup)
				assert.Contains(t, err.Error(), "redirect from a public address")
			}
			assert.Equal(t, p.Refuse(v, w), p.RefuseHop(v, w, false), "a hop that follows no public one is any request")
		}
	}
}

// refusers are the three places a URL is judged: as a URL literal of a
// plan, on the local browser, and on a cloud browser.
func refusers(p *floor.Policy) [3]func(netpolicy.Verdict) error {
	return [3]func(netpolicy.Verdict) error{p.RefuseLiteral,
		func(v netpolicy.Verdict) error { return p.Refuse(v, route.Local) },
		func(v netpolicy.Verdict) error { return p.Refuse(v, route.Cloud) }}
}

// The URLs a tab lands on that load nothing are allowed everywhere; the
// browser's own pages are not URLs hybroute routes, so a tab that lands on
// one is refused like any other invalid URL.
func TestLandingsThatLoadNothing(t *testing.T) {
	t.Parallel()
	for setup := range policySetups {
		p := setupPolicy(t, setup)
		for _, u := range []string{"about:blank", "about:srcdoc", "about:blank#top", "chrome-error://chromewebdata/"} {
			v := p.Classify(context.Background(), u)
			assert.Equal(t, netpolicy.ClassNoRoute, v.Class, u)
			for _, refuse := range refusers(p) {
				assert.NoError(t, refuse(v), "%s: %s", setup, u)
			}
		}
		for _, u := range []string{"chrome://version", "devtools://devtools/bundled/inspector.html",
			"chrome-extension://abcdefghijklmnop/x.html", "chrome-untrusted://print/", "chrome-error://other/", "about:config"} {
			v := p.Classify(context.Background(), u)
			assert.Equal(t, netpolicy.ClassInvalid, v.Class, u)
			for _, refuse := range refusers(p) {
				err := refuse(v)
				require.ErrorIs(t, err, netpolicy.ErrInvalidURL, "%s: %s", setup, u)
				assert.Equal(t, "scheme_not_allowed", netpolicy.ReasonOf(err))
			}
		}
	}
}

// TestLandingOnABrowserPageIsRefused: run navigates, through CDP, to a page
// of the browser itself, which no URL literal of the call shows. The guard's
// Mux refuses the command before it reaches the browser, on both routes, and
// the refused call sends the tab to about:blank (the landed-URL check, which
// refuses such a page too, is the second line). A load that fails leaves the tab on
// Chromium's error page, which loads nothing: that is no refusal.
func TestLandingOnABrowserPageIsRefused(t *testing.T) {
	t.Parallel()
	w := sharedWorld(t)
	ctx := testCtx(t)
	dead := "http://127.0.0.1:" + strings.TrimPrefix(closedPort(t), "127.0.0.1:") + "/"
	for _, tc := range []struct {
		name, page string
		want       route.Route
	}{
		{"local", w.site.url("localhost", "/local-start"), route.Local},
		{"cloud", w.site.url(publicHost, "/cloud-start"), route.Cloud},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A navigation picks the browser, whichever the page was in.
			res, err := w.r.Navigate(ctx, w.sess, tc.page, func(ctx context.Context, call *Call) error {
				if err := chromedp.Do(ctx, chromedp.Navigate(tc.page)); err != nil {
					return err
				}
				return chromedp.Do(ctx, chromedp.Navigate("chrome://version"))
			})
			require.ErrorIs(t, err, netpolicy.ErrInvalidURL)
			assert.Contains(t, err.Error(), "(scheme_not_allowed)")
			assert.Contains(t, err.Error(), "refused before it reaches the browser")
			assert.Equal(t, tc.want, res.Route)
			assert.Equal(t, "about:blank", location(t, w.r, w.sess), "a refused call sends the tab to about:blank")

			if tc.want == route.Local {
				// A failed load on the local browser: the call fails with
				// the browser's error, the tab is on its error page.
				_, err = w.r.Exec(ctx, w.sess, "", func(ctx context.Context, call *Call) error {
					return chromedp.Do(ctx, chromedp.Navigate(dead))
				})
				require.Error(t, err)
				assert.False(t, errors.As(err, new(*netpolicy.BlockedError)), "a failed load is not a refusal: %v", err)
				// The error page commits after the failed navigation has
				// returned: the next call lands there, and is not refused.
				var loc string
				res, err = w.r.Exec(ctx, w.sess, "", func(ctx context.Context, call *Call) (err error) {
					loc, err = chromedp.Run(ctx, chromedp.Location())
					return err
				})
				require.NoError(t, err, "the error page is no refusal")
				assert.Equal(t, "chrome-error://chromewebdata/", loc)
				assert.Equal(t, loc, res.LandedURL)
			}
		})
	}
}
