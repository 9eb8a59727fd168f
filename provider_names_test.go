package hybroute

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/provider"
)

// TestProviderNamesOfTheRootAreTheProviderPackages proves the names the
// root keeps for the providers are package provider's own: the same error
// values (errors.Is finds either name), the same types, and options and
// constructors that build the same clients.
func TestProviderNamesOfTheRootAreTheProviderPackages(t *testing.T) {
	t.Parallel()
	for _, row := range []struct {
		status int
		root   []error
		pkg    error
	}{
		{http.StatusTooManyRequests, []error{ErrRateLimited}, provider.ErrRateLimited},
		{http.StatusUnauthorized, []error{ErrProviderAuth, ErrUnauthorized}, provider.ErrAuth},
		{http.StatusPaymentRequired, []error{ErrProviderPayment, ErrPaymentRequired}, provider.ErrPayment},
		{http.StatusServiceUnavailable, []error{ErrProviderUnavailable}, provider.ErrUnavailable},
	} {
		var err error = &provider.Error{Provider: "p", Op: "create", Status: row.status}
		for _, old := range row.root {
			assert.Same(t, row.pkg, old, "HTTP %d", row.status)
			assert.ErrorIs(t, err, old, "HTTP %d", row.status)
		}
		var pe *ProviderError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, row.status, pe.Status)
	}
	assert.Same(t, provider.ErrInvalidSpec, ErrInvalidSpec)
	_, err := LoadSessionAPISpec(errReader{})
	assert.ErrorIs(t, err, provider.ErrInvalidSpec)

	// The old constructors and options, against a stand-in.
	srv := cloudtest.NewServer(t, cloudtest.Browserbase, deadWS)
	hc := srv.HTTPClient()
	var opt ProviderOption = WithProviderName("bb-old")
	var p Provider = NewBrowserbase(srv.APIKey, srv.ProjectID, WithProviderBaseURL(srv.URL), opt,
		WithProviderHTTPClient(hc))
	assert.Equal(t, "bb-old", p.Name())
	s, err := p.CreateSession(context.Background(), "k")
	require.NoError(t, err)
	var ps *provider.Session = s
	assert.Equal(t, "k", ps.Key)
	assert.Same(t, hc, s.HTTPClient, "the session dials with the client it was given")
	require.NoError(t, p.ReleaseSession(context.Background(), s))
	assert.EqualValues(t, 1, srv.Releases())

	spec, ok := SessionAPIPreset("kernel")
	require.True(t, ok)
	want, _ := provider.SessionAPIPreset("kernel")
	assert.Equal(t, want, spec)
	assert.Equal(t, provider.SessionAPIPresets(), SessionAPIPresets())
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("read failed") }
