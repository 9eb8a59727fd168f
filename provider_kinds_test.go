package hybroute

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
)

// newKinds are the providers beyond the first four: Browser Use v2 (v3,
// the default, is BrowserUse), the managed gateway, and the session APIs.
var newKinds = append([]cloudtest.Kind{cloudtest.BrowserUseV2, cloudtest.Nous}, cloudtest.SessionAPIKinds...)

// TestNewProvidersDriveARealBrowser proves each new client's session, from
// a fake of its documented API, carries a CDP URL that drives a real
// Chromium, and that its release ends the session at the fake.
func TestNewProvidersDriveARealBrowser(t *testing.T) {
	t.Parallel()
	chrome := cloudtest.LaunchChromium(t)
	page := titlePage(t, "hybroute new provider")
	for _, kind := range newKinds {
		t.Run(string(kind), func(t *testing.T) {
			srv := cloudtest.NewServer(t, kind, chrome.WSURL)
			p := clientFor(srv)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s, err := p.CreateSession(ctx, "sess-key")
			require.NoError(t, err)
			require.NotEmpty(t, s.CDPURL)
			assert.True(t, srv.Live(s.ID))
			assert.Equal(t, kind == cloudtest.Browserless, s.SingleConnection)
			if kind == cloudtest.Nous {
				assert.Equal(t, "call-"+s.ID, s.ExternalCallID, "the gateway's x-external-call-id is kept on the session")
			} else {
				assert.Empty(t, s.ExternalCallID)
			}
			assert.Equal(t, "hybroute new provider", driveTitle(t, s.CDPURL, page))
			rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer rcancel()
			require.NoError(t, p.ReleaseSession(rctx, s))
			assert.False(t, srv.Live(s.ID), "the fake still holds the session after release")
			assert.EqualValues(t, 1, srv.Releases())
		})
	}
}

// TestNewProviderShapesRunOnTheCloud proves each new provider's CDP URL, in
// its real shape (wss through a TLS front, its key or per-session token
// where the provider puts it), carries a router's calls to the cloud
// browser: one session, one websocket, for several calls.
func TestNewProviderShapesRunOnTheCloud(t *testing.T) {
	t.Parallel()
	for _, kind := range newKinds {
		t.Run(string(kind), func(t *testing.T) {
			w := newWorld(t, kind)
			for i := range 3 {
				path := fmt.Sprintf("/shape-%s-%d", kind, i)
				res, err := w.r.Navigate(testCtx(t), "s", w.site.url(publicHost, path))
				require.NoError(t, err)
				assert.False(t, res.FallbackFromCloud, "logs: %s", w.logs)
				assert.Equal(t, RouteCloud, res.Route)
				assert.Equal(t, cloudUA, w.site.uaOf(path), "the page ran on the cloud browser")
			}
			assert.EqualValues(t, 1, w.api.Creates())
			assert.EqualValues(t, 1, w.api.Front.Upgrades(), "one websocket for the session's calls")
			assert.Zero(t, w.api.Front.Refused())
			if kind == cloudtest.Nous {
				assert.Equal(t, 1, w.logs.count("external_call_id=call-"), "logs: %s", w.logs)
			}
		})
	}
}

// TestBrowserlessOneWebSocketPerSession proves the router never dials a
// browserless session's pre-tokenized URL twice: when its one connection
// is lost, the next session is a new one, and the fake (which refuses a
// second websocket to a session, as browserless does) refuses nothing.
func TestBrowserlessOneWebSocketPerSession(t *testing.T) {
	t.Parallel()
	w := newWorld(t, cloudtest.Browserless)
	_, err := w.r.Navigate(testCtx(t), "s", w.site.url(publicHost, "/bl-1"))
	require.NoError(t, err)
	connect := ""
	for _, r := range w.api.Front.Requests() {
		if strings.Contains(r.Path, "/session/connect/") {
			connect = r.Path
		}
	}
	assert.NotEmpty(t, connect, "the connect URL's own path was dialled")
	w.api.Front.DropConnections()
	// The call that meets the dead connection may fail with ErrBrowserDead;
	// the one after runs on a new session.
	for i := 0; i < 2; i++ {
		_, err = w.r.Navigate(testCtx(t), "s", w.site.url(publicHost, fmt.Sprintf("/bl-%d", i+2)))
		if err == nil {
			break
		}
		require.ErrorIs(t, err, ErrBrowserDead)
	}
	require.NoError(t, err)
	assert.EqualValues(t, 2, w.api.Creates(), "a lost connection ends the session: a new one is created")
	assert.EqualValues(t, 2, w.api.Front.Upgrades())
	assert.Zero(t, w.api.Front.Refused(), "no second websocket to a session")
	assert.GreaterOrEqual(t, w.api.Releases(), int64(1), "the lost session was given back")
}

// TestSingleConnectionDialsOnce proves the allocator of a single-connection
// session refuses a second dial without a packet sent.
func TestSingleConnectionDialsOnce(t *testing.T) {
	t.Parallel()
	calls := 0
	dial := func(context.Context) (int, error) { calls++; return calls, nil }
	once := dialOnce(true, dial)
	_, err := once(context.Background())
	require.NoError(t, err)
	_, err = once(context.Background())
	assert.ErrorIs(t, err, errSecondConnection)
	assert.Equal(t, 1, calls)
	many := dialOnce(false, dial)
	for range 2 {
		_, err = many(context.Background())
		require.NoError(t, err)
	}
	assert.Equal(t, 3, calls)
}

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
	newGateway := func(t *testing.T) (*cloudtest.Server, *BrowserUse) {
		srv := cloudtest.NewServer(t, cloudtest.Nous, deadWS)
		p := NewBrowserUseGateway(srv.URL, srv.APIKey)
		p.gateway.wait = func(int) time.Duration { return time.Millisecond }
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
		_, kept := p.gateway.kept("k")
		assert.False(t, kept, "a success clears the key")
	})
	t.Run("5xx keeps the key across CreateSession calls", func(t *testing.T) {
		srv, p := newGateway(t)
		srv.OnCreate(cloudtest.Status(502, ""), cloudtest.Status(503, ""), cloudtest.Status(500, ""))
		_, err := p.CreateSession(ctx, "k")
		require.ErrorIs(t, err, ErrProviderUnavailable)
		assert.EqualValues(t, 3, srv.Creates(), "three tries")
		first, kept := p.gateway.kept("k")
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
		{"401 drops the key", cloudtest.Status(401, `{"error":{"code":"UNAUTHORIZED","message":"invalid token"}}`), ErrProviderAuth},
		{"402 drops the key", cloudtest.Status(402, `{"error":{"code":"PAYMENT_REQUIRED","message":"no credits left"}}`), ErrProviderPayment},
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
			_, kept := p.gateway.kept("k")
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
		assert.Equal(t, gatewayTimeout, p.client.Timeout)
		assert.Equal(t, "nous", p.Name())
		// The user's params win over the defaults.
		p2 := NewBrowserUseGateway(srv.URL, srv.APIKey, WithBrowserUseSession(BrowserUseSession{Timeout: 20 * time.Minute}))
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
	srv := cloudtest.NewServer(t, cloudtest.BrowserUse, deadWS)
	p := NewBrowserUse(srv.APIKey, WithProviderBaseURL(srv.URL),
		WithBrowserUseSession(BrowserUseSession{Timeout: 90 * time.Second, ProxyCountry: "de", ProfileID: "prof-1"}))
	_, err := p.CreateSession(ctx, "k")
	require.NoError(t, err)
	req := srv.Requests()[0]
	assert.Equal(t, "/api/v3/browsers", req.Path)
	var body map[string]any
	require.NoError(t, json.Unmarshal(req.Body, &body))
	assert.Equal(t, map[string]any{"timeout": 2.0, "proxyCountryCode": "de", "profileId": "prof-1"}, body)

	long := NewBrowserUse(srv.APIKey, WithProviderBaseURL(srv.URL), WithBrowserUseSession(BrowserUseSession{Timeout: 5 * time.Hour}))
	_, err = long.CreateSession(ctx, "k")
	var pe *ProviderError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, http.StatusUnprocessableEntity, pe.Status)
	assert.Contains(t, pe.Message, "240")

	v2 := cloudtest.NewServer(t, cloudtest.BrowserUseV2, deadWS)
	_, err = NewBrowserUse(v2.APIKey, WithProviderBaseURL(v2.URL), WithBrowserUseAPI(BrowserUseV2)).CreateSession(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, "/api/v2/browsers", v2.Requests()[0].Path)
}

// TestPaymentAndAuthErrors proves a 402, or a billing refusal under
// another status, is ErrProviderPayment and not an outage; 401 and 403 are
// ErrProviderAuth.
func TestPaymentAndAuthErrors(t *testing.T) {
	t.Parallel()
	rows := []struct {
		reply     cloudtest.Reply
		is, isNot []error
	}{
		{cloudtest.Status(402, `{"message":"Payment Required"}`), []error{ErrProviderPayment, ErrPaymentRequired}, []error{ErrProviderAuth, ErrProviderUnavailable, ErrRateLimited}},
		{cloudtest.Status(403, `{"error":{"code":"INSUFFICIENT_CREDITS","message":"top up your balance"}}`), []error{ErrProviderPayment}, []error{ErrProviderAuth}},
		{cloudtest.Status(429, `{"error":"billing_hard_limit_reached"}`), []error{ErrProviderPayment}, []error{ErrRateLimited}},
		{cloudtest.Status(401, `{"message":"Invalid credentials"}`), []error{ErrProviderAuth, ErrUnauthorized}, []error{ErrProviderPayment}},
		{cloudtest.Status(403, `{"message":"Forbidden"}`), []error{ErrProviderAuth}, []error{ErrProviderPayment, ErrProviderUnavailable}},
	}
	for _, row := range rows {
		t.Run(fmt.Sprintf("%d %s", row.reply.Status, row.reply.Body), func(t *testing.T) {
			srv := cloudtest.NewServer(t, cloudtest.Kernel, deadWS)
			srv.OnCreate(row.reply)
			_, err := clientFor(srv).CreateSession(context.Background(), "k")
			for _, e := range row.is {
				assert.ErrorIs(t, err, e)
			}
			for _, e := range row.isNot {
				assert.NotErrorIs(t, err, e)
			}
		})
	}
}

// TestPaymentRefusalOpensNoFleetWindow proves a 402 sends the call to the
// local floor with the refusal as its reason, holds this router's
// creations off the provider, and writes no back-off window to the
// fleet's store: it is the account's, not an outage.
func TestPaymentRefusalOpensNoFleetWindow(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := cloudtest.NewServer(t, cloudtest.Anchor, deadWS)
	srv.AlwaysOnCreate(&cloudtest.Reply{Status: 402, Body: `{"error":{"code":402,"message":"Insufficient credits"}}`})
	logs := &logBuffer{}
	site := newSite(t)
	r := newBrowserRouter(t, clientFor(srv), logs)
	for i, key := range []string{"a", "b", "c"} {
		res, err := r.Navigate(testCtx(t), key, site.url(publicHost, fmt.Sprintf("/pay-%d", i)))
		require.NoError(t, err)
		assert.True(t, res.FallbackFromCloud)
		assert.Contains(t, res.FallbackReason, "HTTP 402")
	}
	assert.EqualValues(t, 1, srv.Creates(), "the refusal holds later creations off the provider")
	until, _, err := r.fleet.Health().Window(context.Background(), r.provider.Name())
	require.NoError(t, err)
	assert.True(t, until.IsZero(), "no back-off window in the fleet's store for a payment refusal")
	assert.Equal(t, 1, logs.count("refused the configuration"), "logs: %s", logs)
	assert.Equal(t, 1, logs.count("plan and billing"), "logs: %s", logs)
}

// TestPresetWithoutCDPURLFailsClearly proves a preset's session without a
// CDP URL fails with the no-CDP message, ErrNoCDPEndpoint, not a fallback:
// the provider answered, so there is no outage to fall back from.
func TestPresetWithoutCDPURLFailsClearly(t *testing.T) {
	t.Parallel()
	srv := cloudtest.NewServer(t, cloudtest.Hyperbrowser, deadWS)
	srv.OnCreate(cloudtest.NoCDP())
	r := newBrowserRouter(t, clientFor(srv), &logBuffer{})
	site := newSite(t)
	_, err := r.Navigate(testCtx(t), "s", site.url(publicHost, "/nocdp"))
	require.ErrorIs(t, err, ErrNoCDPEndpoint)
	assert.Contains(t, err.Error(), "Cloud browser provider Hyperbrowser returned no CDP endpoint, so Browser Use mode cannot drive it.")
	assert.EqualValues(t, 1, srv.Releases(), "the session is given back")
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
	spec, err := LoadSessionAPISpec(strings.NewReader(kernelSpecJSON))
	require.NoError(t, err)
	srv := cloudtest.NewServer(t, cloudtest.Kernel, deadWS)
	p, err := NewSessionAPI(spec, srv.APIKey, WithProviderBaseURL(srv.URL))
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
		_, err := LoadSessionAPISpec(strings.NewReader(js))
		assert.ErrorIs(t, err, ErrInvalidSpec, name)
	}
	for _, name := range SessionAPIPresets() {
		spec, ok := SessionAPIPreset(name)
		require.True(t, ok)
		assert.NoError(t, spec.Validate(), name)
	}
	_, ok := SessionAPIPreset("no-such")
	assert.False(t, ok)
}

// TestReleaseURLStaysOnTheAPIHost proves a release URL from a create
// answer that points off the API's host is not called: the key would go
// with it.
func TestReleaseURLStaysOnTheAPIHost(t *testing.T) {
	t.Parallel()
	srv := cloudtest.NewServer(t, cloudtest.Browserless, deadWS)
	srv.OnCreate(cloudtest.Reply{Body: `{"id":"s1","connect":"ws://127.0.0.1:9/x","stop":"https://elsewhere.invalid/stop?token=x"}`})
	p := clientFor(srv)
	s, err := p.CreateSession(context.Background(), "k")
	require.NoError(t, err)
	err = p.ReleaseSession(context.Background(), s)
	var pe *ProviderError
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, err.Error(), "not on the API's host")
	assert.False(t, errors.Is(err, ErrProviderAuth))
	assert.EqualValues(t, 0, srv.Releases())
}
