package provider_test

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/providertest"
	"github.com/hybroute/hybroute/provider"
)

// decoyClient dials every address at srv, so a request meant for
// 10.0.0.5 or a provider's name reaches the fake on loopback: what would
// have gone out is what the fake sees.
func decoyClient(srv *cloudtest.Server) *http.Client {
	addr := srv.URL[len("http://"):]
	var d net.Dialer
	return &http.Client{
		Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       10 * time.Second,
	}
}

// TestNoKeyOverCleartext: no client sends its key over plain http to a
// host that is not loopback, whether the URL is a private address or a
// name, through a session API, a preset (browserless's ?token= among
// them) or the gateway. The refusal is the configuration's, not an outage.
func TestNoKeyOverCleartext(t *testing.T) {
	t.Parallel()
	kinds := append(append([]cloudtest.Kind{}, providertest.APIKinds...), cloudtest.Nous)
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			srv := cloudtest.NewServer(t, kind, providertest.DeadWS)
			_, port, err := net.SplitHostPort(srv.URL[len("http://"):])
			require.NoError(t, err)
			for _, base := range []string{"http://10.0.0.5:" + port, "http://api.provider.test:" + port, "http://localhost.evil.test:" + port} {
				p := providertest.Client(srv, provider.WithBaseURL(base), provider.WithHTTPClient(decoyClient(srv)))
				_, err := p.CreateSession(context.Background(), "k")
				require.ErrorIs(t, err, provider.ErrCleartext, base)
				assert.NotErrorIs(t, err, provider.ErrUnavailable, "no outage: the configuration's to fix")
				assert.NotContains(t, err.Error(), srv.APIKey)
			}
			// (Loopback over http, a stand-in's way in, is what every
			// other test of the clients uses.)
			assert.Empty(t, srv.Requests(), "nothing reached the server")
		})
	}
}

// TestProviderURLAtAPrivateAddress: a provider URL at a metadata address is
// refused always, one at a private address unless the operator allows it
// (WithPrivateEndpoint), before anything is sent.
func TestProviderURLAtAPrivateAddress(t *testing.T) {
	t.Parallel()
	srv := cloudtest.NewServer(t, cloudtest.Steel, providertest.DeadWS)
	_, port, err := net.SplitHostPort(srv.URL[len("http://"):])
	require.NoError(t, err)
	metadataURLs := []string{"https://169.254.169.254", "http://169.254.169.254:" + port, "https://[fd00:ec2::254]", "https://metadata.google.internal.", "https://[::ffff:169.254.169.254]"}
	for _, base := range append([]string{"https://10.0.0.5:" + port, "https://192.168.1.20", "https://[fe80::1]", "https://100.64.0.1"}, metadataURLs...) {
		p := providertest.Client(srv, provider.WithBaseURL(base), provider.WithHTTPClient(decoyClient(srv)))
		_, err := p.CreateSession(context.Background(), "k")
		require.ErrorIs(t, err, provider.ErrPrivateEndpoint, base)
		assert.NotErrorIs(t, err, provider.ErrUnavailable)
	}
	for _, base := range metadataURLs {
		p := providertest.Client(srv, provider.WithBaseURL(base), provider.WithHTTPClient(decoyClient(srv)), provider.WithPrivateEndpoint())
		_, err := p.CreateSession(context.Background(), "k")
		require.ErrorIs(t, err, provider.ErrPrivateEndpoint, "metadata stays refused: %s", base)
	}
	assert.Empty(t, srv.Requests(), "nothing reached the server")

	// A CDP endpoint on the LAN, allowed: the request goes out.
	cdp := cloudtest.NewServer(t, cloudtest.CDP, providertest.DeadWS)
	_, cport, err := net.SplitHostPort(cdp.URL[len("http://"):])
	require.NoError(t, err)
	lan := "http://10.0.0.5:" + cport + "/"
	_, err = provider.CDPEndpoint(lan, provider.WithHTTPClient(decoyClient(cdp))).CreateSession(context.Background(), "k")
	require.ErrorIs(t, err, provider.ErrPrivateEndpoint)
	assert.Empty(t, cdp.Requests())
	_, err = provider.CDPEndpoint(lan, provider.WithHTTPClient(decoyClient(cdp)), provider.WithPrivateEndpoint()).CreateSession(context.Background(), "k")
	assert.NotErrorIs(t, err, provider.ErrPrivateEndpoint)
	assert.NotEmpty(t, cdp.Requests(), "allowed, it went out")
	// With its token in the query, still not over plain http.
	_, err = provider.CDPEndpoint(lan+"?token="+url.QueryEscape(cdp.APIKey), provider.WithHTTPClient(decoyClient(cdp)), provider.WithPrivateEndpoint()).CreateSession(context.Background(), "k")
	require.ErrorIs(t, err, provider.ErrCleartext)
	assert.NotContains(t, err.Error(), cdp.APIKey)
}

func TestCheckEndpoint(t *testing.T) {
	t.Parallel()
	assert.NoError(t, provider.CheckEndpoint("http://127.0.0.1:9/", true))
	assert.NoError(t, provider.CheckEndpoint("http://[::1]:9/", true))
	assert.NoError(t, provider.CheckEndpoint("http://localhost:9/", true))
	assert.ErrorIs(t, provider.CheckEndpoint("http://localhost.:9/", true), provider.ErrCleartext, "a resolver asks DNS for localhost. with its dot")
	assert.ErrorIs(t, provider.CheckEndpoint("http://a.localhost:9/", true), provider.ErrCleartext, "a resolver may answer a name under localhost")
	assert.NoError(t, provider.CheckEndpoint("https://api.steel.dev", true))
	assert.NoError(t, provider.CheckEndpoint("http://10.0.0.5/", false, provider.WithPrivateEndpoint()))
	assert.ErrorIs(t, provider.CheckEndpoint("http://10.0.0.5/", true, provider.WithPrivateEndpoint()), provider.ErrCleartext)
	assert.ErrorIs(t, provider.CheckEndpoint("http://user:pw@api.test/", false), provider.ErrCleartext)
	assert.ErrorIs(t, provider.CheckEndpoint("https://10.0.0.5/", false), provider.ErrPrivateEndpoint)
}
