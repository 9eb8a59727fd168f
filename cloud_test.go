package hybroute

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/testlog"
	"github.com/hybroute/hybroute/provider"
	"github.com/hybroute/hybroute/route"
)

// providerKinds are every kind of provider, in its real URL shape.
var providerKinds = []cloudtest.Kind{cloudtest.Browserbase, cloudtest.BrowserUse, cloudtest.Steel, cloudtest.CDP}

// TestRealProviderShapesRunOnTheCloud proves each provider's CDP URL, in the
// shape the real provider hands out (wss, no port, no /devtools/browser/
// path, the key in the query; Browser Use's https discovery URL), is
// dialled as given with the provider's HTTP client, and the call runs on
// the cloud browser behind it, not on the local fallback.
func TestRealProviderShapesRunOnTheCloud(t *testing.T) {
	t.Parallel()
	for _, kind := range providerKinds {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, kind)
			res, err := w.r.Navigate(testCtx(t), "s", w.site.url(publicHost, "/shape-"+string(kind)), nil)
			require.NoError(t, err)
			assert.False(t, res.FallbackFromCloud, "logs: %s", w.logs)
			assert.Equal(t, route.Cloud, res.Route)
			assert.Equal(t, cloudUA, w.site.uaOf("/shape-"+string(kind)), "the page ran on the cloud browser")
			assert.EqualValues(t, 1, w.api.Front.Upgrades(), "one websocket, through the provider's TLS front")
			assert.Zero(t, w.api.Front.Refused())
			discoveries := 0
			for _, req := range w.api.Front.Requests() {
				if strings.HasSuffix(req.Path, "/json/version") {
					discoveries++
				}
			}
			if kind == cloudtest.BrowserUse {
				assert.Equal(t, 1, discoveries, "Browser Use's https cdpUrl is its documented discovery endpoint")
			} else {
				assert.Zero(t, discoveries, "a websocket URL is dialled as given, with no /json/version")
			}
		})
	}
}

// TestOldDevToolsShapeStillRuns proves the ws://127.0.0.1:PORT/devtools/
// browser/ID shape of a self-hosted browser is dialled as given too.
func TestOldDevToolsShapeStillRuns(t *testing.T) {
	t.Parallel()
	w := newWorldOldShape(t, cloudtest.Browserbase)
	res, err := w.r.Navigate(testCtx(t), "s", w.site.url(publicHost, "/old-shape"), nil)
	require.NoError(t, err)
	assert.False(t, res.FallbackFromCloud, "logs: %s", w.logs)
	assert.Equal(t, cloudUA, w.site.uaOf("/old-shape"))
}

// switchingProvider is a CDP endpoint whose URL a test changes between
// sessions, so one router (and one local Chromium) meets many endpoints.
type switchingProvider struct {
	url atomic.Pointer[string]
}

func (p *switchingProvider) Name() string { return "Switching" }
func (p *switchingProvider) CreateSession(ctx context.Context, key string) (*provider.Session, error) {
	return provider.CDPEndpoint(*p.url.Load(), provider.WithName("Switching")).CreateSession(ctx, key)
}
func (p *switchingProvider) ReleaseSession(context.Context, *provider.Session) error { return nil }

// TestMalformedEndpointAnswersFallBack proves no answer of a CDP endpoint
// can crash the process: each malformed /json/version answer, to an http
// endpoint that documents discovery and to a ws URL (chromedp's remote
// allocator fetches /json/version itself and panics on an answer without
// webSocketDebuggerUrl, so ws URLs must not go through it), is a provider failure that falls
// back to the local browser with a clear error.
func TestMalformedEndpointAnswersFallBack(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	var body atomic.Pointer[string]
	var versions atomic.Int64
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/json/version") {
			versions.Add(1)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, *body.Load())
			return
		}
		http.Error(w, "not a websocket endpoint", http.StatusNotFound)
	}))
	defer endpoint.Close()
	host := strings.TrimPrefix(endpoint.URL, "http://")
	p := &switchingProvider{}
	logs := &testlog.Buffer{}
	site := newSite(t)
	r := newRouter(t, p, logs, WithProviderBackoffCap(1))

	rows := []struct{ name, body, want string }{
		{"no webSocketDebuggerUrl", `{"Browser":"HeadlessChrome/156"}`, "has no webSocketDebuggerUrl"},
		{"null", `{"webSocketDebuggerUrl":null}`, "has no webSocketDebuggerUrl"},
		{"a number", `{"webSocketDebuggerUrl":42}`, "decoding /json/version"},
		{"not an object", `["ws://x"]`, "decoding /json/version"},
		{"not JSON", `<html>gateway</html>`, "decoding /json/version"},
		{"truncated", `{"webSocketDebuggerUrl":"ws://`, "decoding /json/version"},
		{"unparseable URL", `{"webSocketDebuggerUrl":"ws://[::1"}`, "webSocketDebuggerUrl [unparseable URL]"},
		{"http scheme", `{"webSocketDebuggerUrl":"http://` + host + `/devtools/browser/x"}`, `has scheme "http"`},
		{"another host", `{"webSocketDebuggerUrl":"ws://198.51.100.7:9222/devtools/browser/x"}`, "not the endpoint's"},
	}
	// A websocket URL is dialled as given: whatever its server would
	// answer at /json/version is never asked for.
	rows = append(rows, struct{ name, body, want string }{"ws URL", `{"Browser":"HeadlessChrome/156"}`, "opening the websocket"})
	for i, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			b := row.body
			body.Store(&b)
			scheme := "http"
			if row.name == "ws URL" {
				scheme = "ws"
			}
			u := scheme + "://" + host + "/?token=tok+en/x%3D%3D"
			p.url.Store(&u)
			before := versions.Load()
			key := fmt.Sprintf("k%d", i)
			res, err := r.Navigate(testCtx(t), key, site.url(publicHost, "/"+key), nil)
			require.NoError(t, err, "the floor takes the call")
			assert.True(t, res.FallbackFromCloud)
			assert.Equal(t, localUA, site.uaOf("/"+key))
			cause := r.health.Last()
			require.Error(t, cause)
			assert.Contains(t, cause.Error(), row.want)
			assertErrNoSpelling(t, cause, "tok+en/x==")
			if scheme == "http" {
				assert.ErrorIs(t, cause, provider.ErrUnavailable)
				assert.Equal(t, before+1, versions.Load(), "an http endpoint is asked for its websocket")
			} else {
				assert.Equal(t, before, versions.Load(), "a websocket URL is dialled as given, never /json/version")
			}
		})
	}
	assertNoSpelling(t, logs.String(), "tok+en/x==")
}

// spellings are the forms a secret can take in a text: raw, query-escaped,
// path-escaped (either case of hex), and as %q quotes it.
func spellings(secret string) []string {
	forms := []string{secret, url.QueryEscape(secret), url.PathEscape(secret), strings.Trim(fmt.Sprintf("%q", secret), `"`)}
	for _, f := range forms[1:3] {
		forms = append(forms, strings.ToLower(f))
	}
	return forms
}

// assertNoSpelling fails if text holds any spelling of secret.
func assertNoSpelling(t *testing.T, text, secret string) {
	t.Helper()
	for _, f := range spellings(secret) {
		if strings.Contains(text, f) {
			t.Errorf("the text holds the secret as %q: %s", f, text)
		}
	}
}

// assertErrNoSpelling checks every text of err's chain.
func assertErrNoSpelling(t *testing.T, err error, secret string) {
	t.Helper()
	for e := err; e != nil; e = errors.Unwrap(e) {
		assertNoSpelling(t, e.Error(), secret)
		assertNoSpelling(t, fmt.Sprintf("%+v", e), secret)
	}
}

// TestKeysNeverInLogsOrErrors fails the connection of every provider kind
// in its real shape (the front refuses the websocket, echoing the request's
// query back) and proves no spelling of the API key, or of Browserbase's
// per-session signing key, reaches the logs or the errors: raw,
// query-escaped, path-escaped. The key holds "+", "/" and "=", so the
// spellings differ.
func TestKeysNeverInLogsOrErrors(t *testing.T) {
	t.Parallel()
	for _, kind := range providerKinds {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, kind)
			w.api.Front.OnUpgrade(cloudtest.Status(http.StatusForbidden, "forbidden: "+testAPIKey+" "+url.QueryEscape(testAPIKey)))
			res, err := w.r.Navigate(testCtx(t), "s", w.site.url(publicHost, "/refused-"+string(kind)), nil)
			require.NoError(t, err)
			require.True(t, res.FallbackFromCloud)
			assert.Contains(t, w.logs.String(), "HTTP 403")
			assertNoSpelling(t, w.logs.String(), testAPIKey)
			for _, req := range w.api.Front.Requests() {
				if sk := queryValue(req.Query, "signingKey"); sk != "" {
					assertNoSpelling(t, w.logs.String(), sk)
				}
			}
		})
	}
	t.Run("CDP override", func(t *testing.T) {
		t.Parallel()
		requireChromium(t)
		cloud := cloudtest.LaunchChromium(t)
		api := cloudtest.NewServer(t, cloudtest.CDP, cloud.WSURL, cloudtest.WithAPIKey(testAPIKey), cloudtest.WithRealShapes())
		logs := &testlog.Buffer{}
		r := newRouter(t, nil, logs, WithCDPURL(api.EndpointURL()), WithCDPHTTPClient(api.HTTPClient()))
		api.Front.OnUpgrade(cloudtest.Status(http.StatusUnauthorized, "bad token "+testAPIKey))
		_, err := r.Navigate(testCtx(t), "s", "https://example.com/", nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "token=REDACTED", "the error names the endpoint")
		assertErrNoSpelling(t, err, testAPIKey)
		assertNoSpelling(t, logs.String(), testAPIKey)

		// Working, the override runs the call on its browser.
		v, err := r.Exec(testCtx(t), "s", "", func(ctx context.Context, call *Call) error {
			_, err := chromedp.Run(ctx, chromedp.Evaluate[int]("6*7"))
			return err
		})
		require.NoError(t, err)
		assert.Equal(t, route.Cloud, v.Route)
		assert.EqualValues(t, 1, api.Front.Upgrades())
	})
}

// queryValue is the decoded value of name in a raw query.
func queryValue(raw, name string) string {
	q, _ := url.ParseQuery(raw)
	return q.Get(name)
}

// TestDeadBrowserErrorsNameTheBrowser proves a cloud browser that goes away
// during a call (the provider drops the websocket) fails the call with
// ErrBrowserDead, in words that name the cloud browser and its provider,
// not the local Chromium.
func TestDeadBrowserErrorsNameTheBrowser(t *testing.T) {
	t.Parallel()
	w := newWorld(t, cloudtest.Steel)
	ctx := testCtx(t)
	_, err := w.r.Navigate(ctx, "s", w.site.url(publicHost, "/before"), nil)
	require.NoError(t, err)
	_, err = w.r.Exec(ctx, "s", "", func(ctx context.Context, call *Call) error {
		w.api.Front.DropConnections()
		for {
			if _, err := chromedp.Run(ctx, chromedp.Title()); err != nil {
				return err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	})
	require.ErrorIs(t, err, ErrBrowserDead)
	assert.Contains(t, err.Error(), "the cloud browser of Steel died")
	assert.Contains(t, err.Error(), "the session is gone")
	assert.NotContains(t, err.Error(), "local Chromium")
}
