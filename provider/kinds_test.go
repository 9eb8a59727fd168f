package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/providertest"
	"github.com/hybroute/hybroute/provider"
)

// inProgress409 is the gateway's answer to a create it is still making.
const inProgress409 = `{"error":{"code":"CONFLICT","message":"Browser session creation already in progress"}}`

// TestGatewayIdempotencyKey proves the managed gateway's create carries an
// idempotency key kept across retries while the answer is 5xx, none, or a
// 409 in progress, and dropped after success or a final refusal.
func TestGatewayIdempotencyKey(t *testing.T) {
	t.Parallel()
	keys := func(srv *cloudtest.Server) []string {
		var out []string
		for _, r := range srv.Requests() {
			if r.Method == http.MethodPost {
				out = append(out, r.Header.Get("X-Idempotency-Key"))
			}
		}
		return out
	}
	newGateway := func(t *testing.T) (*cloudtest.Server, *provider.BrowserUse) {
		srv := cloudtest.NewServer(t, cloudtest.Nous, providertest.DeadWS)
		p := provider.NewBrowserUseGateway(srv.URL, srv.APIKey)
		provider.SetGatewayRetryWait(p, func(int) time.Duration { return time.Millisecond })
		return srv, p
	}
	ctx := context.Background()

	t.Run("409 in progress is retried with the same key", func(t *testing.T) {
		srv, p := newGateway(t)
		srv.OnCreate(cloudtest.Status(http.StatusConflict, inProgress409))
		s, err := p.CreateSession(ctx, "k")
		require.NoError(t, err)
		ks := keys(srv)
		require.Len(t, ks, 2)
		assert.NotEmpty(t, ks[0])
		assert.Equal(t, ks[0], ks[1])
		assert.EqualValues(t, 1, srv.Made(), "one paid session")
		assert.Equal(t, "call-"+s.ID, s.ExternalCallID)
		_, kept := provider.GatewayKeptKey(p, "k")
		assert.False(t, kept, "a success clears the key")
	})
	t.Run("5xx keeps the key across CreateSession calls", func(t *testing.T) {
		srv, p := newGateway(t)
		srv.OnCreate(cloudtest.Status(502, ""), cloudtest.Status(503, ""), cloudtest.Status(500, ""))
		_, err := p.CreateSession(ctx, "k")
		require.ErrorIs(t, err, provider.ErrUnavailable)
		assert.EqualValues(t, 3, srv.Creates(), "three tries")
		first, kept := provider.GatewayKeptKey(p, "k")
		require.True(t, kept)
		_, err = p.CreateSession(ctx, "k")
		require.NoError(t, err)
		ks := keys(srv)
		require.Len(t, ks, 4)
		for _, k := range ks {
			assert.Equal(t, first, k)
		}
		// Another session key has a key of its own.
		_, err = p.CreateSession(ctx, "other")
		require.NoError(t, err)
		assert.NotEqual(t, first, keys(srv)[4])
	})
	t.Run("no answer keeps the key", func(t *testing.T) {
		srv, p := newGateway(t)
		srv.OnCreate(cloudtest.Hang())
		hctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		_, err := p.CreateSession(hctx, "k")
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded)
		_, err = p.CreateSession(ctx, "k")
		require.NoError(t, err)
		ks := keys(srv)
		require.Len(t, ks, 2)
		assert.Equal(t, ks[0], ks[1])
	})
	for _, row := range []struct {
		name  string
		reply cloudtest.Reply
		is    error
	}{
		{"401 drops the key", cloudtest.Status(401, `{"error":{"code":"UNAUTHORIZED","message":"invalid token"}}`), provider.ErrAuth},
		{"402 drops the key", cloudtest.Status(402, `{"error":{"code":"PAYMENT_REQUIRED","message":"no credits left"}}`), provider.ErrPayment},
		{"409 not in progress drops the key", cloudtest.Status(409, `{"error":{"code":"CONFLICT","message":"profile is in use"}}`), nil},
	} {
		t.Run(row.name, func(t *testing.T) {
			srv, p := newGateway(t)
			srv.OnCreate(row.reply)
			_, err := p.CreateSession(ctx, "k")
			require.Error(t, err)
			if row.is != nil {
				assert.ErrorIs(t, err, row.is)
			}
			assert.EqualValues(t, 1, srv.Creates(), "a refusal is not retried")
			_, kept := provider.GatewayKeptKey(p, "k")
			assert.False(t, kept)
			_, err = p.CreateSession(ctx, "k")
			require.NoError(t, err)
			ks := keys(srv)
			require.Len(t, ks, 2)
			assert.NotEqual(t, ks[0], ks[1], "a new create, a new key")
		})
	}
	t.Run("defaults: a short session, a US proxy, 30 s requests, the name nous", func(t *testing.T) {
		srv, p := newGateway(t)
		_, err := p.CreateSession(ctx, "k")
		require.NoError(t, err)
		var body map[string]any
		require.NoError(t, json.Unmarshal(srv.Requests()[0].Body, &body))
		assert.Equal(t, map[string]any{"timeout": 5.0, "proxyCountryCode": "us"}, body)
		assert.Equal(t, "/browsers", srv.Requests()[0].Path)
		assert.Equal(t, provider.GatewayTimeout, provider.HTTPClientOf(p).Timeout)
		assert.Equal(t, "nous", p.Name())
		// The user's params win over the defaults.
		p2 := provider.NewBrowserUseGateway(srv.URL, srv.APIKey, provider.WithBrowserUseSession(provider.BrowserUseSession{Timeout: 20 * time.Minute}))
		_, err = p2.CreateSession(ctx, "k")
		require.NoError(t, err)
		var last cloudtest.Request
		for _, r := range srv.Requests() {
			if r.Method == http.MethodPost {
				last = r
			}
		}
		require.NoError(t, json.Unmarshal(last.Body, &body))
		assert.Equal(t, 20.0, body["timeout"])
	})
}

// TestBrowserUseCreateBody proves the typed session fields reach the v3
// create body, that v2 stays selectable, and that the fake's documented
// limit (timeout at most 240 minutes) comes back as the provider's 422.
func TestBrowserUseCreateBody(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := cloudtest.NewServer(t, cloudtest.BrowserUse, providertest.DeadWS)
	p := provider.NewBrowserUse(srv.APIKey, provider.WithBaseURL(srv.URL),
		provider.WithBrowserUseSession(provider.BrowserUseSession{Timeout: 90 * time.Second, ProxyCountry: "de", ProfileID: "prof-1"}))
	_, err := p.CreateSession(ctx, "k")
	require.NoError(t, err)
	req := srv.Requests()[0]
	assert.Equal(t, "/api/v3/browsers", req.Path)
	var body map[string]any
	require.NoError(t, json.Unmarshal(req.Body, &body))
	assert.Equal(t, map[string]any{"timeout": 2.0, "proxyCountryCode": "de", "profileId": "prof-1"}, body)

	long := provider.NewBrowserUse(srv.APIKey, provider.WithBaseURL(srv.URL), provider.WithBrowserUseSession(provider.BrowserUseSession{Timeout: 5 * time.Hour}))
	_, err = long.CreateSession(ctx, "k")
	var pe *provider.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, http.StatusUnprocessableEntity, pe.Status)
	assert.Contains(t, pe.Message, "240")

	v2 := cloudtest.NewServer(t, cloudtest.BrowserUseV2, providertest.DeadWS)
	_, err = provider.NewBrowserUse(v2.APIKey, provider.WithBaseURL(v2.URL), provider.WithBrowserUseAPI(provider.BrowserUseV2)).CreateSession(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, "/api/v2/browsers", v2.Requests()[0].Path)
}

// TestPaymentAndAuthErrors proves a 402, or a billing refusal under
// another status, is ErrPayment and not an outage; 401 and 403 are
// ErrAuth.
func TestPaymentAndAuthErrors(t *testing.T) {
	t.Parallel()
	rows := []struct {
		reply     cloudtest.Reply
		is, isNot []error
	}{
		{cloudtest.Status(402, `{"message":"Payment Required"}`), []error{provider.ErrPayment}, []error{provider.ErrAuth, provider.ErrUnavailable, provider.ErrRateLimited}},
		{cloudtest.Status(403, `{"error":{"code":"INSUFFICIENT_CREDITS","message":"top up your balance"}}`), []error{provider.ErrPayment}, []error{provider.ErrAuth}},
		{cloudtest.Status(429, `{"error":"billing_hard_limit_reached"}`), []error{provider.ErrPayment}, []error{provider.ErrRateLimited}},
		{cloudtest.Status(401, `{"message":"Invalid credentials"}`), []error{provider.ErrAuth}, []error{provider.ErrPayment}},
		{cloudtest.Status(403, `{"message":"Forbidden"}`), []error{provider.ErrAuth}, []error{provider.ErrPayment, provider.ErrUnavailable}},
	}
	for _, row := range rows {
		t.Run(fmt.Sprintf("%d %s", row.reply.Status, row.reply.Body), func(t *testing.T) {
			srv := cloudtest.NewServer(t, cloudtest.Kernel, providertest.DeadWS)
			srv.OnCreate(row.reply)
			_, err := providertest.Client(srv).CreateSession(context.Background(), "k")
			for _, e := range row.is {
				assert.ErrorIs(t, err, e)
			}
			for _, e := range row.isNot {
				assert.NotErrorIs(t, err, e)
			}
		})
	}
}

// kernelSpecJSON describes Kernel's API as a user would, in a spec file.
const kernelSpecJSON = `{
  "name": "my-kernel",
  "base_url": "https://api.onkernel.com",
  "auth": {"header": "Authorization", "scheme": "Bearer"},
  "create": {"method": "POST", "path": "/browsers", "body": {"stealth": true}},
  "id_field": "session_id",
  "cdp_field": "cdp_ws_url",
  "release": {"method": "DELETE", "path": "/browsers/{id}"}
}`

// TestSessionAPISpecFile proves a provider described in JSON, without Go,
// works against its API, and that a spec that cannot work is refused.
func TestSessionAPISpecFile(t *testing.T) {
	t.Parallel()
	spec, err := provider.LoadSessionAPISpec(strings.NewReader(kernelSpecJSON))
	require.NoError(t, err)
	srv := cloudtest.NewServer(t, cloudtest.Kernel, providertest.DeadWS)
	p, err := provider.NewSessionAPI(spec, srv.APIKey, provider.WithBaseURL(srv.URL))
	require.NoError(t, err)
	assert.Equal(t, "my-kernel", p.Name())
	s, err := p.CreateSession(context.Background(), "k")
	require.NoError(t, err)
	assert.True(t, srv.Live(s.ID))
	var body map[string]any
	require.NoError(t, json.Unmarshal(srv.Requests()[0].Body, &body))
	assert.Equal(t, map[string]any{"stealth": true}, body)
	require.NoError(t, p.ReleaseSession(context.Background(), s))
	assert.False(t, srv.Live(s.ID))

	for name, js := range map[string]string{
		"unknown field":      strings.Replace(kernelSpecJSON, `"id_field"`, `"idfield"`, 1),
		"no cdp field":       strings.Replace(kernelSpecJSON, `"cdp_field": "cdp_ws_url",`, ``, 1),
		"release without id": strings.Replace(kernelSpecJSON, `/browsers/{id}`, `/browsers`, 1),
		"no auth":            strings.Replace(kernelSpecJSON, `{"header": "Authorization", "scheme": "Bearer"}`, `{}`, 1),
		"bad method":         strings.Replace(kernelSpecJSON, `"POST"`, `"FETCH"`, 1),
		"not JSON":           `{"name":`,
	} {
		_, err := provider.LoadSessionAPISpec(strings.NewReader(js))
		assert.ErrorIs(t, err, provider.ErrInvalidSpec, name)
	}
	for _, name := range provider.SessionAPIPresets() {
		spec, ok := provider.SessionAPIPreset(name)
		require.True(t, ok)
		assert.NoError(t, spec.Validate(), name)
	}
	_, ok := provider.SessionAPIPreset("no-such")
	assert.False(t, ok)
}

// TestReleaseURLStaysOnTheAPIHost proves a release URL from a create
// answer that points off the API's host is not called: the key would go
// with it.
func TestReleaseURLStaysOnTheAPIHost(t *testing.T) {
	t.Parallel()
	srv := cloudtest.NewServer(t, cloudtest.Browserless, providertest.DeadWS)
	srv.OnCreate(cloudtest.Reply{Body: `{"id":"s1","connect":"ws://127.0.0.1:9/x","stop":"https://elsewhere.invalid/stop?token=x"}`})
	p := providertest.Client(srv)
	s, err := p.CreateSession(context.Background(), "k")
	require.NoError(t, err)
	err = p.ReleaseSession(context.Background(), s)
	var pe *provider.Error
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, err.Error(), "not on the API's host")
	assert.False(t, errors.Is(err, provider.ErrAuth))
	assert.EqualValues(t, 0, srv.Releases())
}
