package hybroute

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/chromium"
	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/health"
	"github.com/hybroute/hybroute/internal/outage"
	"github.com/hybroute/hybroute/internal/testlog"
	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/provider"
	"github.com/hybroute/hybroute/route"
	"github.com/hybroute/hybroute/store"
)

const fallbackLine = "falling back to local Chromium"

// The job the library exists for: the provider answers 429
// RATE_LIMIT_EXCEEDED, and the morning screenshot is taken anyway, on local
// Chromium, with one log line.
func TestRateLimitedCloudFallsBackToLocal(t *testing.T) {
	t.Parallel()
	w := newWorld(t, cloudtest.Browserbase)
	withClock(w.r) // the advertised window stays open however slow the machine
	w.api.OnCreate(cloudtest.RateLimited("17"))
	// Generous: a cold Chromium start on a loaded machine, with -race.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dash := w.site.url(publicHost, "/dashboard")

	var png []byte
	res, err := w.r.Exec(ctx, "morning", `await page.goto("`+dash+`"); await page.screenshot()`,
		func(ctx context.Context, call *Call) error {
			if err := chromedp.Do(ctx, chromedp.Navigate(dash)); err != nil {
				return err
			}
			var err error
			png, err = chromedp.Run(ctx, chromedp.CaptureScreenshot())
			return err
		})
	require.NoError(t, err)
	assert.True(t, res.FallbackFromCloud, "the call ran on the fallback")
	assert.Equal(t, route.Local, res.Route, "it ran on local Chromium")
	assert.Equal(t, "morning", res.CacheKey, "in the cloud session's place, not the ::local sidecar")
	assert.Equal(t, dash, res.LandedURL)
	assert.Equal(t, localUA, w.site.uaOf("/dashboard"), "the page was loaded by the local Chromium")
	require.Greater(t, len(png), 1000)
	assert.Equal(t, "\x89PNG", string(png[:4]))
	assert.Equal(t, 1, w.logs.Count(fallbackLine), w.logs.String())
	assert.Contains(t, w.logs.String(), "status=429")
	assert.Contains(t, w.logs.String(), "retry_after=17s")
	assert.Contains(t, w.logs.String(), "provider=Browserbase")
	assert.NotContains(t, w.logs.String(), testAPIKey)
	assert.EqualValues(t, 1, w.api.Creates())

	// The same key keeps its browser; a new key goes straight to local
	// while the advertised window is open. Neither calls the provider.
	res, err = w.r.Navigate(ctx, "morning", w.site.url(publicHost, "/again"), nil)
	require.NoError(t, err)
	assert.True(t, res.FallbackFromCloud)
	res, err = w.r.Navigate(ctx, "evening", w.site.url(publicHost, "/other"), nil)
	require.NoError(t, err)
	assert.True(t, res.FallbackFromCloud)
	assert.Equal(t, localUA, w.site.uaOf("/other"))
	assert.EqualValues(t, 1, w.api.Creates(), "no provider call while the Retry-After window is open")
	assert.Equal(t, 1, w.logs.Count(fallbackLine), "the outage is logged once")
	assert.Equal(t, "provider Browserbase: HTTP 429 Too Many Requests (retry after 17s)", res.FallbackReason)

	// A fallback is a local session in its errors.
	_, err = w.r.Exec(ctx, "morning", "", func(context.Context, *Call) error { return errors.New("boom") })
	require.Error(t, err)
	assert.Contains(t, err.Error(), `call on local session "morning"`)
}

// With the fallback off, the call fails with the provider's error, wrapped,
// during the window too, and no local Chromium starts.
func TestFallbackOffFailsWithTheProvidersError(t *testing.T) {
	t.Parallel()
	api := cloudtest.NewServer(t, cloudtest.Browserbase, "ws://127.0.0.1:1/devtools/browser/none",
		cloudtest.WithAPIKey(testAPIKey), cloudtest.WithProjectID("proj-1"))
	api.OnCreate(cloudtest.RateLimited("17"))
	logs := &testlog.Buffer{}
	r := newTestRouter(t, provider.NewBrowserbase(testAPIKey, "proj-1", provider.WithBaseURL(api.URL)),
		WithFallback(false), WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	withClock(r)
	ctx := testCtx(t)
	for _, key := range []string{"a", "b"} {
		_, err := r.Navigate(ctx, key, "https://"+publicHost+"/", nil)
		require.ErrorIs(t, err, provider.ErrRateLimited, key)
		assert.Contains(t, err.Error(), "fallback is off")
		assert.NotContains(t, err.Error(), testAPIKey)
	}
	assert.EqualValues(t, 1, api.Creates(), "the window holds with the fallback off too")
	assert.False(t, r.side.Alive(), "no local Chromium")
	assert.Equal(t, 0, logs.Count(fallbackLine))
	assert.Equal(t, 1, logs.Count("fallback is off"))
}

// The outage's log line names the session params the local floor does
// without; a configuration error says what to fix, at ERROR.
func TestFallbackLogNamesDroppedParamsAndTheFix(t *testing.T) {
	t.Parallel()
	api := cloudtest.NewServer(t, cloudtest.Browserbase, "ws://127.0.0.1:1/devtools/browser/none",
		cloudtest.WithAPIKey(testAPIKey), cloudtest.WithProjectID("proj-1"))
	api.OnCreate(cloudtest.Status(http.StatusUnauthorized, ""))
	logs := &testlog.Buffer{}
	p := provider.NewBrowserbase(testAPIKey, "proj-1", provider.WithBaseURL(api.URL),
		provider.WithSessionParams(map[string]any{"keepAlive": true, "region": "eu-central-1"}))
	r := newTestRouter(t, p, WithChromiumPath("/nonexistent/chromium"),
		WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	_, err := r.Navigate(testCtx(t), "s", "https://"+publicHost+"/", nil)
	require.ErrorIs(t, err, ErrFallbackFailed)
	require.ErrorIs(t, err, provider.ErrAuth)
	assert.Contains(t, logs.String(), "level=ERROR")
	assert.Contains(t, logs.String(), `dropped_params="[keepAlive region]"`)
	assert.Contains(t, logs.String(), "check the API key")
	assert.NotContains(t, logs.String(), testAPIKey)
}

// Warm starts the local Chromium before the first call, and reports what
// stops it at once.
func TestWarm(t *testing.T) {
	t.Parallel()
	r := newRouter(t, nil, nil, WithChromiumPath("/nonexistent/chromium"))
	require.ErrorIs(t, r.Warm(testCtx(t)), ErrNoChromium)
	if _, err := chromium.Find(""); err == nil {
		// The flags are checked before anything is launched.
		r = newRouter(t, nil, nil, WithChromiumFlags(map[string]any{"proxy-server": "direct://"}))
		err := r.Warm(testCtx(t))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "managed by the sidecar")
	}
	require.NoError(t, r.Close())
	require.ErrorIs(t, r.Warm(testCtx(t)), ErrClosed)
}

// TestWarmNamesTheFix: Warm with $CHROMIUM naming a file that is no
// program fails at once with ErrNoChromium, and its text says what is
// wrong and every way to fix it.
func TestWarmNamesTheFix(t *testing.T) {
	// Not parallel: it sets $CHROMIUM.
	notExec := filepath.Join(t.TempDir(), "chromium")
	require.NoError(t, os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644))
	t.Setenv("CHROMIUM", notExec)
	r := newRouter(t, nil, nil)
	err := r.Warm(testCtx(t))
	require.ErrorIs(t, err, ErrNoChromium)
	for _, want := range []string{"hybroute: warming the local Chromium", `$CHROMIUM="` + notExec + `"`, "is not executable",
		"WithChromiumPath", chromium.Install()} {
		assert.Contains(t, err.Error(), want)
	}
}

// testClock is the fallback's clock in the tests that move time instead of
// sleeping through a Retry-After window.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// withClock gives r's fallback a test clock, set to now. Call it before
// r's first call.
func withClock(r *Router) *testClock {
	c := &testClock{t: time.Now()}
	r.now = c.now
	return c
}

func TestFallbackSessionKeepsItsBrowser(t *testing.T) {
	t.Parallel()
	w := newWorld(t, cloudtest.Steel)
	clock := withClock(w.r)
	w.api.OnCreate(cloudtest.RateLimited("17"))
	ctx := testCtx(t)
	_, err := w.r.Navigate(ctx, "s", w.site.url(publicHost, "/a"), nil)
	require.NoError(t, err)
	_, err = w.r.Exec(ctx, "s", "", func(ctx context.Context, call *Call) error {
		return chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`localStorage.setItem("k", "kept")`))
	})
	require.NoError(t, err)
	clock.advance(18 * time.Second) // past the 429's window

	// The provider is healthy again, but the session on the fallback
	// keeps its browser (its storage) until it is released.
	var got string
	res, err := w.r.Exec(ctx, "s", "", func(ctx context.Context, call *Call) (err error) {
		got, err = chromedp.Run(ctx, chromedp.Evaluate[string](`localStorage.getItem("k")`))
		return err
	})
	require.NoError(t, err)
	assert.True(t, res.FallbackFromCloud)
	assert.Equal(t, "kept", got)
	assert.EqualValues(t, 1, w.api.Creates())

	// A new key after the window tries the cloud again, and gets it.
	res, err = w.r.Navigate(ctx, "t", w.site.url(publicHost, "/cloud"), nil)
	require.NoError(t, err)
	assert.False(t, res.FallbackFromCloud)
	assert.Equal(t, cloudUA, w.site.uaOf("/cloud"))
	assert.EqualValues(t, 2, w.api.Creates())
	assert.Equal(t, 1, w.logs.Count("cloud provider recovered"))

	// A new outage after the recovery is logged again, once.
	w.api.OnCreate(cloudtest.RateLimited("17"), cloudtest.RateLimited("17"))
	for _, k := range []string{"u", "v"} {
		clock.advance(18 * time.Second) // past the window: both ask the provider
		res, err = w.r.Navigate(ctx, k, w.site.url(publicHost, "/"+k), nil)
		require.NoError(t, err)
		assert.True(t, res.FallbackFromCloud)
	}
	assert.EqualValues(t, 4, w.api.Creates())
	assert.Equal(t, 2, w.logs.Count(fallbackLine), "one line for the first outage, one for the second")

	// Releasing the fallback session gives a fresh start on the cloud,
	// once the second outage's window has passed.
	clock.advance(18 * time.Second)
	require.NoError(t, w.r.Release(ctx, "s"))
	res, err = w.r.Navigate(ctx, "s", w.site.url(publicHost, "/back"), nil)
	require.NoError(t, err)
	assert.False(t, res.FallbackFromCloud)
	assert.Equal(t, cloudUA, w.site.uaOf("/back"))
}

func TestProviderFailuresFallBack(t *testing.T) {
	// The floor has a budget of its own (WithLocalTimeout, default 60 s), so
	// the short creation timeout that bounds the hanging provider cannot
	// starve the local tab on a loaded machine; the caller's deadline is
	// generous. The rows run side by side, within go test's -parallel.
	t.Parallel()
	rows := []struct {
		rule     string
		kind     cloudtest.Kind
		reply    cloudtest.Reply
		sentinel error
		status   string
		reason   string
	}{
		{"401 unauthorized", cloudtest.Browserbase, cloudtest.Status(http.StatusUnauthorized, ""), provider.ErrAuth, "status=401", "HTTP 401"},
		{"402 payment required", cloudtest.BrowserUse, cloudtest.Status(http.StatusPaymentRequired, ""), provider.ErrPayment, "status=402", "HTTP 402"},
		{"500 server error", cloudtest.Steel, cloudtest.Status(http.StatusInternalServerError, ""), provider.ErrUnavailable, "status=500", "HTTP 500"},
		// The date is far enough ahead to outlast the parallel rows'
		// setup on a loaded machine: the window comes from it alone.
		{"429 with a date Retry-After", cloudtest.Browserbase,
			cloudtest.RateLimited(time.Now().Add(10 * time.Minute).UTC().Format(http.TimeFormat)), provider.ErrRateLimited, "status=429", "HTTP 429 Too Many Requests (retry after"},
		{"malformed JSON", cloudtest.Browserbase, cloudtest.Malformed(), provider.ErrUnavailable, "create session failed", "provider Browserbase: HTTP 201"},
		{"hang past the deadline", cloudtest.Steel, cloudtest.Hang(), provider.ErrUnavailable, "create session failed", "no answer in time"},
	}
	for _, row := range rows {
		t.Run(row.rule, func(t *testing.T) {
			t.Parallel()
			timeout := 30 * time.Second // a loaded machine answers slowly
			if row.reply.Hang {
				timeout = 3 * time.Second
			}
			w := newWorld(t, row.kind, WithCreateTimeout(timeout))
			withClock(w.r) // the windows stay open however slow the machine
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			require.NoError(t, w.r.Warm(ctx))
			w.api.OnCreate(row.reply)
			res, err := w.r.Navigate(ctx, "k", w.site.url(publicHost, "/page"), nil)
			require.NoError(t, err)
			assert.True(t, res.FallbackFromCloud)
			assert.Equal(t, route.Local, res.Route)
			assert.Contains(t, res.FallbackReason, row.reason)
			assert.NotContains(t, res.FallbackReason, testAPIKey)
			assert.Equal(t, localUA, w.site.uaOf("/page"))
			assert.Equal(t, 1, w.logs.Count(fallbackLine))
			assert.Contains(t, w.logs.String(), row.status)
			assert.NotContains(t, w.logs.String(), testAPIKey)
			assert.ErrorIs(t, w.r.health.Last(), row.sentinel)
			if outage.IsConfigError(row.sentinel) {
				assert.Contains(t, w.logs.String(), "level=ERROR", "a configuration error is an ERROR")
				assert.Contains(t, w.logs.String(), "fix=")
			}

			// Every failure opens a window: a new key goes local without
			// asking the provider.
			res, err = w.r.Navigate(ctx, "k2", w.site.url(publicHost, "/page2"), nil)
			require.NoError(t, err)
			assert.True(t, res.FallbackFromCloud)
			assert.Contains(t, res.FallbackReason, row.reason)
			assert.EqualValues(t, 1, w.api.Creates(), "the window keeps new keys off the provider")
		})
	}
}

// restOnlyProvider is a browser service that exposes only a REST API and
// no CDP: its sessions come back with an ID and an empty CDPURL.
type restOnlyProvider struct {
	name string
	n    atomic.Int64
}

func (r *restOnlyProvider) Name() string { return r.name }
func (r *restOnlyProvider) CreateSession(_ context.Context, key string) (*provider.Session, error) {
	return &provider.Session{Key: key, ID: fmt.Sprintf("rest-%d", r.n.Add(1))}, nil
}
func (r *restOnlyProvider) ReleaseSession(context.Context, *provider.Session) error { return nil }

func TestNoCDPEndpointFailsWithTheExactMessage(t *testing.T) {
	t.Parallel()
	const want = "Cloud browser provider %s returned no CDP endpoint, so Browser Use mode cannot drive it. Switch to the built-in browser tools for this provider."
	ctx := testCtx(t)
	requireChromium(t)

	r := newRouter(t, &restOnlyProvider{name: "AcmeREST"}, &testlog.Buffer{})
	for range 2 { // a failed session never poisons its key, nor fakes success
		_, err := r.Navigate(ctx, "s", "https://"+publicHost+"/", nil)
		require.ErrorIs(t, err, ErrNoCDPEndpoint)
		assert.Contains(t, err.Error(), "Cloud browser provider AcmeREST returned no CDP endpoint, so Browser Use mode cannot drive it. Switch to the built-in browser tools for this provider.")
	}

	w := newWorld(t, cloudtest.Browserbase)
	w.api.OnCreate(cloudtest.NoCDP(), cloudtest.NoCDP())
	_, err := w.r.Navigate(ctx, "s", w.site.url(publicHost, "/x"), nil)
	require.ErrorIs(t, err, ErrNoCDPEndpoint)
	var nc *noCDPError
	require.ErrorAs(t, err, &nc)
	assert.Equal(t, want[:len("Cloud browser provider ")]+"Browserbase"+want[len("Cloud browser provider %s"):], nc.Error())
	assert.EqualValues(t, 1, w.api.Releases(), "the session without an endpoint is given back")
	_, err = w.r.Navigate(ctx, "s", w.site.url(publicHost, "/x"), nil)
	require.ErrorIs(t, err, ErrNoCDPEndpoint)
	assert.EqualValues(t, 2, w.api.Creates(), "nothing was cached: the next call asked again")

	// Once the provider hands out an endpoint, the same key works.
	res, err := w.r.Navigate(ctx, "s", w.site.url(publicHost, "/x"), nil)
	require.NoError(t, err)
	assert.Equal(t, cloudUA, w.site.uaOf("/x"))
	assert.False(t, res.FallbackFromCloud)
}

// fallbackProvider is a provider whose own session layer already fell
// back: its session comes back marked, with no CDP URL.
type fallbackProvider struct {
	creates, releases int
}

func (p *fallbackProvider) Name() string { return "BrowserUseBrowserProvider" }
func (p *fallbackProvider) CreateSession(ctx context.Context, key string) (*provider.Session, error) {
	p.creates++
	return &provider.Session{Key: key, ID: "local-1", FallbackFromCloud: true,
		FallbackReason: "429 RATE_LIMIT_EXCEEDED retryAfter=17 limit=200"}, nil
}
func (p *fallbackProvider) ReleaseSession(ctx context.Context, s *provider.Session) error {
	p.releases++
	return nil
}

func TestProviderMarkedFallbackResolvesLocalEndpoint(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	s := newSite(t)
	logs := &testlog.Buffer{}
	p := &fallbackProvider{}
	r := newRouter(t, p, logs)
	withClock(r) // the provider's window stays open however slow the machine
	ctx := testCtx(t)
	res, err := r.Navigate(ctx, "s", s.url(publicHost, "/seed"), nil)
	require.NoError(t, err, "a fallback session without a CDP URL runs on local Chromium, not the no-endpoint error")
	assert.True(t, res.FallbackFromCloud)
	assert.Equal(t, localUA, s.uaOf("/seed"))
	assert.Equal(t, 1, logs.Count(fallbackLine))
	assert.Contains(t, logs.String(), "RATE_LIMIT_EXCEEDED")
	require.NoError(t, r.Release(ctx, "s"))
	assert.Equal(t, 1, p.releases, "the provider's session is released with the local one")

	// The provider told us the cloud is gone: new keys do not ask it again
	// for a while.
	res, err = r.Navigate(ctx, "t", s.url(publicHost, "/seed"), nil)
	require.NoError(t, err)
	assert.True(t, res.FallbackFromCloud)
	assert.Equal(t, 1, p.creates)
}

func TestCloudAndLocalBothFail(t *testing.T) {
	t.Parallel()
	logs := &testlog.Buffer{}
	site := newSite(t)
	requireChromium(t)
	cloud := cloudtest.LaunchChromium(t)
	api := cloudtest.NewServer(t, cloudtest.Browserbase, cloud.WSURL, cloudtest.WithAPIKey(testAPIKey))
	api.OnCreate(cloudtest.RateLimited("17"))
	r := newRouter(t, provider.NewBrowserbase(testAPIKey, "p", provider.WithBaseURL(api.URL)), logs,
		WithChromiumPath("/nonexistent/chromium"))
	ctx := testCtx(t)
	for range 2 {
		_, err := r.Navigate(ctx, "s", site.url(publicHost, "/"), nil)
		require.ErrorIs(t, err, ErrFallbackFailed)
		require.ErrorIs(t, err, provider.ErrRateLimited, "the cloud's error is wrapped")
		require.ErrorIs(t, err, ErrNoChromium, "the local error is wrapped")
	}
	assert.Equal(t, 1, logs.Count(fallbackLine))
	assert.Equal(t, 1, logs.Count("both failed"), "the double failure is logged once")
	r.mu.Lock()
	assert.Empty(t, r.sess.M, "no failed session is cached")
	r.mu.Unlock()
}

// testHealth is a health over the in-process store with a clock the test
// moves, reading failures as the router does.
func testHealth(capW time.Duration) (*health.Health, *store.Memory, *testClock) {
	c := &testClock{t: time.Now()}
	s := new(store.Memory)
	return health.New(health.Config{Store: s, Provider: "P", Cap: capW, Now: c.now, Explain: outage.Explain(func(err error) string { return fallbackReason("P", err) })}), s, c
}

func TestEveryFailureOpensAWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rows := []struct {
		name string
		errs []error
		want []time.Duration
	}{
		{"429 with Retry-After", []error{&provider.Error{Status: 429, RetryAfter: 17 * time.Second}}, []time.Duration{17 * time.Second}},
		{"Retry-After capped", []error{&provider.Error{Status: 429, RetryAfter: time.Hour}}, []time.Duration{time.Minute}},
		{"429 without Retry-After grows", []error{&provider.Error{Status: 429}, &provider.Error{Status: 429}}, []time.Duration{5 * time.Second, 10 * time.Second}},
		{"5xx, hang, malformed, unreachable, marked grow to the cap", []error{
			&provider.Error{Status: 500},
			&provider.Error{Err: context.DeadlineExceeded},
			&provider.Error{Status: 201, Err: errors.New("unexpected EOF")},
			errors.New("connecting to session s of P: connection refused"),
			fmt.Errorf("%w: x", outage.ErrProviderFellBack),
			&provider.Error{Status: 503},
		}, []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, time.Minute, time.Minute}},
		{"401 stays at the cap", []error{&provider.Error{Status: 401}, &provider.Error{Status: 429, RetryAfter: time.Second}}, []time.Duration{time.Minute, time.Minute}},
		{"402 stays at the cap", []error{&provider.Error{Status: 402}}, []time.Duration{time.Minute}},
		{"403 stays at the cap", []error{&provider.Error{Status: 403}}, []time.Duration{time.Minute}},
	}
	for _, row := range rows {
		h, store, clock := testHealth(time.Minute)
		for i, err := range row.errs {
			first, w, reason := h.Failed(ctx, err)
			assert.Equal(t, i == 0, first, "%s: one log line per outage", row.name)
			assert.Equal(t, row.want[i], w, "%s: failure %d", row.name, i)
			assert.NotEmpty(t, reason)
			until, got, _ := store.Window(ctx, "P")
			if outage.IsConfigError(err) {
				// Not an outage: no window in the fleet's store, but this
				// process holds its creations off the provider, with the
				// refusal as the reason, until the window has passed.
				assert.True(t, until.IsZero(), "%s: a configuration error opens no window in the store", row.name)
				adm, why := h.Admit(ctx, time.Second)
				assert.Equal(t, health.Refused, adm, "%s: the refusal is held", row.name)
				assert.Equal(t, reason, why)
				continue
			}
			if i == 0 {
				assert.Equal(t, reason, got, "the window carries its reason")
			}
			assert.True(t, until.After(clock.now()), "%s: the window is open", row.name)
		}
		// A success that began after the failures ends the outage and the
		// growth: the next failure opens the shortest window again.
		clock.advance(time.Second)
		assert.True(t, h.Succeeded(ctx, clock.now()), row.name)
		until, _, _ := store.Window(ctx, "P")
		assert.True(t, until.IsZero(), "%s: a success closes the window", row.name)
		adm, _ := h.Admit(ctx, time.Second)
		assert.Equal(t, health.Cloud, adm, "%s: a success ends a held refusal", row.name)
		_, w, _ := h.Failed(ctx, &provider.Error{Status: 500})
		assert.Equal(t, 5*time.Second, w, row.name)
	}
}

func TestFallbackReasonIsShortAndKeyFree(t *testing.T) {
	t.Parallel()
	pe := &provider.Error{Provider: "Browserbase", Op: "create", Status: 429, Code: "RATE_LIMIT_EXCEEDED",
		Message: "slow down", RetryAfter: 17 * time.Second, Limit: 200}
	assert.Equal(t, "provider Browserbase: HTTP 429 RATE_LIMIT_EXCEEDED (retry after 17s)", fallbackReason("Browserbase", pe))
	assert.Equal(t, "provider Steel: HTTP 500", fallbackReason("Steel", &provider.Error{Status: 500}))
	assert.Equal(t, "provider Steel: no answer in time",
		fallbackReason("Steel", &provider.Error{Err: fmt.Errorf("post: %w", context.DeadlineExceeded)}))
	long := fallbackReason("X", errors.New(strings.Repeat("é", 500)))
	assert.Less(t, len(long), 200)
	assert.True(t, utf8.ValidString(long))
}

// BenchmarkRateLimitToLoadedLocalPage is the rate-limited morning job: from the
// provider's 429 to a page loaded in local Chromium, on a warm sidecar. The
// window is capped to nothing so every iteration asks the provider again.
func BenchmarkRateLimitToLoadedLocalPage(b *testing.B) {
	w := newWorld(b, cloudtest.Browserbase, WithProviderBackoffCap(time.Nanosecond))
	ctx := testCtx(b)
	page := w.site.url(publicHost, "/bench")
	warm := func(key string) {
		w.api.OnCreate(cloudtest.RateLimited("17"))
		res, err := w.r.Navigate(ctx, key, page, nil)
		require.NoError(b, err)
		require.True(b, res.FallbackFromCloud)
	}
	warm("warmup")
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		key := "k" + strconv.Itoa(i)
		w.api.OnCreate(cloudtest.RateLimited("17"))
		b.StartTimer()
		res, err := w.r.Navigate(ctx, key, page, nil)
		b.StopTimer()
		require.NoError(b, err)
		require.True(b, res.FallbackFromCloud)
		require.NoError(b, w.r.Release(ctx, key))
		b.StartTimer()
	}
}

func TestHealthIgnoresSuccessOlderThanTheFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, _, clock := testHealth(time.Minute)
	t0 := clock.now()
	first, window, _ := h.Failed(ctx, &provider.Error{Status: 429, RetryAfter: 17 * time.Second})
	assert.True(t, first)
	assert.Equal(t, 17*time.Second, window)
	clock.advance(time.Second)
	first, _, _ = h.Failed(ctx, &provider.Error{Status: 429, RetryAfter: time.Second})
	assert.False(t, first, "one outage, one log line")
	clock.advance(9 * time.Second)
	adm, _ := h.Admit(ctx, time.Second)
	assert.Equal(t, health.Local, adm, "a shorter later window does not shorten the open one")

	assert.False(t, h.Succeeded(ctx, t0), "a creation that began before the 429 proves nothing")
	adm, _ = h.Admit(ctx, time.Second)
	assert.Equal(t, health.Local, adm)

	assert.True(t, h.Succeeded(ctx, clock.now()), "a creation that began after it ends the outage")
	adm, _ = h.Admit(ctx, time.Second)
	assert.Equal(t, health.Cloud, adm, "healthy: no probe needed")
	first, _, _ = h.Failed(ctx, errors.New("x"))
	assert.True(t, first, "the next outage is logged again")
}

// While the health is unknown, one creation probes and the others wait for
// its answer: a failure sends them local, a success to the cloud.
func TestOneProbeTheOthersWait(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	for _, ok := range []bool{false, true} {
		h, _, clock := testHealth(time.Minute)
		adm, _ := h.Admit(ctx, time.Second)
		require.Equal(t, health.Probe, adm, "unknown: the first creation probes")
		const waiters = 20
		got := make(chan health.Admission, waiters)
		for range waiters {
			go func() { a, _ := h.Admit(ctx, 30*time.Second); got <- a }()
		}
		select {
		case a := <-got:
			t.Fatalf("a waiter went on (%v) before the probe answered", a)
		case <-time.After(50 * time.Millisecond):
		}
		if ok {
			h.Succeeded(ctx, clock.now())
		} else {
			h.Failed(ctx, &provider.Error{Status: 429, RetryAfter: 17 * time.Second})
		}
		h.ProbeDone()
		want := health.Local
		if ok {
			want = health.Cloud
		}
		for range waiters {
			select {
			case a := <-got:
				assert.Equal(t, want, a, "probe ok=%v", ok)
			case <-time.After(10 * time.Second):
				t.Fatal("a waiter did not wake up")
			}
		}
	}

	// A waiter whose budget runs short goes local without calling the
	// provider.
	h, _, _ := testHealth(time.Minute)
	adm, _ := h.Admit(ctx, time.Second)
	require.Equal(t, health.Probe, adm)
	adm, reason := h.Admit(ctx, 20*time.Millisecond)
	assert.Equal(t, health.Local, adm)
	assert.Contains(t, reason, "probe")
	h.ProbeDone()

	// The window ends: the next creation probes again, once.
	h2, _, clock := testHealth(time.Minute)
	h2.Failed(ctx, &provider.Error{Status: 429, RetryAfter: 2 * time.Second})
	clock.advance(3 * time.Second)
	adm, _ = h2.Admit(ctx, time.Second)
	assert.Equal(t, health.Probe, adm)
	adm, _ = h2.Admit(ctx, 10*time.Millisecond)
	assert.Equal(t, health.Local, adm, "one probe per window end")
	h2.ProbeDone()
}

func TestStrictFallbackStillRefusesPrivate(t *testing.T) {
	t.Parallel()
	// Auto-local off: private URLs are rejected. A cloud session that fell
	// back to local Chromium must not become a way around that.
	w := newWorld(t, cloudtest.Browserbase, WithAutoLocalForPrivateURLs(false))
	w.api.OnCreate(cloudtest.RateLimited("17"))
	ctx := testCtx(t)
	to := w.site.url(publicHost, "/redirect-to/127.0.0.1:"+w.site.port+"/lan")
	res, err := w.r.Navigate(ctx, "s", to, nil)
	require.ErrorIs(t, err, netpolicy.ErrPrivate)
	assert.True(t, res.FallbackFromCloud)
	assert.Empty(t, w.site.uaOf("/lan"), "the redirect was refused on the fallback too")
}
