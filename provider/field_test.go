package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/providertest"
	"github.com/hybroute/hybroute/provider"
)

// The providers as they answer in the field: each answer below is taken
// from the provider's SDK or docs, named in its row (see
// ../shared/PROVIDER-CONTRACTS.md and the README's provider table).

// TestDocumentedRefusals proves each documented refusal of each provider
// matches the sentinel of what it says: a limit is ErrRateLimited (to
// wait out) with the provider's words in the error, a credential ErrAuth,
// money ErrPayment, a named field ErrInvalidParam naming it.
func TestDocumentedRefusals(t *testing.T) {
	t.Parallel()
	rows := []struct {
		kind   cloudtest.Kind
		source string
		reply  cloudtest.Reply
		opts   []provider.Option
		want   error
		param  string
		words  string // in the error's text
	}{
		// BrowserCash/docs docs/sessions/errors.mdx: errors are
		// {"error": "..."}; 400 names the field, 401 the key, 402 no
		// credits ("Insufficient balance"), 403 "Session or account limit
		// reached: the plan's concurrent-browser limit", 429 too many
		// requests, 503 no capacity.
		{cloudtest.BrowserCash, "errors.mdx 403", cloudtest.Status(403, `{"error":"Session or account limit reached: the plan's concurrent-browser limit"}`),
			nil, provider.ErrRateLimited, "", "the plan's concurrent-browser limit"},
		{cloudtest.BrowserCash, "errors.mdx 402", cloudtest.Status(402, `{"error":"Insufficient balance"}`),
			nil, provider.ErrPayment, "", "Insufficient balance"},
		{cloudtest.BrowserCash, "errors.mdx 401", cloudtest.Status(401, `{"error":"Missing or invalid API key"}`),
			nil, provider.ErrAuth, "", "invalid API key"},
		{cloudtest.BrowserCash, "errors.mdx 400", cloudtest.Status(400, `{"error":"Invalid duration: must be between 60 and 3600"}`),
			[]provider.Option{provider.WithSessionParams(map[string]any{"duration": 30})}, provider.ErrInvalidParam, "duration", "Invalid duration"},
		{cloudtest.BrowserCash, "errors.mdx 429", cloudtest.Status(429, `{"error":"Too many requests"}`),
			nil, provider.ErrRateLimited, "", "Too many requests"},
		{cloudtest.BrowserCash, "errors.mdx 503", cloudtest.Status(503, `{"error":"No browser capacity available"}`),
			nil, provider.ErrUnavailable, "", "No browser capacity"},
		// browser-use/sdk v3 types and browser_use/browser/cloud/cloud.py:
		// FastAPI's {"detail": ...}; 403 for a timeout over 4 hours and for
		// a key missing a version's scope; 422 a validation list.
		{cloudtest.BrowserUse, "sdk v3 403 timeout", cloudtest.Status(403, `{"detail":"Session timeout limit exceeded (maximum 4 hours)"}`),
			[]provider.Option{provider.WithSessionParams(map[string]any{"timeout": 300})}, provider.ErrInvalidParam, "timeout", "maximum 4 hours"},
		{cloudtest.BrowserUse, "openapi v3 422", cloudtest.Status(422, `{"detail":[{"loc":["body","proxyCountryCode"],"msg":"Input should be 'us', 'uk' or 'de'","type":"enum"}]}`),
			nil, provider.ErrInvalidParam, "proxyCountryCode", "Input should be"},
		{cloudtest.BrowserUse, "openapi v4 429", cloudtest.Status(429, `{"detail":"Too many concurrent active sessions"}`),
			nil, provider.ErrRateLimited, "", "concurrent active sessions"},
		{cloudtest.BrowserUse, "sdk 401", cloudtest.Status(401, `{"detail":"Invalid API key"}`),
			nil, provider.ErrAuth, "", "Invalid API key"},
		// Browserbase's concurrency guide: both limits answer 429; its API
		// answers in Fastify's shape, and projectId is validated by it.
		{cloudtest.Browserbase, "concurrency guide 429", cloudtest.Status(429, `{"statusCode":429,"error":"Too Many Requests","message":"Too Many Requests"}`),
			nil, provider.ErrRateLimited, "", "Too Many Requests"},
		{cloudtest.Browserbase, "Fastify 400", cloudtest.Status(400, `{"statusCode":400,"error":"Bad Request","message":"body/projectId must NOT have fewer than 1 characters"}`),
			nil, provider.ErrInvalidParam, "projectId", "projectId"},
		// browserless's HTTP error codes page: plain text; 429 for too many
		// requests, 401 for a bad token.
		{cloudtest.Browserless, "http-error-codes 429", cloudtest.Status(429, `Too Many Requests`),
			nil, provider.ErrRateLimited, "", "Too Many Requests"},
		{cloudtest.Browserless, "http-error-codes 401", cloudtest.Status(401, `Bad or missing authentication.`),
			nil, provider.ErrAuth, "", "Bad or missing authentication"},
		// Kernel's API reference: {"code", "message"}.
		{cloudtest.Kernel, "api-reference 429", cloudtest.Status(429, `{"code":"rate_limited","message":"concurrent browser limit reached"}`),
			nil, provider.ErrRateLimited, "", "concurrent browser limit reached"},
		// Hyperbrowser's openapi.json: {"message"}.
		{cloudtest.Hyperbrowser, "openapi 429", cloudtest.Status(429, `{"message":"Too many concurrent sessions"}`),
			nil, provider.ErrRateLimited, "", "Too many concurrent sessions"},
		// Anchor's SDK: {"error": {"code", "message"}}.
		{cloudtest.Anchor, "sdk 403 limit", cloudtest.Status(403, `{"error":{"code":403,"message":"Concurrent sessions limit reached for your plan"}}`),
			nil, provider.ErrRateLimited, "", "Concurrent sessions limit reached"},
		// Steel's SDK: {"message"}.
		{cloudtest.Steel, "sdk 429", cloudtest.Status(429, `{"message":"Rate limit exceeded"}`),
			nil, provider.ErrRateLimited, "", "Rate limit exceeded"},
	}
	sentinels := []error{provider.ErrRateLimited, provider.ErrAuth, provider.ErrPayment, provider.ErrInvalidParam, provider.ErrUnavailable}
	for _, row := range rows {
		t.Run(string(row.kind)+"/"+row.source, func(t *testing.T) {
			srv := cloudtest.NewServer(t, row.kind, providertest.DeadWS)
			srv.OnCreate(row.reply)
			_, err := providertest.Client(srv, row.opts...).CreateSession(context.Background(), "k")
			require.Error(t, err)
			for _, s := range sentinels {
				if s == row.want {
					assert.ErrorIs(t, err, s)
				} else {
					assert.NotErrorIs(t, err, s)
				}
			}
			var pe *provider.Error
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, row.param, pe.Param)
			assert.Contains(t, err.Error(), row.words, "the provider's words are in the error")
			if row.param != "" {
				assert.Contains(t, err.Error(), `parameter "`+row.param+`"`)
			}
		})
	}
}

// TestBrowserUseTriesTheVersionsTheKeyIsGranted proves a create refused
// for a missing version scope is tried on v2, then v4 (browser-use's own
// order), that the version that answered is kept for the next creates
// and for the release, and that a key no version grants is ErrAuth.
func TestBrowserUseTriesTheVersionsTheKeyIsGranted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	paths := func(srv *cloudtest.Server) []string {
		var out []string
		for _, r := range srv.Requests() {
			if !strings.HasPrefix(r.Path, "/cdp/") { // the cdpUrl's /json/version
				out = append(out, r.Method+" "+r.Path)
			}
		}
		return out
	}
	t.Run("v2 key", func(t *testing.T) {
		srv := cloudtest.NewServer(t, cloudtest.BrowserUse, providertest.DeadWS, cloudtest.WithKeyScopes("v2"))
		p := provider.NewBrowserUse(srv.APIKey, provider.WithBaseURL(srv.URL))
		assert.Equal(t, provider.BrowserUseV3, p.APIVersion())
		s, err := p.CreateSession(ctx, "k")
		require.NoError(t, err)
		assert.Equal(t, provider.BrowserUseV2, p.APIVersion(), "the granted version is kept")
		require.NoError(t, p.ReleaseSession(ctx, s))
		_, err = p.CreateSession(ctx, "k2")
		require.NoError(t, err)
		assert.Equal(t, []string{
			"POST /api/v3/browsers", "POST /api/v2/browsers",
			"PATCH /api/v2/browsers/" + s.ID,
			"POST /api/v2/browsers",
		}, paths(srv))
	})
	t.Run("v4 key", func(t *testing.T) {
		srv := cloudtest.NewServer(t, cloudtest.BrowserUse, providertest.DeadWS, cloudtest.WithKeyScopes("v4"))
		p := provider.NewBrowserUse(srv.APIKey, provider.WithBaseURL(srv.URL))
		s, err := p.CreateSession(ctx, "k")
		require.NoError(t, err)
		require.NoError(t, p.ReleaseSession(ctx, s))
		assert.Equal(t, []string{"POST /api/v3/browsers", "POST /api/v2/browsers", "POST /api/v4/browsers",
			"PATCH /api/v4/browsers/" + s.ID}, paths(srv))
		assert.False(t, srv.Live(s.ID))
	})
	t.Run("pinned to v4", func(t *testing.T) {
		srv := cloudtest.NewServer(t, cloudtest.BrowserUse, providertest.DeadWS)
		p := provider.NewBrowserUse(srv.APIKey, provider.WithBaseURL(srv.URL), provider.WithBrowserUseAPI(provider.BrowserUseV4))
		s, err := p.CreateSession(ctx, "k")
		require.NoError(t, err)
		require.NoError(t, p.ReleaseSession(ctx, s))
		assert.Equal(t, []string{"POST /api/v4/browsers", "PATCH /api/v4/browsers/" + s.ID}, paths(srv))
	})
	t.Run("no version granted", func(t *testing.T) {
		srv := cloudtest.NewServer(t, cloudtest.BrowserUse, providertest.DeadWS, cloudtest.WithKeyScopes())
		p := provider.NewBrowserUse(srv.APIKey, provider.WithBaseURL(srv.URL))
		_, err := p.CreateSession(ctx, "k")
		assert.ErrorIs(t, err, provider.ErrAuth)
		assert.NotErrorIs(t, err, provider.ErrRateLimited)
		assert.Contains(t, err.Error(), "API key is missing required scope: browsers:v3", "the configured version's refusal")
		assert.EqualValues(t, 3, srv.Creates())
		assert.Equal(t, provider.BrowserUseV3, p.APIVersion())
	})
	t.Run("other 403s are not retried", func(t *testing.T) {
		srv := cloudtest.NewServer(t, cloudtest.BrowserUse, providertest.DeadWS)
		srv.OnCreate(cloudtest.Status(403, `{"detail":"Session timeout limit exceeded (maximum 4 hours)"}`))
		_, err := provider.NewBrowserUse(srv.APIKey, provider.WithBaseURL(srv.URL)).CreateSession(ctx, "k")
		require.Error(t, err)
		assert.EqualValues(t, 1, srv.Creates())
	})
}

// TestBrowserUseSendsTheProxyCountryInLowerCase proves "US" goes out as
// "us", from WithBrowserUseSession and from WithSessionParams alike: the
// API's enum is lower case, and the fake refuses "US" with 422 as the
// service does.
func TestBrowserUseSendsTheProxyCountryInLowerCase(t *testing.T) {
	t.Parallel()
	for name, opt := range map[string]provider.Option{
		"session":      provider.WithBrowserUseSession(provider.BrowserUseSession{ProxyCountry: "US"}),
		"params":       provider.WithSessionParams(map[string]any{"proxyCountryCode": "DE"}),
		"gateway mode": nil,
	} {
		t.Run(name, func(t *testing.T) {
			kind := cloudtest.BrowserUse
			if opt == nil {
				kind, opt = cloudtest.Nous, provider.WithSessionParams(map[string]any{"proxyCountryCode": "US"})
			}
			srv := cloudtest.NewServer(t, kind, providertest.DeadWS)
			_, err := providertest.Client(srv, opt).CreateSession(context.Background(), "k")
			require.NoError(t, err)
			var body map[string]any
			require.NoError(t, json.Unmarshal(srv.Requests()[0].Body, &body))
			cc, _ := body["proxyCountryCode"].(string)
			assert.Equal(t, strings.ToLower(cc), cc)
			assert.NotEmpty(t, cc)
		})
	}
}

// TestGatewayTakesItsTokenFromASource proves the gateway client asks the
// token source for each request's token: a token refreshed after expiry
// is used by the next create, a failing source fails the create without
// a request (ErrUnavailable, its cause wrapped), and no token is in an
// error's text.
func TestGatewayTakesItsTokenFromASource(t *testing.T) {
	t.Parallel()
	srv := cloudtest.NewServer(t, cloudtest.Nous, providertest.DeadWS)
	const expired = "nous-access-token-EXPIRED-0001"
	var current atomic.Pointer[string]
	tok := expired
	current.Store(&tok)
	failing := errors.New("refresh token revoked")
	var fail atomic.Bool
	var asked atomic.Int64
	source := func(context.Context) (string, error) {
		asked.Add(1)
		if fail.Load() {
			return "", failing
		}
		return *current.Load(), nil
	}
	p := provider.NewBrowserUseGateway(srv.URL, "", provider.WithTokenSource(source))
	ctx := context.Background()

	_, err := p.CreateSession(ctx, "k")
	assert.ErrorIs(t, err, provider.ErrAuth, "the fake refuses the expired token")
	assert.NotContains(t, err.Error(), expired)

	fresh := srv.APIKey
	current.Store(&fresh)
	s, err := p.CreateSession(ctx, "k")
	require.NoError(t, err, "the refreshed token is used")
	var keys []string
	for _, r := range srv.Requests() {
		if r.Method == http.MethodPost {
			keys = append(keys, r.Header.Get("X-Browser-Use-API-Key"))
		}
	}
	assert.Equal(t, []string{expired, fresh}, keys)
	require.NoError(t, p.ReleaseSession(ctx, s))

	fail.Store(true)
	before := len(srv.Requests())
	_, err = p.CreateSession(ctx, "k2")
	assert.ErrorIs(t, err, provider.ErrUnavailable)
	assert.ErrorIs(t, err, failing)
	assert.Len(t, srv.Requests(), before, "no request without a token")
	assert.GreaterOrEqual(t, asked.Load(), int64(4))
}

// TestGatewayHasADefaultOrigin proves the gateway's origin defaults to
// hermes-agent's, https://browser-use-gateway.<domain>, the domain
// nousresearch.com unless named. Nothing leaves the machine: the
// transport records the URL and refuses.
func TestGatewayHasADefaultOrigin(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "https://browser-use-gateway.nousresearch.com", provider.GatewayOrigin(""))
	assert.Equal(t, "https://browser-use-gateway.example.org", provider.GatewayOrigin(" example.org. "))
	var got atomic.Pointer[url.URL]
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got.Store(r.URL)
		return nil, errors.New("not sent")
	})}
	_, err := provider.NewBrowserUseGateway("", "tok", provider.WithHTTPClient(hc)).CreateSession(context.Background(), "k")
	require.Error(t, err)
	require.NotNil(t, got.Load())
	assert.Equal(t, "https://browser-use-gateway.nousresearch.com/browsers", got.Load().String())
}

// TestBrowserlessReadsEveryCreateShape proves the close-session example's
// answer, {id, browserQL, browserWSEndpoint, stop} without connect, gives
// a session with its CDP URL and a working release, and that browserless
// sessions are not marked one-connection (reconnecting is documented).
func TestBrowserlessReadsEveryCreateShape(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string][]cloudtest.ServerOption{
		"sessions API":  nil,
		"close-session": {cloudtest.WithCloseSessionShape()},
	} {
		t.Run(name, func(t *testing.T) {
			srv := cloudtest.NewServer(t, cloudtest.Browserless, providertest.DeadWS, opts...)
			p := providertest.Client(srv)
			s, err := p.CreateSession(context.Background(), "k")
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(s.CDPURL, providertest.DeadWS), s.CDPURL)
			assert.False(t, s.SingleConnection)
			require.NoError(t, p.ReleaseSession(context.Background(), s))
			assert.False(t, srv.Live(s.ID))
		})
	}
}

// TestBrowserCashPollsAStartingSession proves a create answered
// "starting" with cdpUrl null is read through GET /v1/browser/session
// until it is active, and that one that does not start by the create's
// deadline fails as unavailable and is released.
func TestBrowserCashPollsAStartingSession(t *testing.T) {
	t.Parallel()
	spec, _ := provider.SessionAPIPreset("browser-cash")
	assert.Equal(t, "https://api.driver.dev", spec.BaseURL, "api-reference/overview.mdx")
	newClient := func(srv *cloudtest.Server) *provider.SessionAPI {
		p := providertest.Client(srv).(*provider.SessionAPI)
		provider.SetPollInterval(p, 10*time.Millisecond)
		return p
	}
	t.Run("starts", func(t *testing.T) {
		srv := cloudtest.NewServer(t, cloudtest.BrowserCash, providertest.DeadWS, cloudtest.WithStartingSessions(3))
		s, err := newClient(srv).CreateSession(context.Background(), "k")
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(s.CDPURL, providertest.DeadWS), s.CDPURL)
		assert.Equal(t, 3, srv.Polls())
		for _, r := range srv.Requests()[1:] {
			assert.Equal(t, "GET /v1/browser/session sessionId="+s.ID, r.Method+" "+r.Path+" "+r.Query)
		}
	})
	t.Run("never starts", func(t *testing.T) {
		srv := cloudtest.NewServer(t, cloudtest.BrowserCash, providertest.DeadWS, cloudtest.WithStartingSessions(1<<20))
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := newClient(srv).CreateSession(ctx, "k")
		assert.ErrorIs(t, err, provider.ErrUnavailable)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Contains(t, err.Error(), "still starting")
		assert.Positive(t, srv.Polls())
		assert.EqualValues(t, 1, srv.Releases(), "the session that did not start is given back")
		assert.Zero(t, srv.LiveCount())
	})
}

// TestSessionsCarryLiveViewAndExpiry proves each provider's session
// carries the live view and the expiry its create answer (or, for
// Browserbase, its debug call) documents, and none where it documents
// none.
func TestSessionsCarryLiveViewAndExpiry(t *testing.T) {
	t.Parallel()
	rows := []struct {
		kind    cloudtest.Kind
		live    func(srv *cloudtest.Server, s *provider.Session) string
		expires time.Duration // from now; 0: none
	}{
		{cloudtest.Browserbase, func(_ *cloudtest.Server, s *provider.Session) string { return cloudtest.BrowserbaseLiveURL(s.ID) }, cloudtest.FakeSessionLife},
		{cloudtest.BrowserUse, func(srv *cloudtest.Server, s *provider.Session) string { return srv.URL + "/live/" + s.ID }, cloudtest.FakeSessionLife},
		{cloudtest.Nous, func(srv *cloudtest.Server, s *provider.Session) string { return srv.URL + "/live/" + s.ID }, cloudtest.FakeSessionLife},
		// Steel's debugUrl, made interactive (docs.steel.dev "Human-in-the-Loop Controls").
		{cloudtest.Steel, func(srv *cloudtest.Server, s *provider.Session) string {
			return srv.URL + "/debug/" + s.ID + "?interactive=true"
		}, 5 * time.Minute},
		{cloudtest.Anchor, func(_ *cloudtest.Server, s *provider.Session) string {
			return "https://live.anchorbrowser.test?sessionId=" + s.ID
		}, 0},
		{cloudtest.Kernel, func(_ *cloudtest.Server, s *provider.Session) string { return "https://live.kernel.test/" + s.ID }, 0},
		{cloudtest.Hyperbrowser, func(_ *cloudtest.Server, s *provider.Session) string {
			return "https://app.hyperbrowser.test/live?token="
		}, 0},
		{cloudtest.Browserless, nil, 15 * time.Minute},
		{cloudtest.BrowserCash, nil, 0},
	}
	for _, row := range rows {
		t.Run(string(row.kind), func(t *testing.T) {
			srv := cloudtest.NewServer(t, row.kind, providertest.DeadWS)
			s, err := providertest.Client(srv).CreateSession(context.Background(), "k")
			require.NoError(t, err)
			switch {
			case row.live == nil:
				assert.Empty(t, s.LiveViewURL)
			case row.kind == cloudtest.Hyperbrowser:
				assert.True(t, strings.HasPrefix(s.LiveViewURL, row.live(srv, s)), s.LiveViewURL)
			default:
				assert.Equal(t, row.live(srv, s), s.LiveViewURL)
			}
			assert.Empty(t, s.ReplayURL, "no create answer names a recording")
			if row.expires == 0 {
				assert.True(t, s.ExpiresAt.IsZero(), s.ExpiresAt)
				return
			}
			assert.WithinDuration(t, time.Now().Add(row.expires), s.ExpiresAt, 5*time.Second)
		})
	}
}

// TestBrowserbaseLeavesOutAnEmptyProject proves a client without a
// project sends no "projectId" (optional since 2026-02) rather than "",
// which the API refuses.
func TestBrowserbaseLeavesOutAnEmptyProject(t *testing.T) {
	t.Parallel()
	srv := cloudtest.NewServer(t, cloudtest.Browserbase, providertest.DeadWS)
	p := provider.NewBrowserbase(srv.APIKey, "", provider.WithBaseURL(srv.URL))
	s, err := p.CreateSession(context.Background(), "k")
	require.NoError(t, err)
	require.NoError(t, p.ReleaseSession(context.Background(), s))
	reqs := srv.Requests()
	for _, i := range []int{0, len(reqs) - 1} {
		var body map[string]any
		require.NoError(t, json.Unmarshal(reqs[i].Body, &body))
		assert.NotContains(t, body, "projectId", reqs[i].Method+" "+reqs[i].Path)
	}
}
