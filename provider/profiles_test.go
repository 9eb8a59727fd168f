package provider_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/providertest"
	"github.com/hybroute/hybroute/provider"
)

// lastCreateBody is the JSON body of the fake's last POST.
func lastCreateBody(t *testing.T, srv *cloudtest.Server) map[string]any {
	t.Helper()
	var last *cloudtest.Request
	for _, r := range srv.Requests() {
		if r.Method == http.MethodPost {
			last = &r
		}
	}
	require.NotNil(t, last, "the fake got no create")
	var body map[string]any
	require.NoError(t, json.Unmarshal(last.Body, &body))
	return body
}

// TestProviderProfileInEachCreateBody: WithProfile reaches each
// provider's fake in the provider's own field, per session key, and the
// fake (which checks the field's shape) accepts it.
func TestProviderProfileInEachCreateBody(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	byKey := provider.Profile{ID: "shared", Persist: true, ByKey: func(key string) string {
		if key == "alice" {
			return "ctx-alice"
		}
		return ""
	}}

	t.Run("Browserbase", func(t *testing.T) {
		t.Parallel()
		srv := cloudtest.NewServer(t, cloudtest.Browserbase, providertest.DeadWS, cloudtest.WithProjectID("proj-1"))
		p := provider.NewBrowserbase(srv.APIKey, "proj-1", provider.WithBaseURL(srv.URL), provider.WithProfile(byKey),
			provider.WithSessionParams(map[string]any{"browserSettings": map[string]any{"blockAds": true}}))
		_, err := p.CreateSession(ctx, "alice")
		require.NoError(t, err)
		assert.Equal(t, map[string]any{"blockAds": true, "context": map[string]any{"id": "ctx-alice", "persist": true}},
			lastCreateBody(t, srv)["browserSettings"], "the context is set, the other settings kept")
		_, err = p.CreateSession(ctx, "bob")
		require.NoError(t, err)
		assert.Equal(t, map[string]any{"id": "shared", "persist": true},
			lastCreateBody(t, srv)["browserSettings"].(map[string]any)["context"], "a key ByKey does not name takes ID")

		plain := provider.NewBrowserbase(srv.APIKey, "proj-1", provider.WithBaseURL(srv.URL))
		_, err = plain.CreateSession(ctx, "carol")
		require.NoError(t, err)
		assert.NotContains(t, lastCreateBody(t, srv), "browserSettings", "no profile, no field")
	})
	t.Run("Steel", func(t *testing.T) {
		t.Parallel()
		srv := cloudtest.NewServer(t, cloudtest.Steel, providertest.DeadWS)
		_, err := provider.NewSteel(srv.APIKey, provider.WithBaseURL(srv.URL), provider.WithProfile(byKey)).CreateSession(ctx, "alice")
		require.NoError(t, err)
		assert.Equal(t, map[string]any{"profileId": "ctx-alice", "persistProfile": true}, lastCreateBody(t, srv))

		_, err = provider.NewSteel(srv.APIKey, provider.WithBaseURL(srv.URL), provider.WithProfile(provider.Profile{Persist: true})).CreateSession(ctx, "k")
		require.NoError(t, err)
		assert.Equal(t, map[string]any{"persistProfile": true}, lastCreateBody(t, srv), "no id: Steel makes a new profile")
	})
	t.Run("BrowserUse", func(t *testing.T) {
		t.Parallel()
		srv := cloudtest.NewServer(t, cloudtest.BrowserUse, providertest.DeadWS)
		p := provider.NewBrowserUse(srv.APIKey, provider.WithBaseURL(srv.URL), provider.WithProfile(byKey),
			provider.WithBrowserUseSession(provider.BrowserUseSession{ProfileID: "overridden", ProxyCountry: "de"}))
		_, err := p.CreateSession(ctx, "alice")
		require.NoError(t, err)
		assert.Equal(t, map[string]any{"profileId": "ctx-alice", "proxyCountryCode": "de"}, lastCreateBody(t, srv))
	})
}

// TestFakesRefuseBadProfileShapes: the fakes check the profile fields'
// shapes, so the test above could fail on a wrong one.
func TestFakesRefuseBadProfileShapes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bb := cloudtest.NewServer(t, cloudtest.Browserbase, providertest.DeadWS, cloudtest.WithProjectID("proj-1"))
	_, err := provider.NewBrowserbase(bb.APIKey, "proj-1", provider.WithBaseURL(bb.URL),
		provider.WithSessionParams(map[string]any{"browserSettings": map[string]any{"context": map[string]any{"persist": true}}})).CreateSession(ctx, "k")
	var pe *provider.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, http.StatusBadRequest, pe.Status)

	st := cloudtest.NewServer(t, cloudtest.Steel, providertest.DeadWS)
	_, err = provider.NewSteel(st.APIKey, provider.WithBaseURL(st.URL), provider.WithSessionParams(map[string]any{"persistProfile": "yes"})).CreateSession(ctx, "k")
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, http.StatusBadRequest, pe.Status)

	bu := cloudtest.NewServer(t, cloudtest.BrowserUse, providertest.DeadWS)
	_, err = provider.NewBrowserUse(bu.APIKey, provider.WithBaseURL(bu.URL), provider.WithSessionParams(map[string]any{"profileId": 7})).CreateSession(ctx, "k")
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, http.StatusUnprocessableEntity, pe.Status)
}
