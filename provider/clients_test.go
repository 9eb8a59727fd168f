package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
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

// TestProviderReleaseCalls proves each release sends the method, path and
// body the real API expects, with the key header.
func TestProviderReleaseCalls(t *testing.T) {
	t.Parallel()
	rows := []struct {
		kind       cloudtest.Kind
		method     string
		path       string         // %s is the session id
		keyHeader  string         // "?token" : the key is that query parameter
		wantBody   map[string]any // nil: no body
		createBody map[string]any
	}{
		{cloudtest.Browserbase, http.MethodPost, "/v1/sessions/%s", "X-BB-API-Key",
			map[string]any{"status": "REQUEST_RELEASE", "projectId": "proj-test-1"},
			map[string]any{"projectId": "proj-test-1"}},
		{cloudtest.BrowserUse, http.MethodPatch, "/api/v3/browsers/%s", "X-Browser-Use-API-Key",
			map[string]any{"action": "stop"}, map[string]any{}},
		{cloudtest.BrowserUseV2, http.MethodPatch, "/api/v2/browsers/%s", "X-Browser-Use-API-Key",
			map[string]any{"action": "stop"}, map[string]any{}},
		{cloudtest.Nous, http.MethodPatch, "/browsers/%s", "X-Browser-Use-API-Key",
			map[string]any{"action": "stop"}, map[string]any{"timeout": 5.0, "proxyCountryCode": "us"}},
		{cloudtest.Steel, http.MethodPost, "/v1/sessions/%s/release", "steel-api-key",
			nil, map[string]any{}},
		{cloudtest.Browserless, http.MethodDelete, "/e/53203b/session/%s", "?token",
			nil, map[string]any{"ttl": 900000.0}},
		{cloudtest.Anchor, http.MethodDelete, "/v1/sessions/%s", "anchor-api-key", nil, map[string]any{}},
		{cloudtest.Kernel, http.MethodDelete, "/browsers/%s", "Authorization", nil, map[string]any{}},
		{cloudtest.Hyperbrowser, http.MethodPut, "/api/session/%s/stop", "x-api-key", nil, map[string]any{}},
		{cloudtest.BrowserCash, http.MethodDelete, "/v1/browser/session", "Authorization", nil, map[string]any{}},
	}
	keyOf := func(header string, r cloudtest.Request) string {
		if q, ok := strings.CutPrefix(header, "?"); ok {
			v, _ := url.ParseQuery(r.Query)
			return v.Get(q)
		}
		return strings.TrimPrefix(r.Header.Get(header), "Bearer ")
	}
	for _, row := range rows {
		t.Run(string(row.kind), func(t *testing.T) {
			srv := cloudtest.NewServer(t, row.kind, providertest.DeadWS)
			p := providertest.Client(srv)
			ctx := context.Background()
			s, err := p.CreateSession(ctx, "k")
			require.NoError(t, err)
			require.NoError(t, p.ReleaseSession(ctx, s))

			reqs := srv.Requests()
			create, release := reqs[0], reqs[len(reqs)-1]
			assert.Equal(t, http.MethodPost, create.Method)
			assert.Equal(t, srv.APIKey, keyOf(row.keyHeader, create))
			assert.Equal(t, "application/json", create.Header.Get("Content-Type"))
			var cb map[string]any
			require.NoError(t, json.Unmarshal(create.Body, &cb))
			assert.Equal(t, row.createBody, cb)

			assert.Equal(t, row.method, release.Method)
			if strings.Contains(row.path, "%s") {
				assert.Equal(t, fmt.Sprintf(row.path, s.ID), release.Path)
			} else {
				assert.Equal(t, row.path, release.Path)
				assert.Equal(t, "sessionId="+s.ID, release.Query)
			}
			assert.Equal(t, srv.APIKey, keyOf(row.keyHeader, release))
			if row.wantBody == nil {
				assert.Empty(t, release.Body)
			} else {
				var got map[string]any
				require.NoError(t, json.Unmarshal(release.Body, &got))
				assert.Equal(t, row.wantBody, got)
			}
			assert.EqualValues(t, 1, srv.Creates())
			assert.EqualValues(t, 1, srv.Releases())

			// A second release of the same session: the provider answers
			// 404, which comes back as a release *Error, but where the
			// provider documents it as "already ended" (Browser.cash).
			err = p.ReleaseSession(ctx, s)
			if row.kind == cloudtest.BrowserCash {
				require.NoError(t, err, "BrowserCash/docs errors.mdx: a 404 on DELETE means the session already ended")
			} else {
				var pe *provider.Error
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, "release", pe.Op)
				assert.Equal(t, http.StatusNotFound, pe.Status)
				assert.Contains(t, pe.Code+" "+pe.Message, "Session not found")
			}

			// Nothing to release: no call.
			require.NoError(t, p.ReleaseSession(ctx, nil))
			require.NoError(t, p.ReleaseSession(ctx, &provider.Session{Key: "k"}))
			assert.EqualValues(t, 2, srv.Releases())
		})
	}
}

// TestProviderCreateErrors proves every scripted failure of create comes back
// as the right *Error, for every provider.
func TestProviderCreateErrors(t *testing.T) {
	t.Parallel()
	date := time.Now().Add(2 * time.Minute).UTC().Format(http.TimeFormat)
	rows := []struct {
		name   string
		proves string
		reply  cloudtest.Reply
		want   provider.Error // Provider and Op are filled in
		is     []error
		isNot  []error
		// approx: RetryAfter is checked within ±3 s.
		approx bool
	}{
		{
			name:   "429 Fastify shape and Retry-After seconds",
			proves: "a rate-limit answer in Browserbase's Fastify shape, with HTTP's Retry-After: code, text and window are read",
			reply: cloudtest.Reply{Status: 429, Header: http.Header{"Retry-After": {"17"}},
				Body: `{"statusCode":429,"error":"Too Many Requests","message":"Too Many Requests"}`},
			want:  provider.Error{Status: 429, Code: "Too Many Requests", Message: "Too Many Requests", RetryAfter: 17 * time.Second},
			is:    []error{provider.ErrRateLimited},
			isNot: []error{provider.ErrUnavailable, provider.ErrAuth, provider.ErrPayment, provider.ErrInvalidParam},
		},
		{
			name:   "429 body retryAfter and limit only",
			proves: "a body that names its window and limit gives them (no provider documents one; a gateway in front may send it)",
			reply:  cloudtest.Status(429, `{"message":"Too many sessions","retryAfter":17,"limit":200}`),
			want:   provider.Error{Status: 429, Message: "Too many sessions", RetryAfter: 17 * time.Second, Limit: 200},
			is:     []error{provider.ErrRateLimited},
		},
		{
			name:   "429 Retry-After header seconds only",
			proves: "delta-seconds in the header give the window",
			reply:  cloudtest.Reply{Status: 429, Header: http.Header{"Retry-After": {"42"}}, Body: `{"message":"Too many sessions"}`},
			want:   provider.Error{Status: 429, Message: "Too many sessions", RetryAfter: 42 * time.Second},
			is:     []error{provider.ErrRateLimited},
		},
		{
			name:   "429 Retry-After HTTP-date",
			proves: "an HTTP-date in the header gives the window from now",
			reply:  cloudtest.Reply{Status: 429, Header: http.Header{"Retry-After": {date}}, Body: `{}`},
			want:   provider.Error{Status: 429, Message: "Too Many Requests", RetryAfter: 2 * time.Minute},
			is:     []error{provider.ErrRateLimited},
			approx: true,
		},
		{
			name:   "429 header shorter than body",
			proves: "the longer of header and body windows wins",
			reply:  cloudtest.Reply{Status: 429, Header: http.Header{"Retry-After": {"5"}}, Body: `{"message":"Too many sessions","retryAfter":17}`},
			want:   provider.Error{Status: 429, Message: "Too many sessions", RetryAfter: 17 * time.Second},
			is:     []error{provider.ErrRateLimited},
		},
		{
			name:   "429 Fastify shape with X-RateLimit-Limit",
			proves: "statusCode/error/message bodies and the limit header are read",
			reply: cloudtest.Reply{Status: 429, Header: http.Header{"X-Ratelimit-Limit": {"25"}, "Retry-After": {"60"}},
				Body: `{"statusCode":429,"error":"Too Many Requests","message":"Rate limit exceeded, retry in 1 minute"}`},
			want: provider.Error{Status: 429, Code: "Too Many Requests", Message: "Rate limit exceeded, retry in 1 minute", RetryAfter: time.Minute, Limit: 25},
			is:   []error{provider.ErrRateLimited},
		},
		{
			name:   "401",
			proves: "a refused key is provider.ErrAuth with the provider's message",
			reply:  cloudtest.Status(401, `{"message":"Invalid API key"}`),
			want:   provider.Error{Status: 401, Message: "Invalid API key"},
			is:     []error{provider.ErrAuth},
			isNot:  []error{provider.ErrRateLimited, provider.ErrUnavailable},
		},
		{
			name:   "403 nested error object",
			proves: "403 is provider.ErrAuth; error.code/error.message are read",
			reply:  cloudtest.Status(403, `{"error":{"code":"FORBIDDEN","message":"project is not yours"}}`),
			want:   provider.Error{Status: 403, Code: "FORBIDDEN", Message: "project is not yours"},
			is:     []error{provider.ErrAuth},
		},
		{
			name:   "402",
			proves: "out of credits is provider.ErrPayment",
			reply:  cloudtest.Status(402, `{"errorCode":"INSUFFICIENT_CREDITS","message":"Not enough credits"}`),
			want:   provider.Error{Status: 402, Code: "INSUFFICIENT_CREDITS", Message: "Not enough credits"},
			is:     []error{provider.ErrPayment},
			isNot:  []error{provider.ErrUnavailable},
		},
		{
			name:   "500",
			proves: "a server error is provider.ErrUnavailable",
			reply:  cloudtest.Status(500, `{"code":"INTERNAL","message":"boom"}`),
			want:   provider.Error{Status: 500, Code: "INTERNAL", Message: "boom"},
			is:     []error{provider.ErrUnavailable},
			isNot:  []error{provider.ErrRateLimited},
		},
		{
			name:   "503 html with Retry-After",
			proves: "a non-JSON error page still gives status, text and window",
			reply:  cloudtest.Reply{Status: 503, Header: http.Header{"Retry-After": {"9"}}, Body: "<html><body>upstream down</body></html>"},
			want:   provider.Error{Status: 503, Message: "Service Unavailable", RetryAfter: 9 * time.Second},
			is:     []error{provider.ErrUnavailable},
		},
		{
			name:   "422 FastAPI detail list",
			proves: "FastAPI validation errors give their msgs and the field of their loc: a refused parameter",
			reply:  cloudtest.Status(422, `{"detail":[{"loc":["body","timeout"],"msg":"Input should be less than 240","type":"less_than"}]}`),
			want:   provider.Error{Status: 422, Message: "Input should be less than 240", Param: "timeout"},
			is:     []error{provider.ErrInvalidParam},
			isNot:  []error{provider.ErrRateLimited, provider.ErrAuth, provider.ErrPayment, provider.ErrUnavailable},
		},
		{
			name:   "404 FastAPI detail string",
			proves: "Browser Use's {\"detail\": ...} shape is read",
			reply:  cloudtest.Status(404, `{"detail":"Not Found"}`),
			want:   provider.Error{Status: 404, Message: "Not Found"},
		},
	}
	for _, kind := range providertest.APIKinds {
		for _, row := range rows {
			t.Run(string(kind)+"/"+row.name, func(t *testing.T) {
				t.Log("proves:", row.proves)
				srv := cloudtest.NewServer(t, kind, providertest.DeadWS)
				srv.OnCreate(row.reply)
				p := providertest.Client(srv)
				s, err := p.CreateSession(context.Background(), "k")
				require.Error(t, err)
				assert.Nil(t, s)
				var pe *provider.Error
				require.ErrorAs(t, err, &pe)
				want := row.want
				want.Provider, want.Op = p.Name(), "create"
				if row.approx {
					assert.InDelta(t, want.RetryAfter.Seconds(), pe.RetryAfter.Seconds(), 3)
					want.RetryAfter = pe.RetryAfter
				}
				assert.Equal(t, want, *pe)
				for _, target := range row.is {
					assert.ErrorIs(t, err, target)
				}
				for _, target := range row.isNot {
					assert.NotErrorIs(t, err, target)
				}
				assert.EqualValues(t, 1, srv.Creates())
			})
		}
	}
}

// TestProviderCreateFailuresWithoutAnswer proves hangs, malformed and
// oversized answers and dead servers are ErrUnavailable, wrapping
// the cause.
func TestProviderCreateFailuresWithoutAnswer(t *testing.T) {
	// Not parallel: it times how promptly a hang is given up.
	for _, kind := range providertest.APIKinds {
		t.Run(string(kind)+"/hang past the deadline returns promptly", func(t *testing.T) {
			srv := cloudtest.NewServer(t, kind, providertest.DeadWS)
			srv.OnCreate(cloudtest.Hang())
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := providertest.Client(srv).CreateSession(ctx, "k")
			assert.Less(t, time.Since(start), 2*time.Second, "the client did not give up at the deadline")
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.ErrorIs(t, err, provider.ErrUnavailable)
			var pe *provider.Error
			require.ErrorAs(t, err, &pe)
			assert.Zero(t, pe.Status)
		})
		t.Run(string(kind)+"/malformed JSON on 2xx", func(t *testing.T) {
			srv := cloudtest.NewServer(t, kind, providertest.DeadWS)
			srv.OnCreate(cloudtest.Malformed())
			_, err := providertest.Client(srv).CreateSession(context.Background(), "k")
			assert.ErrorIs(t, err, provider.ErrUnavailable)
			var se *json.SyntaxError
			assert.ErrorAs(t, err, &se, "the decode error is wrapped")
			var pe *provider.Error
			require.ErrorAs(t, err, &pe)
			assert.GreaterOrEqual(t, pe.Status, 200)
			assert.Less(t, pe.Status, 300)
		})
		t.Run(string(kind)+"/oversized answer", func(t *testing.T) {
			srv := cloudtest.NewServer(t, kind, providertest.DeadWS)
			srv.OnCreate(cloudtest.Reply{Body: `{"id":"x","pad":"` + strings.Repeat("a", 2<<20) + `"}`})
			_, err := providertest.Client(srv).CreateSession(context.Background(), "k")
			assert.ErrorIs(t, err, provider.ErrUnavailable)
			assert.Contains(t, err.Error(), "larger than")
		})
		t.Run(string(kind)+"/2xx without a session id", func(t *testing.T) {
			srv := cloudtest.NewServer(t, kind, providertest.DeadWS)
			srv.OnCreate(cloudtest.Reply{Body: `{"status":"RUNNING"}`})
			_, err := providertest.Client(srv).CreateSession(context.Background(), "k")
			assert.ErrorIs(t, err, provider.ErrUnavailable)
		})
		t.Run(string(kind)+"/server gone", func(t *testing.T) {
			srv := cloudtest.NewServer(t, kind, providertest.DeadWS)
			p := providertest.Client(srv)
			srv.Close()
			_, err := p.CreateSession(context.Background(), "k")
			assert.ErrorIs(t, err, provider.ErrUnavailable)
			var pe *provider.Error
			require.ErrorAs(t, err, &pe)
			assert.Zero(t, pe.Status)
			assert.Equal(t, "create", pe.Op)
		})
		t.Run(string(kind)+"/201 without a CDP URL is a session, not an error", func(t *testing.T) {
			srv := cloudtest.NewServer(t, kind, providertest.DeadWS)
			srv.OnCreate(cloudtest.NoCDP())
			s, err := providertest.Client(srv).CreateSession(context.Background(), "k")
			require.NoError(t, err)
			require.NotNil(t, s)
			assert.NotEmpty(t, s.ID)
			assert.Empty(t, s.CDPURL, "the router, not the client, decides what an empty CDP URL means")
			assert.EqualValues(t, 0, srv.Versions())
		})
	}
}

// TestProviderCDPResolution proves failures while resolving an http CDP URL
// through /json/version (Browser Use, plain endpoints) are reported as create
// failures.
func TestProviderCDPResolution(t *testing.T) {
	// Not parallel: it times how promptly a hang is given up.
	for _, kind := range []cloudtest.Kind{cloudtest.BrowserUse, cloudtest.CDP} {
		t.Run(string(kind)+"/json/version 500", func(t *testing.T) {
			srv := cloudtest.NewServer(t, kind, providertest.DeadWS)
			srv.OnVersion(cloudtest.Status(500, `{"message":"browser crashed"}`))
			_, err := providertest.Client(srv).CreateSession(context.Background(), "k")
			assert.ErrorIs(t, err, provider.ErrUnavailable)
			var pe *provider.Error
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, "create", pe.Op)
			assert.Equal(t, 500, pe.Status)
			assert.Contains(t, err.Error(), "/json/version answered HTTP 500")
		})
		t.Run(string(kind)+"/json/version malformed", func(t *testing.T) {
			srv := cloudtest.NewServer(t, kind, providertest.DeadWS)
			srv.OnVersion(cloudtest.Reply{Body: `{"webSocketDebuggerUrl":`})
			_, err := providertest.Client(srv).CreateSession(context.Background(), "k")
			assert.ErrorIs(t, err, provider.ErrUnavailable)
		})
		t.Run(string(kind)+"/json/version without websocket", func(t *testing.T) {
			srv := cloudtest.NewServer(t, kind, providertest.DeadWS)
			srv.OnVersion(cloudtest.Reply{Body: `{"Browser":"Chrome"}`})
			_, err := providertest.Client(srv).CreateSession(context.Background(), "k")
			assert.ErrorIs(t, err, provider.ErrUnavailable)
			assert.Contains(t, err.Error(), "/json/version has no webSocketDebuggerUrl")
		})
		t.Run(string(kind)+"/json/version hangs", func(t *testing.T) {
			srv := cloudtest.NewServer(t, kind, providertest.DeadWS)
			srv.OnVersion(cloudtest.Hang())
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := providertest.Client(srv).CreateSession(ctx, "k")
			assert.Less(t, time.Since(start), 2*time.Second)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
		})
	}
	t.Run("cdp endpoint with a wrong token", func(t *testing.T) {
		srv := cloudtest.NewServer(t, cloudtest.CDP, providertest.DeadWS)
		_, err := provider.CDPEndpoint(srv.URL+"?token=wrong-token-123").CreateSession(context.Background(), "k")
		assert.ErrorIs(t, err, provider.ErrAuth)
		assert.NotContains(t, err.Error(), "wrong-token-123")
		assert.Contains(t, err.Error(), "answered HTTP 401")
	})
	t.Run("cdp endpoint with a bad scheme", func(t *testing.T) {
		_, err := provider.CDPEndpoint("ftp://host/x?token=s3cr3t-token").CreateSession(context.Background(), "k")
		assert.ErrorIs(t, err, provider.ErrUnavailable)
		assert.NotContains(t, err.Error(), "s3cr3t-token")
	})
	t.Run("cdp endpoint with no URL", func(t *testing.T) {
		_, err := provider.CDPEndpoint("").CreateSession(context.Background(), "k")
		assert.Error(t, err)
	})
}

// TestProviderKeyNeverLeaks forces every error path of every client, with a
// server that echoes the key back, and proves the key is absent from the
// error text.
func TestProviderKeyNeverLeaks(t *testing.T) {
	t.Parallel()
	const key = "sk-live-SUPERSECRET-0123456789"
	echo := func(status int) cloudtest.Reply {
		return cloudtest.Status(status, `{"error":"bad key `+key+`","message":"key `+key+` refused","detail":"`+key+`"}`)
	}
	replies := map[string]cloudtest.Reply{
		"401 echo":   echo(401),
		"402 echo":   echo(402),
		"429":        cloudtest.RateLimited("17"),
		"429 echo":   echo(429),
		"500 echo":   echo(500),
		"text echo":  {Status: 502, Body: "proxy error for key " + key},
		"malformed":  cloudtest.Malformed(),
		"no id":      {Body: `{"note":"` + key + `"}`},
		"wrong type": {Body: `{"id": 12}`},
	}
	var errs []error
	for _, kind := range providertest.APIKinds {
		for name, rep := range replies {
			srv := cloudtest.NewServer(t, kind, providertest.DeadWS, cloudtest.WithAPIKey(key))
			srv.OnCreate(rep)
			_, err := providertest.Client(srv).CreateSession(context.Background(), "k")
			require.Error(t, err, "%s/%s", kind, name)
			errs = append(errs, err)
		}
		// Release failures.
		srv := cloudtest.NewServer(t, kind, providertest.DeadWS, cloudtest.WithAPIKey(key))
		p := providertest.Client(srv)
		s, err := p.CreateSession(context.Background(), "k")
		require.NoError(t, err)
		srv.OnRelease(echo(500), echo(401))
		errs = append(errs, p.ReleaseSession(context.Background(), s), p.ReleaseSession(context.Background(), s))
		// Hang and a dead server.
		srv.OnCreate(cloudtest.Hang())
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_, err = p.CreateSession(ctx, "k")
		cancel()
		errs = append(errs, err)
		srv.Close()
		_, err = p.CreateSession(context.Background(), "k")
		errs = append(errs, err)
		errs = append(errs, p.ReleaseSession(context.Background(), s))
	}
	// A wrong key is refused by the fakes themselves.
	for _, kind := range providertest.APIKinds {
		srv := cloudtest.NewServer(t, kind, providertest.DeadWS)
		p := providertest.ClientWithKey(srv, key)
		_, err := p.CreateSession(context.Background(), "k")
		assert.ErrorIs(t, err, provider.ErrAuth)
		errs = append(errs, err)
	}
	// The CDP endpoint's token is its key.
	srv := cloudtest.NewServer(t, cloudtest.CDP, providertest.DeadWS, cloudtest.WithAPIKey(key))
	srv.OnVersion(echo(500), cloudtest.Malformed(), cloudtest.Hang())
	p := provider.CDPEndpoint(srv.EndpointURL())
	for range 2 {
		_, err := p.CreateSession(context.Background(), "k")
		errs = append(errs, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	_, err := p.CreateSession(ctx, "k")
	cancel()
	errs = append(errs, err)
	srv.Close()
	_, err = p.CreateSession(context.Background(), "k")
	errs = append(errs, err)
	_, err = provider.CDPEndpoint("http://user:"+key+"@127.0.0.1:9/").CreateSession(context.Background(), "k")
	errs = append(errs, err)

	require.Len(t, errs, len(providertest.APIKinds)*(len(replies)+5)+len(providertest.APIKinds)+5)
	for i, err := range errs {
		require.Error(t, err, "error %d", i)
		for _, text := range []string{err.Error(), fmt.Sprintf("%v", err), fmt.Sprintf("%+v", err)} {
			assert.NotContains(t, text, key, "error %d leaks the key: %s", i, text)
			assert.NotContains(t, text, "SUPERSECRET", "error %d leaks part of the key: %s", i, text)
		}
	}
}

// TestProviderDefaultClientDoesNotFollowRedirects proves the API key header
// is never carried to another host by a redirect.
func TestProviderDefaultClientDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	var stolen atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-BB-API-Key") != "" {
			stolen.Add(1)
		}
	}))
	defer other.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	_, err := provider.NewBrowserbase("sk-redirect-key", "p", provider.WithBaseURL(redirector.URL)).CreateSession(context.Background(), "k")
	var pe *provider.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, http.StatusTemporaryRedirect, pe.Status)
	assert.Zero(t, stolen.Load())
}

// TestProviderOptions proves the options: session params merge into the
// create body (the client's own fields win), a custom name and HTTP client.
func TestProviderOptions(t *testing.T) {
	t.Parallel()
	srv := cloudtest.NewServer(t, cloudtest.Browserbase, providertest.DeadWS)
	var used atomic.Int64
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		used.Add(1)
		return http.DefaultTransport.RoundTrip(r)
	})}
	p := provider.NewBrowserbase(srv.APIKey, srv.ProjectID,
		provider.WithBaseURL(srv.URL+"/"),
		provider.WithHTTPClient(hc),
		provider.WithName("bb-eu"),
		provider.WithSessionParams(map[string]any{"keepAlive": true, "region": "eu-central-1", "projectId": "not-this"}))
	assert.Equal(t, "bb-eu", p.Name())
	_, err := p.CreateSession(context.Background(), "k")
	require.NoError(t, err)
	assert.EqualValues(t, 2, used.Load(), "the create and the live view's GET /v1/sessions/{id}/debug")
	var body map[string]any
	require.NoError(t, json.Unmarshal(srv.Requests()[0].Body, &body))
	assert.Equal(t, map[string]any{"keepAlive": true, "region": "eu-central-1", "projectId": srv.ProjectID}, body)

	srv.OnCreate(cloudtest.RateLimited("1"))
	_, err = p.CreateSession(context.Background(), "k")
	var pe *provider.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "bb-eu", pe.Provider)
	assert.True(t, strings.HasPrefix(err.Error(), "cloud browser provider bb-eu: create session failed: HTTP 429 Too Many Requests (retry after 1s)"), err.Error())
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rows := []struct {
		in   string
		want time.Duration
	}{
		{"17", 17 * time.Second},
		{" 0 ", 0},
		{"1.5", 1500 * time.Millisecond},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"Sun, 01 Mar 2026 12:01:00 GMT", time.Minute},
		{"-5", 0},
		{"soon", 0},
		{"", 0},
	}
	for _, row := range rows {
		assert.Equal(t, row.want, provider.ParseRetryAfter(row.in, now), "Retry-After %q", row.in)
	}
}

func TestProviderErrorText(t *testing.T) {
	t.Parallel()
	e := &provider.Error{Provider: "Browserbase", Op: "create", Status: 429, Code: "RATE_LIMIT_EXCEEDED", RetryAfter: 17 * time.Second, Limit: 200}
	assert.Equal(t, "cloud browser provider Browserbase: create session failed: HTTP 429 RATE_LIMIT_EXCEEDED (retry after 17s, limit 200)", e.Error())
	cause := errors.New("dial tcp: connection refused")
	e = &provider.Error{Provider: "Steel", Op: "release", Err: cause}
	assert.Equal(t, "cloud browser provider Steel: release session failed: dial tcp: connection refused", e.Error())
	assert.ErrorIs(t, e, cause)
	assert.ErrorIs(t, e, provider.ErrUnavailable)
}
