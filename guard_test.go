package hybroute

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/config"
	"github.com/hybroute/hybroute/internal/testlog"
	"github.com/hybroute/hybroute/netpolicy"
)

// withGuardLookup sets the guard's lookup limit, so a test of a slow
// lookup does not wait the default limit out.
func withGuardLookup(d time.Duration) Option { return func(c *config.Config) { c.GuardLookup = d } }

// guardResolver is the test resolver plus the second public site and the
// slow names.
func guardResolver() netpolicy.Resolver {
	res := testResolverWith(publicHost, "93.184.215.14")
	res[widgetsHost] = addrs("93.184.215.14")
	return delayResolver{staticResolver: res, delay: 3 * time.Second, slow: map[string][]netip.Addr{
		slowPrivateHost:  addrs("10.0.0.5"),
		slowMetadataHost: addrs("169.254.169.254"),
	}}
}

// delayResolver answers its slow names after delay (or when ctx ends).
type delayResolver struct {
	staticResolver
	delay time.Duration
	slow  map[string][]netip.Addr
}

func (s delayResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if a, ok := s.slow[host]; ok {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(s.delay):
			return a, nil
		}
	}
	return s.staticResolver.LookupNetIP(ctx, network, host)
}

// guardPages serves the pages the guard tests open.
func guardPages(mux *http.ServeMux, s *site) {
	js := func(w http.ResponseWriter, body string) {
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, body)
	}
	meta := func(path string) string { return "http://" + metadataHost + ":" + s.port + path }
	// /channels starts three channels a guard on the tab alone misses: a
	// WebSocket, which Fetch never pauses, and a shared worker and a frame
	// of another site, which are targets of their own. Each reports back,
	// and the title says when all have.
	mux.HandleFunc("/channels", func(w http.ResponseWriter, r *http.Request) {
		servePage(w, "channels", struct{ Port, Frame string }{s.port, widgetsHost + ":" + s.port})
	})
	mux.HandleFunc("/shared-worker.js", func(w http.ResponseWriter, r *http.Request) {
		js(w, `onconnect = e => { const p = e.ports[0];
fetch("`+meta("/shared-worker-secret")+`").then(() => p.postMessage("loaded"), () => p.postMessage("refused")); };`)
	})
	mux.HandleFunc("/frame", func(w http.ResponseWriter, r *http.Request) {
		servePage(w, "frame", meta("/iframe-secret"))
	})
	// /opener opens a popup the way its query says, to a URL built at
	// run time from its fragment.
	mux.HandleFunc("/opener", staticPage("opener"))
}

// tabTarget is the target id of the tab of a call's context.
func tabTarget(ctx context.Context) target.ID {
	return chromedp.FromContext(ctx).Target.TargetID
}

// awaitRefusalAndNoPopup waits, within ctx, until the guard has refused a
// load in the session of key and no page the tab opened is left.
func awaitRefusalAndNoPopup(ctx context.Context, r *Router, key string) error {
	e := cachedEntry(r, key)
	tab := tabTarget(ctx)
	for {
		refused := e.guard.Err() != nil
		ts, err := chromedp.CallBrowser(ctx, target.GetTargets, target.GetTargetsParams{})
		if err != nil {
			return err
		}
		open := false
		for _, ti := range ts.TargetInfos {
			if ti.Type == "page" && ti.OpenerID == tab {
				open = true
			}
		}
		if refused && !open {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the refusal (%v) and the popup's close (open: %v): %w", refused, open, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// asUserGesture runs an evaluation as if the user clicked: popups open.
func asUserGesture(p *runtime.EvaluateParams) { p.UserGesture = new(true) }

func TestGuardHoldsEveryChannelOnCloud(t *testing.T) {
	requireCloudGuard(t)
	t.Parallel()
	w := newWorldServing(t, cloudtest.Browserbase, guardPages, WithResolver(guardResolver()))
	ctx := testCtx(t)
	_, err := w.r.Navigate(ctx, "s", w.site.url(publicHost, "/channels"), nil)
	require.NoError(t, err)
	var title string
	_, err = w.r.Exec(ctx, "s", "", func(ctx context.Context, call *Call) error {
		for {
			title, _ = chromedp.Run(ctx, chromedp.Title())
			if strings.HasPrefix(title, "done") {
				return nil
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("the page reported %q: %w", title, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	require.NoError(t, err)
	t.Log(title)
	for _, p := range []string{"/ws-literal", "/shared-worker-secret", "/iframe-secret"} {
		assert.False(t, w.site.reached(p), "the recorder saw %s", p)
	}
	assert.Contains(t, title, "ws-error")
	assert.Contains(t, title, "shared:refused")
	assert.Contains(t, title, "frame:refused")
}

func TestGuardRefusesPopupsOnCloud(t *testing.T) {
	requireCloudGuard(t)
	t.Parallel()
	w := newWorldServing(t, cloudtest.Browserbase, guardPages, WithResolver(guardResolver()))
	ctx := testCtx(t)
	for _, how := range []string{"open", "a", "form"} {
		for _, to := range []struct {
			host, path string
			want       error
		}{
			{metadataHost, "/popup-metadata-" + how, netpolicy.ErrMetadata},
			{"127.0.0.1", "/popup-loopback-" + how, netpolicy.ErrPrivate},
		} {
			_, err := w.r.Navigate(ctx, "s", w.site.url(publicHost, "/opener"), nil)
			require.NoError(t, err)
			_, err = w.r.Exec(ctx, "s", "", func(ctx context.Context, call *Call) error {
				// The URL is built at run time: no literal names it.
				js := fmt.Sprintf(`go(%q, "http://" + %q + ":%s" + %q)`, how, to.host, w.site.port, to.path)
				if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](js, asUserGesture)); err != nil {
					return err
				}
				return awaitRefusalAndNoPopup(ctx, w.r, "s")
			})
			require.ErrorIs(t, err, to.want, how+" "+to.path)
			assert.Contains(t, err.Error(), "popup", "the error names the target")
			assert.False(t, w.site.reached(to.path), "the recorder saw %s", to.path)
		}
	}
}

func TestLandedURLOfAPopupIsRechecked(t *testing.T) {
	requireCloudGuard(t)
	t.Parallel()
	// The landing check is the layer under the guard: switch the browser's
	// Fetch off (as a request Fetch cannot pause would be) and let a popup
	// land on a private page of the cloud browser.
	w := newWorldServing(t, cloudtest.Browserbase, guardPages, WithResolver(guardResolver()))
	ctx := testCtx(t)
	_, err := w.r.Navigate(ctx, "s", w.site.url(publicHost, "/opener"), nil)
	require.NoError(t, err)
	_, err = w.r.Exec(ctx, "s", "", func(ctx context.Context, call *Call) error {
		if _, err := chromedp.CallBrowser(ctx, fetch.Disable, cdp.Empty{}); err != nil {
			return err
		}
		js := fmt.Sprintf(`go("open", "http://127.0.0.1:%s/popup-landed")`, w.site.port)
		if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](js, asUserGesture)); err != nil {
			return err
		}
		// Wait until the popup's page has committed there.
		for {
			ts, err := chromedp.CallBrowser(ctx, target.GetTargets, target.GetTargetsParams{})
			if err != nil {
				return err
			}
			if slices.ContainsFunc(ts.TargetInfos, func(ti *target.Info) bool {
				return ti.Type == "page" && strings.HasSuffix(ti.URL, "/popup-landed")
			}) && w.site.reached("/popup-landed") {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
		return nil
	})
	require.ErrorIs(t, err, netpolicy.ErrPrivate)
	assert.Contains(t, err.Error(), "popup")
	assert.Contains(t, err.Error(), "landed")
	_, err = w.r.Exec(ctx, "s", "", func(ctx context.Context, call *Call) error {
		for { // the close is acted on after its answer
			ts, err := chromedp.CallBrowser(ctx, target.GetTargets, target.GetTargetsParams{})
			if err != nil {
				return err
			}
			if !slices.ContainsFunc(ts.TargetInfos, func(ti *target.Info) bool { return strings.Contains(ti.URL, "/popup-landed") }) {
				return nil
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("the popup is still open: %w", ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	require.NoError(t, err, "the popup was closed, and the next call runs")
}

func TestGuardLookupTimeoutFailsClosed(t *testing.T) {
	t.Parallel()
	w := newWorld(t, cloudtest.Browserbase, WithResolver(guardResolver()), withGuardLookup(300*time.Millisecond))
	ctx := testCtx(t)
	_, err := w.r.Navigate(ctx, "s", w.site.url(publicHost, "/start"), nil)
	require.NoError(t, err)
	for _, host := range []string{slowPrivateHost, slowMetadataHost} {
		path := "/slow-" + host
		_, err := w.r.Exec(ctx, "s", "", func(ctx context.Context, call *Call) error {
			// Not a literal of the call: the guard is the only check.
			return chromedp.Do(ctx, chromedp.Navigate(w.site.url(host, path)))
		})
		require.ErrorIs(t, err, netpolicy.ErrLookupTimeout, host)
		assert.Contains(t, err.Error(), "lookup timed out")
		assert.False(t, w.site.reached(path), "the recorder saw %s", path)
	}
}

// privilegedURLs are URLs of schemes a literal would refuse, which Fetch
// never pauses.
var privilegedURLs = []string{
	"chrome://version", "chrome://gpu", "devtools://devtools/bundled/inspector.html",
	"chrome-extension://aapbdbdomjkkjkaonfhkkikfgjllcleb/x.html", "chrome-untrusted://x/",
	" \tCHROME://version", "chrome:\n//version",
}

func TestPrivilegedSchemesAreRefusedOnBothRoutes(t *testing.T) {
	t.Parallel()
	w := sharedWorld(t)
	for _, route := range []string{"cloud", "local"} {
		key := w.sessNamed(route)
		ctx := testCtx(t) // one per route: a loaded machine is slow
		start := w.site.url(publicHost, "/start")
		if route == "local" {
			start = w.site.url("localhost", "/start")
		}
		res, err := w.r.Navigate(ctx, key, start, nil)
		require.NoError(t, err)
		for i, u := range privilegedURLs {
			_, err := w.r.Exec(ctx, key, "", func(ctx context.Context, call *Call) error {
				if i%2 == 1 {
					_, err := chromedp.Call(ctx, target.CreateTarget, target.CreateTargetParams{URL: u})
					return err
				}
				return chromedp.Do(ctx, chromedp.Navigate(u))
			})
			require.ErrorIs(t, err, netpolicy.ErrInvalidURL, "%s %q", res.Route, u)
		}
		_, err = w.r.Exec(ctx, key, "", func(ctx context.Context, call *Call) error {
			ts, err := chromedp.CallBrowser(ctx, target.GetTargets, target.GetTargetsParams{})
			for _, ti := range ts.TargetInfos {
				assert.False(t, ti.Type == "page" && (strings.HasPrefix(ti.URL, "chrome:") || strings.HasPrefix(ti.URL, "devtools:")),
					"%s: a page is on %s", res.Route, ti.URL)
			}
			return err
		})
		require.NoError(t, err)
	}
}

func TestSidecarSurvivesChromeSettings(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	s := newSite(t)
	r := newRouter(t, nil, &testlog.Buffer{})
	_, err := r.Navigate(testCtx(t), "a", s.URL+"/a", nil)
	require.NoError(t, err)
	_, err = r.Navigate(testCtx(t), "b", s.URL+"/b", nil)
	require.NoError(t, err)
	_, err = r.Exec(testCtx(t), "a", "", func(ctx context.Context, call *Call) error {
		return chromedp.Do(ctx, chromedp.Navigate("chrome://settings"))
	})
	require.ErrorIs(t, err, netpolicy.ErrInvalidURL)
	assert.NotErrorIs(t, err, ErrBrowserDead)
	// The other key's tab lives on: the browser never saw the command.
	res, err := r.Navigate(testCtx(t), "b", s.URL+"/after", nil)
	require.NoError(t, err)
	assert.Equal(t, s.URL+"/after", res.LandedURL)
	assert.EqualValues(t, 1, r.side.Starts(), "Chromium was not restarted")
}
