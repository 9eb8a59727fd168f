package hybroute

import (
	"bytes"
	"context"
	"image/png"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/testlog"
	"github.com/hybroute/hybroute/route"
)

// One session, one page: code runs where the session's page is, a
// navigation picks the browser, a private target still pulls a call local,
// and the result says when the page changed browsers.
func TestOneSessionOnePage(t *testing.T) {
	t.Parallel()
	w := sharedWorld(t)
	ctx := testCtx(t)

	res, err := w.r.Navigate(ctx, w.sess, w.site.url("localhost", "/dev"), nil)
	require.NoError(t, err)
	assert.Equal(t, w.sess+"::local", res.CacheKey)
	assert.False(t, res.PageChanged, "a new session has no page to leave")

	// A public URL in a comment must not take this call to the cloud
	// browser, where the session has no page.
	var title string
	res, err = w.r.Exec(ctx, w.sess, "// docs: "+w.site.url(publicHost, "/docs")+"\ndocument.title", func(ctx context.Context, call *Call) (err error) {
		title, err = pageTitle(ctx)
		return err
	})
	require.NoError(t, err)
	assert.Equal(t, w.sess+"::local", res.CacheKey, "the call ran where the page is")
	assert.Equal(t, "/dev", title)
	assert.False(t, res.PageChanged)

	res, err = w.r.Exec(ctx, w.sess, "document.title", func(ctx context.Context, call *Call) (err error) {
		title, err = pageTitle(ctx)
		return err
	})
	require.NoError(t, err)
	assert.Equal(t, w.sess+"::local", res.CacheKey, "the URL-less follow-up stays with the page")
	assert.Equal(t, "/dev", title)

	// Navigation picks the browser: a public page goes to the cloud.
	res, err = w.r.Navigate(ctx, w.sess, w.site.url(publicHost, "/public"), nil)
	require.NoError(t, err)
	assert.Equal(t, w.sess, res.CacheKey)
	assert.True(t, res.PageChanged)
	assert.Equal(t, w.sess+"::local", res.PreviousCacheKey)
	assert.Equal(t, cloudUA, w.site.uaOf("/public"))

	// A private navigation after a cloud one pulls the page local.
	res, err = w.r.Navigate(ctx, w.sess, w.site.url("127.0.0.1", "/lan"), nil)
	require.NoError(t, err)
	assert.Equal(t, route.Local, res.Route)
	assert.True(t, res.PageChanged, "the page changed browsers")
	assert.Equal(t, w.sess, res.PreviousCacheKey)
	assert.Equal(t, localUA, w.site.uaOf("/lan"))

	// So does a private URL in code, even from the cloud.
	_, err = w.r.Navigate(ctx, w.sess, w.site.url(publicHost, "/public2"), nil)
	require.NoError(t, err)
	res, err = w.r.Exec(ctx, w.sess, `fetch("`+w.site.url("localhost", "/api")+`")`, func(ctx context.Context, call *Call) (err error) {
		title, err = pageTitle(ctx)
		return err
	})
	require.NoError(t, err)
	assert.Equal(t, w.sess+"::local", res.CacheKey, "a private target pulls the call local")
	assert.True(t, res.PageChanged)
	assert.Equal(t, "/lan", title, "the local tab kept its own page")
}

// The local browser's tabs have a real viewport: a screenshot of the page
// as shown is 1280x720 by default, and what WithLocalViewport says.
func TestLocalViewport(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	s := newSite(t)
	for _, tc := range []struct {
		opts []Option
		w, h int
	}{{nil, 1280, 720}, {[]Option{WithLocalViewport(640, 480)}, 640, 480}} {
		r := newRouter(t, nil, &testlog.Buffer{}, tc.opts...)
		ctx := testCtx(t)
		var shot []byte
		_, err := r.Exec(ctx, "vp", `goto("`+s.URL+`/vp")`, func(ctx context.Context, call *Call) error {
			if err := chromedp.Do(ctx, chromedp.Navigate(s.URL+"/vp")); err != nil {
				return err
			}
			var err error
			shot, err = chromedp.Run(ctx, chromedp.CaptureScreenshot())
			return err
		})
		require.NoError(t, err)
		cfg, err := png.DecodeConfig(bytes.NewReader(shot))
		require.NoError(t, err)
		assert.Equal(t, [2]int{tc.w, tc.h}, [2]int{cfg.Width, cfg.Height})
	}
}

// CheckPage applies the landing rule from inside a run.
func TestCheckPage(t *testing.T) {
	t.Parallel()
	w := sharedWorld(t)
	s, r := w.site, w.r
	ctx := testCtx(t)
	var got string
	_, err := r.Exec(ctx, w.sess, `goto("`+s.URL+`/here")`, func(ctx context.Context, call *Call) (err error) {
		if err := chromedp.Do(ctx, chromedp.Navigate(s.URL+"/here")); err != nil {
			return err
		}
		got, err = call.CheckPage(ctx)
		return err
	})
	require.NoError(t, err)
	assert.Equal(t, s.URL+"/here", got)
}

// A navigation within the document (history.pushState, a new fragment)
// moves the landed URL the checks read, with no new document.
func TestLandedURLFollowsNavigationWithinTheDocument(t *testing.T) {
	t.Parallel()
	w := sharedWorld(t)
	s, r := w.site, w.r
	ctx := testCtx(t)
	var pushed, hashed string
	res, err := r.Exec(ctx, w.sess, `goto("`+s.URL+`/here")`, func(ctx context.Context, call *Call) (err error) {
		if err := chromedp.Do(ctx, chromedp.Navigate(s.URL+"/here")); err != nil {
			return err
		}
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[int](`history.pushState({}, "", "/moved?x=1"), 1`)); err != nil {
			return err
		}
		if pushed, err = call.CheckPage(ctx); err != nil {
			return err
		}
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash = "part"`)); err != nil {
			return err
		}
		hashed, err = call.CheckPage(ctx)
		return err
	})
	require.NoError(t, err)
	assert.Equal(t, s.URL+"/moved?x=1", pushed)
	assert.Equal(t, s.URL+"/moved?x=1#part", hashed)
	assert.Equal(t, hashed, res.LandedURL)
}
