package hybroute

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
)

const fallbackLine = "falling back to local Chromium"

// The seed's story: the provider answers 429 RATE_LIMIT_EXCEEDED, and the
// morning screenshot is taken anyway, on local Chromium, with one log line.
func TestSeedStoryRateLimitFallsBackToLocal(t *testing.T) {
	t.Parallel()
	w := newWorld(t, cloudtest.Browserbase)
	withClock(w.r) // the advertised window stays open however slow the machine
	w.api.OnCreate(cloudtest.RateLimited("17"))
	ctx := testCtx(t)
	dash := w.site.url(publicHost, "/dashboard")

	var png []byte
	res, err := w.r.Exec(ctx, "morning", `await page.goto("`+dash+`"); await page.screenshot()`,
		func(ctx context.Context) error {
			if err := chromedp.Do(ctx, chromedp.Navigate(dash)); err != nil {
				return err
			}
			var err error
			png, err = chromedp.Run(ctx, chromedp.CaptureScreenshot())
			return err
		})
	require.NoError(t, err)
	assert.True(t, res.FallbackFromCloud, "the call ran on the fallback")
	assert.Equal(t, RouteLocal, res.Route, "it ran on local Chromium")
	assert.Equal(t, "morning", res.CacheKey, "in the cloud session's place, not the ::local sidecar")
	assert.Equal(t, dash, res.LandedURL)
	assert.Equal(t, localUA, w.site.uaOf("/dashboard"), "the page was loaded by the local Chromium")
	require.Greater(t, len(png), 1000)
	assert.Equal(t, "\x89PNG", string(png[:4]))
	assert.Equal(t, 1, w.logs.count(fallbackLine), w.logs.String())
	assert.Contains(t, w.logs.String(), "status=429")
	assert.Contains(t, w.logs.String(), "retry_after=17s")
	assert.Contains(t, w.logs.String(), "provider=Browserbase")
	assert.NotContains(t, w.logs.String(), testAPIKey)
	assert.EqualValues(t, 1, w.api.Creates())

	// The same key keeps its browser; a new key goes straight to local
	// while the advertised window is open. Neither calls the provider.
	res, err = w.r.Navigate(ctx, "morning", w.site.url(publicHost, "/again"))
	require.NoError(t, err)
	assert.True(t, res.FallbackFromCloud)
	res, err = w.r.Navigate(ctx, "evening", w.site.url(publicHost, "/other"))
	require.NoError(t, err)
	assert.True(t, res.FallbackFromCloud)
	assert.Equal(t, localUA, w.site.uaOf("/other"))
	assert.EqualValues(t, 1, w.api.Creates(), "no provider call while the Retry-After window is open")
	assert.Equal(t, 1, w.logs.count(fallbackLine), "the outage is logged once")
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
	_, err := w.r.Navigate(ctx, "s", w.site.url(publicHost, "/a"))
	require.NoError(t, err)
	_, err = w.r.Exec(ctx, "s", "", func(ctx context.Context) error {
		return chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`localStorage.setItem("k", "kept")`))
	})
	require.NoError(t, err)
	clock.advance(18 * time.Second) // past the 429's window

	// The provider is healthy again, but the session on the fallback
	// keeps its browser (its storage) until it is released.
	var got string
	res, err := w.r.Exec(ctx, "s", "", func(ctx context.Context) (err error) {
		got, err = chromedp.Run(ctx, chromedp.Evaluate[string](`localStorage.getItem("k")`))
		return err
	})
	require.NoError(t, err)
	assert.True(t, res.FallbackFromCloud)
	assert.Equal(t, "kept", got)
	assert.EqualValues(t, 1, w.api.Creates())

	// A new key after the window tries the cloud again, and gets it.
	res, err = w.r.Navigate(ctx, "t", w.site.url(publicHost, "/cloud"))
	require.NoError(t, err)
	assert.False(t, res.FallbackFromCloud)
	assert.Equal(t, cloudUA, w.site.uaOf("/cloud"))
	assert.EqualValues(t, 2, w.api.Creates())
	assert.Equal(t, 1, w.logs.count("cloud provider recovered"))

	// A new outage after the recovery is logged again, once.
	w.api.OnCreate(cloudtest.RateLimited("17"), cloudtest.RateLimited("17"))
	for _, k := range []string{"u", "v"} {
		clock.advance(18 * time.Second) // past the window: both ask the provider
		res, err = w.r.Navigate(ctx, k, w.site.url(publicHost, "/"+k))
		require.NoError(t, err)
		assert.True(t, res.FallbackFromCloud)
	}
	assert.EqualValues(t, 4, w.api.Creates())
	assert.Equal(t, 2, w.logs.count(fallbackLine), "one line for the first outage, one for the second")

	// Releasing the fallback session gives a fresh start on the cloud,
	// once the second outage's window has passed.
	clock.advance(18 * time.Second)
	require.NoError(t, w.r.Release(ctx, "s"))
	res, err = w.r.Navigate(ctx, "s", w.site.url(publicHost, "/back"))
	require.NoError(t, err)
	assert.False(t, res.FallbackFromCloud)
	assert.Equal(t, cloudUA, w.site.uaOf("/back"))
}

func TestProviderFailuresFallBack(t *testing.T) {
	// Not parallel: its creation timeout is sized for a machine to itself.
	rows := []struct {
		rule     string
		kind     cloudtest.Kind
		reply    cloudtest.Reply
		sentinel error
		status   string
	}{
		{"401 unauthorized", cloudtest.Browserbase, cloudtest.Status(http.StatusUnauthorized, ""), ErrUnauthorized, "status=401"},
		{"402 payment required", cloudtest.BrowserUse, cloudtest.Status(http.StatusPaymentRequired, ""), ErrPaymentRequired, "status=402"},
		{"500 server error", cloudtest.Steel, cloudtest.Status(http.StatusInternalServerError, ""), ErrProviderUnavailable, "status=500"},
		{"429 with a date Retry-After", cloudtest.Browserbase,
			cloudtest.RateLimited(time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)), ErrRateLimited, "status=429"},
		{"malformed JSON", cloudtest.Browserbase, cloudtest.Malformed(), ErrProviderUnavailable, "create session failed"},
		{"hang past the deadline", cloudtest.Steel, cloudtest.Hang(), ErrProviderUnavailable, "create session failed"},
	}
	for _, row := range rows {
		t.Run(row.rule, func(t *testing.T) {
			w := newWorld(t, row.kind, WithCreateTimeout(8*time.Second))
			ctx := testCtx(t)
			// The local Chromium is warm, so that the creation timeout
			// bounds the provider's part and a tab, not a cold start.
			warm, err := w.r.side.open(ctx, "warm")
			require.NoError(t, err)
			require.NoError(t, warm.close())
			w.api.OnCreate(row.reply)
			res, err := w.r.Navigate(ctx, "k", w.site.url(publicHost, "/page"))
			require.NoError(t, err)
			assert.True(t, res.FallbackFromCloud)
			assert.Equal(t, localUA, w.site.uaOf("/page"))
			assert.Equal(t, 1, w.logs.count(fallbackLine))
			assert.Contains(t, w.logs.String(), row.status)
			assert.NotContains(t, w.logs.String(), testAPIKey)
			w.r.back.mu.Lock()
			lastErr := w.r.back.lastErr
			w.r.back.mu.Unlock()
			assert.ErrorIs(t, lastErr, row.sentinel)
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
func (r *restOnlyProvider) CreateSession(_ context.Context, key string) (*Session, error) {
	return &Session{Key: key, ID: fmt.Sprintf("rest-%d", r.n.Add(1))}, nil
}
func (r *restOnlyProvider) ReleaseSession(context.Context, *Session) error { return nil }

func TestNoCDPEndpointFailsWithTheExactMessage(t *testing.T) {
	t.Parallel()
	const want = "Cloud browser provider %s returned no CDP endpoint, so Browser Use mode cannot drive it. Switch to the built-in browser tools for this provider."
	ctx := testCtx(t)
	requireChromium(t)

	r := newBrowserRouter(t, &restOnlyProvider{name: "AcmeREST"}, &logBuffer{})
	for range 2 { // a failed session never poisons its key, nor fakes success
		_, err := r.Navigate(ctx, "s", "https://"+publicHost+"/")
		require.ErrorIs(t, err, ErrNoCDPEndpoint)
		assert.Contains(t, err.Error(), "Cloud browser provider AcmeREST returned no CDP endpoint, so Browser Use mode cannot drive it. Switch to the built-in browser tools for this provider.")
	}

	w := newWorld(t, cloudtest.Browserbase)
	w.api.OnCreate(cloudtest.NoCDP(), cloudtest.NoCDP())
	_, err := w.r.Navigate(ctx, "s", w.site.url(publicHost, "/x"))
	require.ErrorIs(t, err, ErrNoCDPEndpoint)
	var nc *noCDPError
	require.ErrorAs(t, err, &nc)
	assert.Equal(t, want[:len("Cloud browser provider ")]+"Browserbase"+want[len("Cloud browser provider %s"):], nc.Error())
	assert.EqualValues(t, 1, w.api.Releases(), "the session without an endpoint is given back")
	_, err = w.r.Navigate(ctx, "s", w.site.url(publicHost, "/x"))
	require.ErrorIs(t, err, ErrNoCDPEndpoint)
	assert.EqualValues(t, 2, w.api.Creates(), "nothing was cached: the next call asked again")

	// Once the provider hands out an endpoint, the same key works.
	res, err := w.r.Navigate(ctx, "s", w.site.url(publicHost, "/x"))
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
func (p *fallbackProvider) CreateSession(ctx context.Context, key string) (*Session, error) {
	p.creates++
	return &Session{Key: key, ID: "local-1", FallbackFromCloud: true,
		FallbackReason: "429 RATE_LIMIT_EXCEEDED retryAfter=17 limit=200"}, nil
}
func (p *fallbackProvider) ReleaseSession(ctx context.Context, s *Session) error {
	p.releases++
	return nil
}

func TestProviderMarkedFallbackResolvesLocalEndpoint(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	s := newSite(t)
	logs := &logBuffer{}
	p := &fallbackProvider{}
	r := newBrowserRouter(t, p, logs)
	withClock(r) // the provider's window stays open however slow the machine
	ctx := testCtx(t)
	res, err := r.Navigate(ctx, "s", s.url(publicHost, "/seed"))
	require.NoError(t, err, "a fallback session without a CDP URL runs on local Chromium, not the no-endpoint error")
	assert.True(t, res.FallbackFromCloud)
	assert.Equal(t, localUA, s.uaOf("/seed"))
	assert.Equal(t, 1, logs.count(fallbackLine))
	assert.Contains(t, logs.String(), "RATE_LIMIT_EXCEEDED")
	require.NoError(t, r.Release(ctx, "s"))
	assert.Equal(t, 1, p.releases, "the provider's session is released with the local one")

	// The provider told us the cloud is gone: new keys do not ask it again
	// for a while.
	res, err = r.Navigate(ctx, "t", s.url(publicHost, "/seed"))
	require.NoError(t, err)
	assert.True(t, res.FallbackFromCloud)
	assert.Equal(t, 1, p.creates)
}

func TestCloudAndLocalBothFail(t *testing.T) {
	t.Parallel()
	logs := &logBuffer{}
	site := newSite(t)
	requireChromium(t)
	cloud := cloudtest.LaunchChromium(t)
	api := cloudtest.NewServer(t, cloudtest.Browserbase, cloud.WSURL, cloudtest.WithAPIKey(testAPIKey))
	api.OnCreate(cloudtest.RateLimited("17"))
	r := newBrowserRouter(t, NewBrowserbase(testAPIKey, "p", WithProviderBaseURL(api.URL)), logs,
		WithChromiumPath("/nonexistent/chromium"))
	ctx := testCtx(t)
	for range 2 {
		_, err := r.Navigate(ctx, "s", site.url(publicHost, "/"))
		require.ErrorIs(t, err, ErrFallbackFailed)
		require.ErrorIs(t, err, ErrRateLimited, "the cloud's error is wrapped")
		require.ErrorIs(t, err, ErrNoChromium, "the local error is wrapped")
	}
	assert.Equal(t, 1, logs.count(fallbackLine))
	assert.Equal(t, 1, logs.count("both failed"), "the double failure is logged once")
	r.mu.Lock()
	assert.Empty(t, r.sess.m, "no failed session is cached")
	r.mu.Unlock()
}

func TestRetryWindow(t *testing.T) {
	t.Parallel()
	pe := &ProviderError{Status: 429, RetryAfter: 17 * time.Second}
	assert.Equal(t, 17*time.Second, retryWindow(pe, 5*time.Minute))
	assert.Equal(t, time.Minute, retryWindow(&ProviderError{Status: 429, RetryAfter: time.Hour}, time.Minute), "capped")
	assert.Equal(t, time.Duration(0), retryWindow(errors.New("x"), time.Minute))
	assert.Equal(t, time.Duration(0), retryWindow(&ProviderError{Status: 500, Err: ErrProviderUnavailable}, time.Minute))
	assert.Equal(t, defaultRateLimitWindow, retryWindow(&ProviderError{Status: 429, Err: ErrRateLimited}, time.Hour),
		"a 429 without Retry-After still keeps new sessions away")
}

// BenchmarkRateLimitToLoadedLocalPage is the seed's morning: from the
// provider's 429 to a page loaded in local Chromium, on a warm sidecar. The
// window is capped to nothing so every iteration asks the provider again.
func BenchmarkRateLimitToLoadedLocalPage(b *testing.B) {
	w := newWorld(b, cloudtest.Browserbase, WithProviderBackoffCap(time.Nanosecond))
	ctx := testCtx(b)
	page := w.site.url(publicHost, "/bench")
	warm := func(key string) {
		w.api.OnCreate(cloudtest.RateLimited("17"))
		res, err := w.r.Navigate(ctx, key, page)
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
		res, err := w.r.Navigate(ctx, key, page)
		b.StopTimer()
		require.NoError(b, err)
		require.True(b, res.FallbackFromCloud)
		require.NoError(b, w.r.Release(ctx, key))
		b.StartTimer()
	}
}

func TestBackoffIgnoresSuccessOlderThanTheFailure(t *testing.T) {
	t.Parallel()
	var b backoff
	t0 := time.Now()
	first, window := b.failed(t0, &ProviderError{Status: 429, RetryAfter: 17 * time.Second}, time.Minute)
	assert.True(t, first)
	assert.Equal(t, 17*time.Second, window)
	first, _ = b.failed(t0.Add(time.Second), &ProviderError{Status: 429, RetryAfter: time.Second}, time.Minute)
	assert.False(t, first, "one outage, one log line")
	skip, _ := b.skip(t0.Add(10 * time.Second))
	assert.True(t, skip, "a shorter later window does not shorten the open one")

	assert.False(t, b.succeeded(t0.Add(-time.Second)), "a creation that began before the 429 proves nothing")
	skip, _ = b.skip(t0.Add(10 * time.Second))
	assert.True(t, skip)

	assert.True(t, b.succeeded(t0.Add(2*time.Second)), "a creation that began after it ends the outage")
	skip, _ = b.skip(t0.Add(10 * time.Second))
	assert.False(t, skip)
	first, _ = b.failed(t0.Add(20*time.Second), errors.New("x"), time.Minute)
	assert.True(t, first, "the next outage is logged again")
}

func TestStrictFallbackStillRefusesPrivate(t *testing.T) {
	t.Parallel()
	// Auto-local off: private URLs are rejected. A cloud session that fell
	// back to local Chromium must not become a way around that.
	w := newWorld(t, cloudtest.Browserbase, WithAutoLocalForPrivateURLs(false))
	w.api.OnCreate(cloudtest.RateLimited("17"))
	ctx := testCtx(t)
	to := w.site.url(publicHost, "/redirect-to/127.0.0.1:"+w.site.port+"/lan")
	res, err := w.r.Navigate(ctx, "s", to)
	require.ErrorIs(t, err, ErrPrivate)
	assert.True(t, res.FallbackFromCloud)
	assert.Empty(t, w.site.uaOf("/lan"), "the redirect was refused on the fallback too")
}
