package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybroute/hybroute/hybroutetest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/provider"
)

// TestEveryProviderIsANameOfTheFlag proves --provider knows the built-in
// providers and every session API preset, each needing its key, and that
// the usage text lists them.
func TestEveryProviderIsANameOfTheFlag(t *testing.T) {
	hybroutetest.Parallel(t)
	names := providerNames()
	for _, want := range append([]string{"browserbase", "browser-use", "browser-use-v2", "nous", "steel", "cdp", "none", "local", "spec"},
		provider.SessionAPIPresets()...) {
		assert.Contains(t, names, want)
	}
	for _, k := range providerKinds() {
		vars := map[string]string{}
		for _, e := range k.env {
			vars[e] = "v-" + e
		}
		c := config{provider: k.name}
		p, name, err := c.newProvider(func(key string) string { return vars[key] }, true)
		require.NoError(t, err, k.name)
		require.NotNil(t, p, k.name)
		assert.Equal(t, k.name, name)

		_, _, err = c.newProvider(func(string) string { return "" }, true)
		require.Error(t, err, k.name)
		assert.Contains(t, err.Error(), "needs "+k.env[0], k.name)
	}
	_, _, errOut := runCmd(t, nil, "", "mcp", "-h")
	for _, name := range provider.SessionAPIPresets() {
		assert.Contains(t, errOut, name, "the usage names the preset")
	}
	assert.Contains(t, errOut, "nous")
}

// TestPresetFromTheFlagSpeaksItsAPI proves a preset chosen by --provider
// (and --provider-url) creates and releases a session at a fake of its
// documented API, and that --provider spec does the same from a file.
func TestPresetFromTheFlagSpeaksItsAPI(t *testing.T) {
	hybroutetest.Parallel(t)
	const ws = "ws://127.0.0.1:9/devtools/browser/not-started"
	for _, kind := range cloudtest.SessionAPIKinds {
		srv := cloudtest.NewServer(t, kind, ws)
		c := config{provider: string(kind), providerURL: srv.URL}
		p, _, err := c.newProvider(func(k string) string { return srv.APIKey }, true)
		require.NoError(t, err)
		s, err := p.CreateSession(context.Background(), "k")
		require.NoError(t, err, kind)
		require.NoError(t, p.ReleaseSession(context.Background(), s), kind)
		assert.False(t, srv.Live(s.ID), kind)
	}

	srv := cloudtest.NewServer(t, cloudtest.Hyperbrowser, ws)
	spec := `{"name":"my-hyper","base_url":"https://api.hyperbrowser.ai","auth":{"header":"x-api-key"},
	  "create":{"method":"POST","path":"/api/session"},"id_field":"id","cdp_field":"wsEndpoint",
	  "release":{"method":"PUT","path":"/api/session/{id}/stop"}}`
	file := filepath.Join(t.TempDir(), "hyper.json")
	require.NoError(t, os.WriteFile(file, []byte(spec), 0o600))
	c := config{provider: "spec", providerSpec: file, providerURL: srv.URL}
	env := func(k string) string {
		if k == specKeyEnv {
			return srv.APIKey
		}
		return ""
	}
	p, name, err := c.newProvider(env, true)
	require.NoError(t, err)
	assert.Equal(t, "my-hyper", name)
	s, err := p.CreateSession(context.Background(), "k")
	require.NoError(t, err)
	require.NoError(t, p.ReleaseSession(context.Background(), s))

	_, _, err = c.newProvider(func(string) string { return "" }, true)
	assert.ErrorContains(t, err, specKeyEnv)
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(strings.Replace(spec, `"id_field"`, `"idfield"`, 1)), 0o600))
	_, _, err = (&config{provider: "spec", providerSpec: bad}).newProvider(env, true)
	assert.ErrorIs(t, err, provider.ErrInvalidSpec)
}

// TestNousNeedsOnlyItsToken proves --provider nous starts with the user
// token alone: the gateway's origin has hermes-agent's default.
func TestNousNeedsOnlyItsToken(t *testing.T) {
	hybroutetest.Parallel(t)
	c := config{provider: "nous"}
	p, name, err := c.newProvider(func(k string) string {
		if k == "TOOL_GATEWAY_USER_TOKEN" {
			return "tok"
		}
		return ""
	}, true)
	require.NoError(t, err)
	assert.Equal(t, "nous", name)
	assert.Equal(t, "nous", p.Name())
}

// TestProviderURLsFailClosed: a provider URL that would carry the key over
// plain http off loopback, or that names a metadata or private address, is
// refused when the command starts, on every path a URL comes in by; a
// private one is let through by --allow-private-provider-url only.
func TestProviderURLsFailClosed(t *testing.T) {
	env := func(string) string { return "sk_live_0123456789" }
	spec := func(base string) string {
		file := filepath.Join(t.TempDir(), "spec.json")
		require.NoError(t, os.WriteFile(file, []byte(`{"name":"mine","base_url":"`+base+`","auth":{"header":"Authorization","scheme":"Bearer"},
		  "create":{"method":"POST","path":"/v1/sessions"},"id_field":"id","cdp_field":"ws"}`), 0o600))
		return file
	}
	for _, tc := range []struct {
		c    config
		want error
	}{
		{config{provider: "spec", providerSpec: spec("http://10.0.0.5:8080")}, provider.ErrCleartext},
		{config{provider: "spec", providerSpec: spec("https://169.254.169.254")}, provider.ErrPrivateEndpoint},
		{config{provider: "spec", providerSpec: spec("https://10.0.0.5")}, provider.ErrPrivateEndpoint},
		{config{provider: "spec", providerSpec: spec("https://10.0.0.5"), allowPrivateProvider: true}, nil},
		{config{provider: "spec", providerSpec: spec("http://127.0.0.1:8080")}, nil},
		{config{provider: "browserless", providerURL: "http://browserless.lan:3000"}, provider.ErrCleartext},
		{config{provider: "steel", providerURL: "http://api.steel.dev"}, provider.ErrCleartext},
		{config{provider: "nous", providerURL: "https://metadata.google.internal"}, provider.ErrPrivateEndpoint},
		{config{provider: "browserbase", providerURL: "https://[fd00::5]", allowPrivateProvider: true}, nil},
		{config{provider: "cdp", cdpURL: "http://10.0.0.5:3000/?token=x1y2z3"}, provider.ErrCleartext},
		{config{provider: "cdp", cdpURL: "ws://169.254.169.254/devtools/browser/x"}, provider.ErrPrivateEndpoint},
	} {
		_, _, err := tc.c.newProvider(env, false)
		if tc.want == nil {
			assert.NoError(t, err, "%+v", tc.c)
			continue
		}
		assert.ErrorIs(t, err, errConfig, "%+v", tc.c)
		assert.ErrorIs(t, err, tc.want, "%+v", tc.c)
		assert.NotContains(t, err.Error(), "sk_live_0123456789")
		assert.NotContains(t, err.Error(), "x1y2z3")
	}
	code, _, errOut := runCmd(t, map[string]string{specKeyEnv: "sk_live_0123456789"}, "", "mcp", "--provider", "spec", "--provider-spec", spec("http://10.0.0.5:8080"))
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "unencrypted")
}
