package hybroute

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/camofoxtest"
	"github.com/hybroute/hybroute/internal/testlog"
	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/provider"
	"github.com/hybroute/hybroute/route"
)

// camofoxWorld is a router on a Camofox stand-in (a real Chromium behind
// the documented REST endpoints), the sidecar, and the site.
type camofoxWorld struct {
	site *site
	cf   *camofoxtest.Server
	r    *Router
	logs *testlog.Buffer
}

const camofoxKey = "cf_access_key_0123456789"

// camofoxCtx bounds a Camofox test. Wider than testCtx: each session and
// each replaced tab is a new connection and browser context on the
// stand-in's Chromium, which a loaded machine makes slowly.
func camofoxCtx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	tb.Cleanup(cancel)
	return ctx
}

func newCamofoxWorld(t *testing.T, opts ...Option) *camofoxWorld {
	t.Helper()
	requireChromium(t)
	w := &camofoxWorld{site: newSite(t), logs: &testlog.Buffer{}}
	w.cf = camofoxtest.New(t, camofoxKey, "--user-agent="+cloudUA, "--host-resolver-rules="+hostRules)
	w.r = newRouter(t, provider.NewCamofox(camofoxKey, provider.WithBaseURL(w.cf.URL)), w.logs, opts...)
	return w
}

// requestsOf counts the requests of the stand-in whose "METHOD /path"
// has the prefix and the suffix.
func (w *camofoxWorld) requestsOf(prefix, suffix string) int {
	n := 0
	for _, r := range w.cf.Requests() {
		if strings.HasPrefix(r, prefix) && strings.HasSuffix(r, suffix) {
			n++
		}
	}
	return n
}

func TestCamofoxDrivesAPublicPageThroughREST(t *testing.T) {
	t.Parallel()
	ctx := camofoxCtx(t)
	w := newCamofoxWorld(t)

	res, err := w.r.Navigate(ctx, "s", w.site.url(publicHost, "/report"), nil)
	require.NoError(t, err)
	assert.Equal(t, route.Cloud, res.Route)
	assert.False(t, res.FallbackFromCloud)
	assert.Equal(t, w.site.url(publicHost, "/report"), res.LandedURL, "the landing is what the REST answer reported")
	assert.Equal(t, cloudUA, w.site.uaOf("/report"), "the Camofox browser loaded it")
	assert.Equal(t, 1, w.requestsOf("POST /tabs", "/tabs"), "one tab for the session")
	assert.Equal(t, 1, w.requestsOf("POST /tabs/", "/navigate"))

	var text, png string
	res, err = w.r.Exec(ctx, "s", "", func(ctx context.Context, call *Call) error {
		page := call.REST()
		require.NotNil(t, page, "a Camofox session is driven through its page")
		var err error
		if text, _, err = page.Snapshot(ctx); err != nil {
			return err
		}
		b, err := page.Screenshot(ctx, false)
		png = string(b)
		return err
	}, DrivesREST())
	require.NoError(t, err)
	assert.Contains(t, text, `- heading "Revenue: 42" [level=1]`)
	assert.True(t, strings.HasPrefix(png, "\x89PNG"))
	assert.Equal(t, w.site.url(publicHost, "/report"), res.LandedURL)

	// Release closes the tab and the user's browser session on the server.
	require.NoError(t, w.r.Release(ctx, "s"))
	assert.Equal(t, 0, w.cf.OpenTabs())
	assert.Equal(t, 1, w.requestsOf("DELETE /sessions/", ""))
}

func TestCamofoxPrivateURLRunsOnTheSidecar(t *testing.T) {
	t.Parallel()
	ctx := camofoxCtx(t)
	w := newCamofoxWorld(t)

	res, err := w.r.Navigate(ctx, "s", w.site.url("127.0.0.1", "/local"), nil)
	require.NoError(t, err)
	assert.Equal(t, route.Local, res.Route)
	assert.Equal(t, "s"+LocalSuffix, res.CacheKey)
	assert.Equal(t, localUA, w.site.uaOf("/local"), "the local Chromium loaded it")
	assert.Empty(t, w.cf.Requests(), "the Camofox server never heard of the private URL")

	// The sidecar speaks CDP: chromedp code runs there.
	res, err = w.r.Exec(ctx, "s", `fetch("http://127.0.0.1:1/")`, func(ctx context.Context, call *Call) error {
		title, err := pageTitle(ctx)
		assert.Equal(t, "/local", title)
		return err
	})
	require.NoError(t, err)
	assert.Equal(t, route.Local, res.Route)
}

func TestCamofoxMetadataIsRefusedBeforeAnyRequest(t *testing.T) {
	t.Parallel()
	ctx := camofoxCtx(t)
	w := newCamofoxWorld(t)

	for _, u := range []string{"http://169.254.169.254/latest/meta-data/", w.site.url(metadataHost, "/computeMetadata/v1/")} {
		_, err := w.r.Navigate(ctx, "s", u, nil)
		require.ErrorIs(t, err, netpolicy.ErrMetadata, u)
		_, err = w.r.Exec(ctx, "s", `fetch("`+u+`")`, func(context.Context, *Call) error {
			t.Error("a call naming metadata ran")
			return nil
		}, DrivesREST())
		require.ErrorIs(t, err, netpolicy.ErrMetadata, u)
	}
	assert.Empty(t, w.cf.Requests(), "no request reached the Camofox server")
	assert.Empty(t, w.site.hitsFor(metadataHost))
}

func TestCamofoxLandingIsCheckedFromTheRESTAnswer(t *testing.T) {
	t.Parallel()
	ctx := camofoxCtx(t)
	w := newCamofoxWorld(t)

	cases := []struct {
		name, to string
		want     error
	}{
		{"metadata", metadataHost + ":" + w.site.port + "/computeMetadata/v1/", netpolicy.ErrMetadata},
		{"private", "127.0.0.1:" + w.site.port + "/admin", netpolicy.ErrPrivate},
	}
	for _, c := range cases {
		start := w.requestsOf("DELETE /tabs/", "")
		u := w.site.url(publicHost, "/redirect-to/"+c.to)
		res, err := w.r.Navigate(ctx, "s", u, nil)
		require.ErrorIs(t, err, c.want, c.name)
		assert.Contains(t, err.Error(), "landed on a blocked address", c.name)
		assert.True(t, res.SentToBlank, "%s: the tab was replaced by a blank one", c.name)
		assert.Equal(t, "http://"+c.to, res.LandedURL, "%s: the URL the REST answer reported", c.name)
		assert.Equal(t, start+1, w.requestsOf("DELETE /tabs/", ""), "%s: the refused tab was closed on the server", c.name)
		assert.Equal(t, 1, w.cf.OpenTabs(), "%s: a fresh tab stands in", c.name)

		// Nothing is read from the blank tab's predecessor: the next read
		// asks where the tab is, and it is nowhere blocked.
		res, err = w.r.Exec(ctx, "s", "", func(ctx context.Context, call *Call) error {
			page := call.REST()
			_, err := page.CheckPage(ctx)
			return err
		}, DrivesREST())
		require.NoError(t, err, c.name)
		assert.Equal(t, "about:blank", res.LandedURL, c.name)
	}
}

func TestCamofoxExecWithCDPCodeFailsWithTheSeedMessage(t *testing.T) {
	t.Parallel()
	ctx := camofoxCtx(t)
	w := newCamofoxWorld(t)

	for range 2 {
		res, err := w.r.Exec(ctx, "s", "document.title", func(context.Context, *Call) error {
			t.Error("CDP code ran on a session without CDP")
			return nil
		})
		require.ErrorIs(t, err, ErrNoCDPEndpoint)
		assert.Contains(t, err.Error(), "Cloud browser provider Camofox returned no CDP endpoint, so Browser Use mode cannot drive it. Switch to the built-in browser tools for this provider.")
		assert.Equal(t, route.Cloud, res.Route)
		assert.False(t, res.FallbackFromCloud)
	}
	// A Navigate with a run of its own, without DrivesREST, speaks CDP too.
	_, err := w.r.Navigate(ctx, "s", w.site.url(publicHost, "/x"), func(context.Context, *Call) error {
		t.Error("CDP code ran on a session without CDP")
		return nil
	})
	require.ErrorIs(t, err, ErrNoCDPEndpoint)
	assert.False(t, w.site.reached("/x"))
	assert.Equal(t, 1, w.requestsOf("POST /tabs", "/tabs"), "one session, kept for the REST calls")
}

func TestCamofoxFallbackTakesTheCDPCall(t *testing.T) {
	t.Parallel()
	ctx := camofoxCtx(t)
	w := newCamofoxWorld(t)
	w.cf.FailCreates(429)

	res, err := w.r.Exec(ctx, "s", "document.title", func(ctx context.Context, call *Call) error {
		_, err := pageTitle(ctx)
		return err
	})
	require.NoError(t, err, "the local Chromium stands in, and it speaks CDP")
	assert.True(t, res.FallbackFromCloud)
	assert.Equal(t, route.Local, res.Route)
	assert.Contains(t, res.FallbackReason, "429")
	assert.Equal(t, 1, w.logs.Count("cloud provider failed, falling back"))
}

func TestCamofoxRefusesAWrongAccessKey(t *testing.T) {
	t.Parallel()
	ctx := camofoxCtx(t)
	requireChromium(t)
	cf := camofoxtest.New(t, camofoxKey, "--user-agent="+cloudUA)
	r := newRouter(t, provider.NewCamofox("wrong", provider.WithBaseURL(cf.URL)), &testlog.Buffer{}, WithFallback(false))

	_, err := r.Navigate(ctx, "s", "https://"+publicHost+"/", nil)
	require.ErrorIs(t, err, provider.ErrAuth)
	assert.NotContains(t, err.Error(), "wrong")
	assert.True(t, slices.Contains(cf.Requests(), "POST /tabs"))
}

func TestCamofoxTabTheServerLostEndsTheSession(t *testing.T) {
	t.Parallel()
	ctx := camofoxCtx(t)
	w := newCamofoxWorld(t)

	_, err := w.r.Navigate(ctx, "s", w.site.url(publicHost, "/one"), nil)
	require.NoError(t, err)
	w.cf.Forget() // a server restart

	_, err = w.r.Navigate(ctx, "s", w.site.url(publicHost, "/two"), nil)
	require.ErrorIs(t, err, ErrBrowserDead)
	assert.Contains(t, err.Error(), "the tab of Camofox is gone")
	assert.False(t, w.site.reached("/two"))

	res, err := w.r.Navigate(ctx, "s", w.site.url(publicHost, "/two"), nil)
	require.NoError(t, err, "the next call makes a new session")
	assert.Equal(t, w.site.url(publicHost, "/two"), res.LandedURL)
	assert.Equal(t, 2, w.requestsOf("POST /tabs", "/tabs"))
}

// Each session is a userId of its own on the server (Camofox isolates
// cookies and storage by userId), and two clients never share one.
func TestCamofoxSessionsAreUsersOfTheirOwn(t *testing.T) {
	t.Parallel()
	ctx := camofoxCtx(t)
	w := newCamofoxWorld(t)
	other := newRouter(t, provider.NewCamofox(camofoxKey, provider.WithBaseURL(w.cf.URL)), &testlog.Buffer{})

	for _, r := range []*Router{w.r, other} {
		for _, key := range []string{"a", "b"} {
			_, err := r.Navigate(ctx, key, w.site.url(publicHost, "/"+key), nil)
			require.NoError(t, err)
		}
	}
	users := w.cf.Users()
	require.Len(t, users, 4)
	assert.Len(t, slices.Compact(slices.Clone(users)), 4, "no two sessions share a userId: %v", users)
	for _, u := range users {
		assert.True(t, strings.HasPrefix(u, "hybroute-"), u)
		assert.True(t, strings.HasSuffix(u, "-a") || strings.HasSuffix(u, "-b"), u)
	}
}

// BenchmarkCamofoxREST is one Exec call with DrivesREST on a live Camofox session that
// asks the server where the tab is and re-checks it: the router's part of
// a REST call, on loopback.
func BenchmarkCamofoxREST(b *testing.B) {
	requireChromium(b)
	s := newSite(b)
	cf := camofoxtest.New(b, "", "--user-agent="+cloudUA, "--host-resolver-rules="+hostRules)
	r := newRouter(b, provider.NewCamofox("", provider.WithBaseURL(cf.URL)), &testlog.Buffer{})
	ctx := context.Background()
	_, err := r.Navigate(ctx, "s", s.url(publicHost, "/"), nil)
	require.NoError(b, err)
	for b.Loop() {
		if _, err := r.Exec(ctx, "s", "", func(ctx context.Context, call *Call) error {
			page := call.REST()
			_, err := page.CheckPage(ctx)
			return err
		}, DrivesREST()); err != nil {
			b.Fatal(err)
		}
	}
}
