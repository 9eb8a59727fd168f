package hybroute

import (
	"context"
	"crypto/tls"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/testlog"
	"github.com/hybroute/hybroute/provider"
	"github.com/hybroute/hybroute/route"
)

// ownProvider is a Provider written outside this package: it wraps a
// built-in client for the create and release calls and hands out its
// sessions with the HTTP client it chose, or none.
type ownProvider struct {
	inner  provider.Provider
	client *http.Client
}

func (p ownProvider) Name() string { return "own" }

func (p ownProvider) CreateSession(ctx context.Context, key string) (*provider.Session, error) {
	s, err := p.inner.CreateSession(ctx, key)
	if err != nil {
		return nil, err
	}
	return &provider.Session{Key: s.Key, ID: s.ID, CDPURL: s.CDPURL, HTTPClient: p.client}, nil
}

func (p ownProvider) ReleaseSession(ctx context.Context, s *provider.Session) error {
	return p.inner.ReleaseSession(ctx, s)
}

// TestThirdPartyProviderDialsWithItsOwnClient: a Provider of the user's own
// supplies the HTTP client its sessions' CDP websockets are dialled with.
// The stand-in's wss:// front has a certificate of its own CA: with the
// client that trusts it, the call runs in the cloud; with one that does
// not, the dial fails on the certificate and the call falls back to local.
func TestThirdPartyProviderDialsWithItsOwnClient(t *testing.T) {
	t.Parallel()
	w := newWorld(t, cloudtest.Browserbase)
	ctx := testCtx(t)
	page := w.site.url(publicHost, "/x")

	trusted := newRouter(t, ownProvider{inner: w.provider(cloudtest.Browserbase), client: w.api.HTTPClient()}, &testlog.Buffer{})
	res, err := trusted.Navigate(ctx, "k", page, nil)
	require.NoError(t, err)
	assert.Equal(t, route.Cloud, res.Route)
	assert.False(t, res.FallbackFromCloud, res.FallbackReason)

	// The same loopback dialer, the system's roots.
	tr := w.api.HTTPClient().Transport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	untrusted := newRouter(t, ownProvider{inner: w.provider(cloudtest.Browserbase), client: &http.Client{Transport: tr}}, &testlog.Buffer{})
	res, err = untrusted.Navigate(ctx, "k", page, nil)
	require.NoError(t, err)
	assert.True(t, res.FallbackFromCloud, "a client with the system's roots does not trust the stand-in's CA")
	assert.Contains(t, res.FallbackReason, "opening the websocket", "the dial, not the create, failed")
}
