package hybroute

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/route"
)

// TestNameThatDoesNotResolveSaysSo: a page whose host has no address fails
// with ErrNameNotResolved and a *NetworkError that names the host, in the
// same words on both browsers: on the local one the egress proxy's failure
// (net::ERR_TUNNEL_CONNECTION_FAILED) is explained by the door's record of
// it, on the cloud one the browser's net::ERR_NAME_NOT_RESOLVED is read.
func TestNameThatDoesNotResolveSaysSo(t *testing.T) {
	requireCloudGuard(t)
	t.Parallel()
	w := sharedWorld(t)
	ctx := testCtx(t)
	unresolvable := "http://" + unresolvableHost + "/"
	check := func(t *testing.T, err error, want route.Route, res Result) {
		t.Helper()
		require.ErrorIs(t, err, ErrNameNotResolved)
		assert.ErrorIs(t, err, chromedp.ErrPageLoad, "the browser's own error stays in the chain")
		ne, ok := errors.AsType[*NetworkError](err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, unresolvableHost, ne.Host)
		assert.Contains(t, err.Error(), "hybroute: "+unresolvableHost+" does not resolve: the name has no address")
		assert.NotContains(t, err.Error(), "ERR_TUNNEL_CONNECTION_FAILED", "the cause, not the proxy's failure")
		assert.Equal(t, want, res.Route)
	}

	res, err := w.r.Navigate(ctx, w.sess, unresolvable, nil)
	check(t, err, route.Cloud, res)

	// A credential in the URL keeps it on the local browser.
	res, err = w.r.Navigate(ctx, w.sess, unresolvable+"?token=abc", nil)
	check(t, err, route.Local, res)

	// A run that navigates where its code did not say: the door's one
	// failure during the run names the host.
	res, err = w.r.Exec(ctx, w.sess, "", func(ctx context.Context, _ *Call) error {
		return chromedp.Do(ctx, chromedp.Navigate("http://"+unresolvableHost+":8080/"))
	})
	check(t, err, route.Local, res)
}

// TestRefusedCallRanNowhere: a call its plan refused ran in no browser,
// and its Result says so (route.None), not the zero value's old cloud.
func TestRefusedCallRanNowhere(t *testing.T) {
	requireCloudGuard(t)
	t.Parallel()
	w := sharedWorld(t)
	res, err := w.r.Navigate(testCtx(t), w.sess, "http://169.254.169.254/latest/meta-data/", nil)
	require.ErrorIs(t, err, netpolicy.ErrMetadata)
	assert.Equal(t, route.None, res.Route)
	assert.Equal(t, "none", res.Route.String())
}

// TestLocalCacheKeyWithoutProvider: with no provider every call is on the
// local route, whose cache key is the README's <session>::local, as on a
// hybrid router.
func TestLocalCacheKeyWithoutProvider(t *testing.T) {
	r := newRouter(t, nil, nil)
	p, err := r.Plan(testCtx(t), "k", "http://localhost:3000/", Navigation())
	require.NoError(t, err)
	assert.Equal(t, route.Local, p.Route)
	assert.Equal(t, "k"+LocalSuffix, p.CacheKey)
	p, err = r.Plan(testCtx(t), "k", fmt.Sprintf("http://%s/", publicHost), Navigation())
	require.NoError(t, err)
	assert.Equal(t, "k"+LocalSuffix, p.CacheKey, "a public URL too: there is no other route")
}
