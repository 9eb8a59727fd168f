package hybroute

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/route"
)

// TestSecretsInURLsStayOffCloudBrowsers proves the secret_in_url rule: a
// URL literal with a credential-named query value or a userinfo password
// takes a hybrid call local (its class stays public), is refused where
// nothing is local (auto-local off, a CDP override) with ErrSecretInURL,
// and WithAllowSecretsInURLs lets it through.
func TestSecretsInURLsStayOffCloudBrowsers(t *testing.T) {
	t.Parallel()
	cloud := &stubProvider{name: "Cloud"}
	hybrid := newRouter(t, cloud, nil)
	ctx := context.Background()

	for _, code := range []string{
		`fetch("https://example.com/api?token=abc123")`,
		`goto("https://example.com/report?page=2&X-Amz-Signature=deadbeef")`,
		`goto("https://example.com/cb?Access_Token=abc")`,
		`goto("https://example.com/?my_api_key=k")`,
		`goto("https://bob:hunter22@example.com/")`,
		`goto("https://example.com/"); fetch("https://example.com/x?client_secret=s")`,
	} {
		p, err := hybrid.Plan(ctx, "s", code)
		require.NoError(t, err, code)
		assert.Equal(t, route.Local, p.Route, code)
		assert.Equal(t, "s"+LocalSuffix, p.CacheKey, code)
		last := p.Verdicts[len(p.Verdicts)-1]
		assert.Equal(t, netpolicy.ClassPublic, last.Class, "the verdict's class stays: %s", code)
		assert.NotEmpty(t, last.Credential, code)
		assert.True(t, hybrid.HybridRoutesLocally(ctx, last.URL), code)
	}
	for _, code := range []string{
		`goto("https://example.com/?token=")`,
		`goto("https://example.com/?tokens=1&page=2")`,
		`goto("https://bob@example.com/")`,
		`goto("https://example.com/token/abc")`,
	} {
		p, err := hybrid.Plan(ctx, "s2", code)
		require.NoError(t, err, code)
		assert.Equal(t, route.Cloud, p.Route, "no credential here: %s", code)
	}

	const code = `goto("https://example.com/api?token=abc123")`
	for name, opts := range map[string][]Option{
		"auto-local off": {WithAutoLocalForPrivateURLs(false)},
		"CDP override":   {WithCDPURL("ws://127.0.0.1:9/devtools/browser/x")},
	} {
		r := newRouter(t, cloud, nil, opts...)
		_, err := r.Plan(ctx, "s", code)
		require.ErrorIs(t, err, netpolicy.ErrSecretInURL, name)
		be, ok := errors.AsType[*netpolicy.BlockedError](err)
		require.True(t, ok, name)
		assert.Equal(t, netpolicy.ReasonSecretInURL, be.Reason)
		assert.Contains(t, err.Error(), `hybroute: blocked (secret_in_url): URL carries a credential; it is not sent to a cloud browser`)
		assert.Contains(t, err.Error(), `query parameter "token"`)
		assert.NotContains(t, err.Error(), "abc123")
		assert.False(t, r.HybridRoutesLocally(ctx, "https://example.com/api?token=abc123"))

		r = newRouter(t, cloud, nil, append(opts, WithAllowSecretsInURLs(true))...)
		p, err := r.Plan(ctx, "s", code)
		require.NoError(t, err, name)
		assert.Equal(t, route.Cloud, p.Route)
	}
	_, err := newTestRouter(t, cloud, WithAutoLocalForPrivateURLs(false)).Plan(ctx, "s", `goto("https://u:pw1234@example.com/")`)
	require.ErrorIs(t, err, netpolicy.ErrSecretInURL)
	assert.Contains(t, err.Error(), "a userinfo password")
	assert.NotContains(t, err.Error(), "pw1234")

	allowed := newRouter(t, cloud, nil, WithAllowSecretsInURLs(true))
	p, err := allowed.Plan(ctx, "s", code)
	require.NoError(t, err)
	assert.Equal(t, route.Cloud, p.Route, "the option sends it to the cloud")

	p, err = newRouter(t, nil, nil).Plan(ctx, "s", code)
	require.NoError(t, err)
	assert.Equal(t, route.Local, p.Route, "with no cloud it runs locally, as everything does")

	_, err = hybrid.Plan(ctx, "s", `fetch("http://169.254.169.254/latest?token=abc123")`)
	require.ErrorIs(t, err, netpolicy.ErrMetadata, "metadata stays metadata")

	// A private address the options let a remote browser open keeps the
	// secrets rule: allowing the address is not allowing its credential
	// onto that browser.
	override := newRouter(t, cloud, nil, WithCDPURL("ws://127.0.0.1:9/devtools/browser/x"), WithAllowPrivateURLs(true))
	_, err = override.Plan(ctx, "s", `goto("http://10.0.0.5/?token=abc123")`)
	require.ErrorIs(t, err, netpolicy.ErrSecretInURL)
	p, err = override.Plan(ctx, "s", `goto("http://10.0.0.5/")`)
	require.NoError(t, err, "the private address itself is allowed")
	assert.Equal(t, route.Cloud, p.Route)
}

// TestURLsInMessagesAreRedactedAndBounded proves a refused URL's error
// shows neither its password nor its credential-named values, and that a
// 1 MiB URL does not make a 1 MiB error.
func TestURLsInMessagesAreRedactedAndBounded(t *testing.T) {
	t.Parallel()
	r := newRouter(t, &stubProvider{name: "Cloud"}, nil)
	ctx := context.Background()
	_, err := r.Plan(ctx, "s", `fetch("http://admin:s3cretpw@169.254.169.254/latest?X-Amz-Signature=sig123456&api_key=key123456&page=2")`)
	require.ErrorIs(t, err, netpolicy.ErrMetadata)
	for _, secret := range []string{"s3cretpw", "sig123456", "key123456"} {
		assert.NotContains(t, err.Error(), secret)
	}
	assert.Contains(t, err.Error(), "admin:REDACTED@169.254.169.254/latest?X-Amz-Signature=REDACTED&api_key=REDACTED&page=2")

	big := "http://169.254.169.254/?q=" + strings.Repeat("a", 1<<20)
	_, err = r.Navigate(ctx, "s", big, nil)
	require.ErrorIs(t, err, netpolicy.ErrMetadata)
	assert.Less(t, len(err.Error()), 2048, "a 1 MiB URL makes a short error")
	assert.Contains(t, err.Error(), "…(1048602 bytes)")
}

// TestSecretURLRunsLocallyAndRedirectsWithTokensAreNot proves, on real
// browsers, that a navigation to a public URL with a token runs on the
// local Chromium, and that the rule is for literals only: a cloud page
// that redirects to a URL with a token (an OAuth callback) is followed.
// And a guard refusal's error and log line do not show the token.
func TestSecretURLRunsLocallyAndRedirectsWithTokensAreNot(t *testing.T) {
	t.Parallel()
	w := newWorld(t, cloudtest.Browserbase)
	ctx := testCtx(t)

	res, err := w.r.Navigate(ctx, "s", w.site.url(publicHost, "/secret?access_token=tok-abc-123"), nil)
	require.NoError(t, err)
	assert.Equal(t, route.Local, res.Route)
	assert.Equal(t, localUA, w.site.uaOf("/secret"))

	// The literal has no query ("%3F" is in the path): the token is only in
	// where the page redirects to.
	cb := publicHost + ":" + w.site.port + "/callback%3Fcode=oauth-code-123&state=s"
	res, err = w.r.Navigate(ctx, "c", w.site.url(publicHost, "/redirect-to/"+cb), nil)
	require.NoError(t, err)
	assert.Equal(t, route.Cloud, res.Route)
	assert.Equal(t, cloudUA, w.site.uaOf("/callback"), "the redirect with a token was followed on the cloud")

	meta := metadataHost + ":" + w.site.port + "/latest%3Ftoken=meta-tok-456"
	_, err = w.r.Navigate(ctx, "c", w.site.url(publicHost, "/redirect-to/"+meta), nil)
	require.ErrorIs(t, err, netpolicy.ErrMetadata)
	assert.NotContains(t, err.Error(), "meta-tok-456", "the refused hop is shown redacted")
	assert.Contains(t, err.Error(), "token=REDACTED")
	assert.Contains(t, w.logs.String(), "browser request refused")
	assert.NotContains(t, w.logs.String(), "meta-tok-456")
	assert.NotContains(t, w.logs.String(), "tok-abc-123")
}
