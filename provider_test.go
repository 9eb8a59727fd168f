package hybroute

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

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
)

// deadWS is a websocket URL for tests that never connect to the browser.
const deadWS = "ws://127.0.0.1:9/devtools/browser/not-started"

// apiKinds are the providers with a session API (the managed gateway,
// whose create retries, has tests of its own).
var apiKinds = append([]cloudtest.Kind{cloudtest.Browserbase, cloudtest.BrowserUse, cloudtest.BrowserUseV2, cloudtest.Steel},
	cloudtest.SessionAPIKinds...)

// clientFor builds the hybroute client that talks to srv.
func clientFor(srv *cloudtest.Server, opts ...ProviderOption) Provider {
	return clientForKey(srv, srv.APIKey, opts...)
}

// clientForKey builds the hybroute client that talks to srv with key.
func clientForKey(srv *cloudtest.Server, key string, opts ...ProviderOption) Provider {
	opts = append([]ProviderOption{WithProviderBaseURL(srv.URL)}, opts...)
	switch srv.Kind {
	case cloudtest.Browserbase:
		return NewBrowserbase(key, srv.ProjectID, opts...)
	case cloudtest.BrowserUse:
		return NewBrowserUse(key, opts...)
	case cloudtest.BrowserUseV2:
		return NewBrowserUse(key, append(opts, WithBrowserUseAPI(BrowserUseV2))...)
	case cloudtest.Nous:
		return NewBrowserUseGateway(srv.URL, key, opts...)
	case cloudtest.Steel:
		return NewSteel(key, opts...)
	case cloudtest.CDP:
		return CDPEndpoint(srv.EndpointURL(), opts...)
	}
	if spec, ok := SessionAPIPreset(string(srv.Kind)); ok {
		p, err := NewSessionAPI(spec, key, opts...)
		if err != nil {
			panic(err)
		}
		return p
	}
	panic("unknown kind " + string(srv.Kind))
}

// titlePage serves a page whose title is the given string, on loopback.
func titlePage(t *testing.T, title string) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<!doctype html><title>%s</title><p>hello", title)
	}))
	t.Cleanup(s.Close)
	return s.URL
}

// driveTitle connects chromedp to a CDP URL, navigates and returns the title.
func driveTitle(t *testing.T, cdpURL, page string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	actx, acancel := remote.NewAllocator(ctx, cdpURL)
	defer acancel()
	cctx, ccancel := chromedp.NewContext(actx)
	defer ccancel()
	require.NoError(t, chromedp.Do(cctx, chromedp.Navigate(page)))
	title, err := chromedp.Run(cctx, chromedp.Title())
	require.NoError(t, err)
	return title
}

// TestProviderSessionsDriveARealBrowser proves that each client's session
// carries a CDP URL that really drives a browser, and that release hits the
// right call.
func TestProviderSessionsDriveARealBrowser(t *testing.T) {
	t.Parallel()
	chrome := cloudtest.LaunchChromium(t)
	page := titlePage(t, "hybroute provider test")

	rows := []struct {
		name string
		kind cloudtest.Kind
		// provider builds the client; nil means clientFor.
		provider func(srv *cloudtest.Server) Provider
		proves   string
		check    func(t *testing.T, srv *cloudtest.Server, s *Session)
	}{
		{
			name:   "browserbase",
			kind:   cloudtest.Browserbase,
			proves: "connectUrl (wss with signingKey query) is used as the CDP URL",
			check: func(t *testing.T, srv *cloudtest.Server, s *Session) {
				assert.Contains(t, s.CDPURL, "signingKey=sig-"+s.ID)
			},
		},
		{
			name:   "browser-use",
			kind:   cloudtest.BrowserUse,
			proves: "an http cdpUrl is resolved through /json/version to the websocket",
			check: func(t *testing.T, srv *cloudtest.Server, s *Session) {
				assert.Equal(t, chrome.WSURL, s.CDPURL)
				assert.EqualValues(t, 1, srv.Versions())
			},
		},
		{
			name:   "steel",
			kind:   cloudtest.Steel,
			proves: "websocketUrl gets the apiKey query Steel's websocket requires",
			check: func(t *testing.T, srv *cloudtest.Server, s *Session) {
				u, err := url.Parse(s.CDPURL)
				require.NoError(t, err)
				assert.Equal(t, srv.APIKey, u.Query().Get("apiKey"))
				assert.Equal(t, s.ID, u.Query().Get("sessionId"))
			},
		},
		{
			name:   "cdp endpoint over http with token",
			kind:   cloudtest.CDP,
			proves: "an http(s) endpoint is resolved through /json/version and keeps its ?token=",
			check: func(t *testing.T, srv *cloudtest.Server, s *Session) {
				u, err := url.Parse(s.CDPURL)
				require.NoError(t, err)
				assert.Equal(t, "ws", u.Scheme)
				assert.Equal(t, srv.APIKey, u.Query().Get("token"))
				assert.Empty(t, s.ID)
			},
		},
		{
			name:     "cdp endpoint over ws",
			kind:     cloudtest.CDP,
			provider: func(*cloudtest.Server) Provider { return CDPEndpoint(chrome.WSURL) },
			proves:   "a ws endpoint is handed over unchanged, with no HTTP call",
			check: func(t *testing.T, srv *cloudtest.Server, s *Session) {
				assert.Equal(t, chrome.WSURL, s.CDPURL)
				assert.Empty(t, srv.Requests())
			},
		},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			t.Log("proves:", row.proves)
			srv := cloudtest.NewServer(t, row.kind, chrome.WSURL)
			p := clientFor(srv)
			if row.provider != nil {
				p = row.provider(srv)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()

			s, err := p.CreateSession(ctx, "sess-key")
			require.NoError(t, err)
			require.NotNil(t, s)
			assert.Equal(t, "sess-key", s.Key)
			assert.False(t, s.FallbackFromCloud)
			require.NotEmpty(t, s.CDPURL)
			row.check(t, srv, s)

			assert.Equal(t, "hybroute provider test", driveTitle(t, s.CDPURL, page))

			// The release has a budget of its own: on a loaded machine
			// the drive may have spent the create's.
			rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer rcancel()
			require.NoError(t, p.ReleaseSession(rctx, s))
			if s.ID != "" {
				assert.EqualValues(t, 1, srv.Releases())
				assert.False(t, srv.Live(s.ID), "the fake still holds the session after release")
			} else {
				assert.EqualValues(t, 0, srv.Releases())
			}
		})
	}
}

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
			srv := cloudtest.NewServer(t, row.kind, deadWS)
			p := clientFor(srv)
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
			// 404, which comes back as a release *ProviderError.
			err = p.ReleaseSession(ctx, s)
			var pe *ProviderError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, "release", pe.Op)
			assert.Equal(t, http.StatusNotFound, pe.Status)
			assert.Contains(t, pe.Code+" "+pe.Message, "Session not found")

			// Nothing to release: no call.
			require.NoError(t, p.ReleaseSession(ctx, nil))
			require.NoError(t, p.ReleaseSession(ctx, &Session{Key: "k"}))
			assert.EqualValues(t, 2, srv.Releases())
		})
	}
}

// TestProviderCreateErrors proves every scripted failure of create comes back
// as the right *ProviderError, for every provider.
func TestProviderCreateErrors(t *testing.T) {
	t.Parallel()
	date := time.Now().Add(2 * time.Minute).UTC().Format(http.TimeFormat)
	rows := []struct {
		name   string
		proves string
		reply  cloudtest.Reply
		want   ProviderError // Provider and Op are filled in
		is     []error
		isNot  []error
		// approx: RetryAfter is checked within ±3 s.
		approx bool
	}{
		{
			name:   "429 observed body and Retry-After seconds",
			proves: "a rate-limit answer: code, limit and window are all read",
			reply:  cloudtest.RateLimited("17"),
			want:   ProviderError{Status: 429, Code: "RATE_LIMIT_EXCEEDED", RetryAfter: 17 * time.Second, Limit: 200},
			is:     []error{ErrRateLimited},
			isNot:  []error{ErrProviderUnavailable, ErrUnauthorized, ErrPaymentRequired},
		},
		{
			name:   "429 body retryAfter only",
			proves: "a retryAfter body field alone gives the window",
			reply:  cloudtest.RateLimited(""),
			want:   ProviderError{Status: 429, Code: "RATE_LIMIT_EXCEEDED", RetryAfter: 17 * time.Second, Limit: 200},
			is:     []error{ErrRateLimited},
		},
		{
			name:   "429 Retry-After header seconds only",
			proves: "delta-seconds in the header give the window",
			reply:  cloudtest.Reply{Status: 429, Header: http.Header{"Retry-After": {"42"}}, Body: `{"message":"Too many sessions"}`},
			want:   ProviderError{Status: 429, Message: "Too many sessions", RetryAfter: 42 * time.Second},
			is:     []error{ErrRateLimited},
		},
		{
			name:   "429 Retry-After HTTP-date",
			proves: "an HTTP-date in the header gives the window from now",
			reply:  cloudtest.Reply{Status: 429, Header: http.Header{"Retry-After": {date}}, Body: `{}`},
			want:   ProviderError{Status: 429, Message: "Too Many Requests", RetryAfter: 2 * time.Minute},
			is:     []error{ErrRateLimited},
			approx: true,
		},
		{
			name:   "429 header shorter than body",
			proves: "the longer of header and body windows wins",
			reply:  cloudtest.Reply{Status: 429, Header: http.Header{"Retry-After": {"5"}}, Body: cloudtest.RateLimitBody},
			want:   ProviderError{Status: 429, Code: "RATE_LIMIT_EXCEEDED", RetryAfter: 17 * time.Second, Limit: 200},
			is:     []error{ErrRateLimited},
		},
		{
			name:   "429 Fastify shape with X-RateLimit-Limit",
			proves: "statusCode/error/message bodies and the limit header are read",
			reply: cloudtest.Reply{Status: 429, Header: http.Header{"X-Ratelimit-Limit": {"25"}, "Retry-After": {"60"}},
				Body: `{"statusCode":429,"error":"Too Many Requests","message":"Rate limit exceeded, retry in 1 minute"}`},
			want: ProviderError{Status: 429, Code: "Too Many Requests", Message: "Rate limit exceeded, retry in 1 minute", RetryAfter: time.Minute, Limit: 25},
			is:   []error{ErrRateLimited},
		},
		{
			name:   "401",
			proves: "a refused key is ErrUnauthorized with the provider's message",
			reply:  cloudtest.Status(401, `{"message":"Invalid API key"}`),
			want:   ProviderError{Status: 401, Message: "Invalid API key"},
			is:     []error{ErrUnauthorized},
			isNot:  []error{ErrRateLimited, ErrProviderUnavailable},
		},
		{
			name:   "403 nested error object",
			proves: "403 is ErrUnauthorized; error.code/error.message are read",
			reply:  cloudtest.Status(403, `{"error":{"code":"FORBIDDEN","message":"project is not yours"}}`),
			want:   ProviderError{Status: 403, Code: "FORBIDDEN", Message: "project is not yours"},
			is:     []error{ErrUnauthorized},
		},
		{
			name:   "402",
			proves: "out of credits is ErrPaymentRequired",
			reply:  cloudtest.Status(402, `{"errorCode":"INSUFFICIENT_CREDITS","message":"Not enough credits"}`),
			want:   ProviderError{Status: 402, Code: "INSUFFICIENT_CREDITS", Message: "Not enough credits"},
			is:     []error{ErrPaymentRequired},
			isNot:  []error{ErrProviderUnavailable},
		},
		{
			name:   "500",
			proves: "a server error is ErrProviderUnavailable",
			reply:  cloudtest.Status(500, `{"code":"INTERNAL","message":"boom"}`),
			want:   ProviderError{Status: 500, Code: "INTERNAL", Message: "boom"},
			is:     []error{ErrProviderUnavailable},
			isNot:  []error{ErrRateLimited},
		},
		{
			name:   "503 html with Retry-After",
			proves: "a non-JSON error page still gives status, text and window",
			reply:  cloudtest.Reply{Status: 503, Header: http.Header{"Retry-After": {"9"}}, Body: "<html><body>upstream down</body></html>"},
			want:   ProviderError{Status: 503, Message: "Service Unavailable", RetryAfter: 9 * time.Second},
			is:     []error{ErrProviderUnavailable},
		},
		{
			name:   "422 FastAPI detail list",
			proves: "FastAPI validation errors give their msgs; no sentinel for a 4xx we cannot act on",
			reply:  cloudtest.Status(422, `{"detail":[{"loc":["body","timeout"],"msg":"Input should be less than 240","type":"less_than"}]}`),
			want:   ProviderError{Status: 422, Message: "Input should be less than 240"},
			isNot:  []error{ErrRateLimited, ErrUnauthorized, ErrPaymentRequired, ErrProviderUnavailable},
		},
		{
			name:   "404 FastAPI detail string",
			proves: "Browser Use's {\"detail\": ...} shape is read",
			reply:  cloudtest.Status(404, `{"detail":"Not Found"}`),
			want:   ProviderError{Status: 404, Message: "Not Found"},
		},
	}
	for _, kind := range apiKinds {
		for _, row := range rows {
			t.Run(string(kind)+"/"+row.name, func(t *testing.T) {
				t.Log("proves:", row.proves)
				srv := cloudtest.NewServer(t, kind, deadWS)
				srv.OnCreate(row.reply)
				p := clientFor(srv)
				s, err := p.CreateSession(context.Background(), "k")
				require.Error(t, err)
				assert.Nil(t, s)
				var pe *ProviderError
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
// oversized answers and dead servers are ErrProviderUnavailable, wrapping
// the cause.
func TestProviderCreateFailuresWithoutAnswer(t *testing.T) {
	// Not parallel: it times how promptly a hang is given up.
	for _, kind := range apiKinds {
		t.Run(string(kind)+"/hang past the deadline returns promptly", func(t *testing.T) {
			srv := cloudtest.NewServer(t, kind, deadWS)
			srv.OnCreate(cloudtest.Hang())
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := clientFor(srv).CreateSession(ctx, "k")
			assert.Less(t, time.Since(start), 2*time.Second, "the client did not give up at the deadline")
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.ErrorIs(t, err, ErrProviderUnavailable)
			var pe *ProviderError
			require.ErrorAs(t, err, &pe)
			assert.Zero(t, pe.Status)
		})
		t.Run(string(kind)+"/malformed JSON on 2xx", func(t *testing.T) {
			srv := cloudtest.NewServer(t, kind, deadWS)
			srv.OnCreate(cloudtest.Malformed())
			_, err := clientFor(srv).CreateSession(context.Background(), "k")
			assert.ErrorIs(t, err, ErrProviderUnavailable)
			var se *json.SyntaxError
			assert.ErrorAs(t, err, &se, "the decode error is wrapped")
			var pe *ProviderError
			require.ErrorAs(t, err, &pe)
			assert.GreaterOrEqual(t, pe.Status, 200)
			assert.Less(t, pe.Status, 300)
		})
		t.Run(string(kind)+"/oversized answer", func(t *testing.T) {
			srv := cloudtest.NewServer(t, kind, deadWS)
			srv.OnCreate(cloudtest.Reply{Body: `{"id":"x","pad":"` + strings.Repeat("a", 2<<20) + `"}`})
			_, err := clientFor(srv).CreateSession(context.Background(), "k")
			assert.ErrorIs(t, err, ErrProviderUnavailable)
			assert.Contains(t, err.Error(), "larger than")
		})
		t.Run(string(kind)+"/2xx without a session id", func(t *testing.T) {
			srv := cloudtest.NewServer(t, kind, deadWS)
			srv.OnCreate(cloudtest.Reply{Body: `{"status":"RUNNING"}`})
			_, err := clientFor(srv).CreateSession(context.Background(), "k")
			assert.ErrorIs(t, err, ErrProviderUnavailable)
		})
		t.Run(string(kind)+"/server gone", func(t *testing.T) {
			srv := cloudtest.NewServer(t, kind, deadWS)
			p := clientFor(srv)
			srv.Close()
			_, err := p.CreateSession(context.Background(), "k")
			assert.ErrorIs(t, err, ErrProviderUnavailable)
			var pe *ProviderError
			require.ErrorAs(t, err, &pe)
			assert.Zero(t, pe.Status)
			assert.Equal(t, "create", pe.Op)
		})
		t.Run(string(kind)+"/201 without a CDP URL is a session, not an error", func(t *testing.T) {
			srv := cloudtest.NewServer(t, kind, deadWS)
			srv.OnCreate(cloudtest.NoCDP())
			s, err := clientFor(srv).CreateSession(context.Background(), "k")
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
			srv := cloudtest.NewServer(t, kind, deadWS)
			srv.OnVersion(cloudtest.Status(500, `{"message":"browser crashed"}`))
			_, err := clientFor(srv).CreateSession(context.Background(), "k")
			assert.ErrorIs(t, err, ErrProviderUnavailable)
			var pe *ProviderError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, "create", pe.Op)
			assert.Equal(t, 500, pe.Status)
			assert.Contains(t, err.Error(), "/json/version answered HTTP 500")
		})
		t.Run(string(kind)+"/json/version malformed", func(t *testing.T) {
			srv := cloudtest.NewServer(t, kind, deadWS)
			srv.OnVersion(cloudtest.Reply{Body: `{"webSocketDebuggerUrl":`})
			_, err := clientFor(srv).CreateSession(context.Background(), "k")
			assert.ErrorIs(t, err, ErrProviderUnavailable)
		})
		t.Run(string(kind)+"/json/version without websocket", func(t *testing.T) {
			srv := cloudtest.NewServer(t, kind, deadWS)
			srv.OnVersion(cloudtest.Reply{Body: `{"Browser":"Chrome"}`})
			_, err := clientFor(srv).CreateSession(context.Background(), "k")
			assert.ErrorIs(t, err, ErrProviderUnavailable)
			assert.Contains(t, err.Error(), "/json/version has no webSocketDebuggerUrl")
		})
		t.Run(string(kind)+"/json/version hangs", func(t *testing.T) {
			srv := cloudtest.NewServer(t, kind, deadWS)
			srv.OnVersion(cloudtest.Hang())
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := clientFor(srv).CreateSession(ctx, "k")
			assert.Less(t, time.Since(start), 2*time.Second)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
		})
	}
	t.Run("cdp endpoint with a wrong token", func(t *testing.T) {
		srv := cloudtest.NewServer(t, cloudtest.CDP, deadWS)
		_, err := CDPEndpoint(srv.URL+"?token=wrong-token-123").CreateSession(context.Background(), "k")
		assert.ErrorIs(t, err, ErrUnauthorized)
		assert.NotContains(t, err.Error(), "wrong-token-123")
		assert.Contains(t, err.Error(), "answered HTTP 401")
	})
	t.Run("cdp endpoint with a bad scheme", func(t *testing.T) {
		_, err := CDPEndpoint("ftp://host/x?token=s3cr3t-token").CreateSession(context.Background(), "k")
		assert.ErrorIs(t, err, ErrProviderUnavailable)
		assert.NotContains(t, err.Error(), "s3cr3t-token")
	})
	t.Run("cdp endpoint with no URL", func(t *testing.T) {
		_, err := CDPEndpoint("").CreateSession(context.Background(), "k")
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
	for _, kind := range apiKinds {
		for name, rep := range replies {
			srv := cloudtest.NewServer(t, kind, deadWS, cloudtest.WithAPIKey(key))
			srv.OnCreate(rep)
			_, err := clientFor(srv).CreateSession(context.Background(), "k")
			require.Error(t, err, "%s/%s", kind, name)
			errs = append(errs, err)
		}
		// Release failures.
		srv := cloudtest.NewServer(t, kind, deadWS, cloudtest.WithAPIKey(key))
		p := clientFor(srv)
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
	for _, kind := range apiKinds {
		srv := cloudtest.NewServer(t, kind, deadWS)
		p := clientForKey(srv, key)
		_, err := p.CreateSession(context.Background(), "k")
		assert.ErrorIs(t, err, ErrUnauthorized)
		errs = append(errs, err)
	}
	// The CDP endpoint's token is its key.
	srv := cloudtest.NewServer(t, cloudtest.CDP, deadWS, cloudtest.WithAPIKey(key))
	srv.OnVersion(echo(500), cloudtest.Malformed(), cloudtest.Hang())
	p := CDPEndpoint(srv.EndpointURL())
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
	_, err = CDPEndpoint("http://user:"+key+"@127.0.0.1:9/").CreateSession(context.Background(), "k")
	errs = append(errs, err)

	require.Len(t, errs, len(apiKinds)*(len(replies)+5)+len(apiKinds)+5)
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
	_, err := NewBrowserbase("sk-redirect-key", "p", WithProviderBaseURL(redirector.URL)).CreateSession(context.Background(), "k")
	var pe *ProviderError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, http.StatusTemporaryRedirect, pe.Status)
	assert.Zero(t, stolen.Load())
}

// TestProviderOptions proves the options: session params merge into the
// create body (the client's own fields win), a custom name and HTTP client.
func TestProviderOptions(t *testing.T) {
	t.Parallel()
	srv := cloudtest.NewServer(t, cloudtest.Browserbase, deadWS)
	var used atomic.Int64
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		used.Add(1)
		return http.DefaultTransport.RoundTrip(r)
	})}
	p := NewBrowserbase(srv.APIKey, srv.ProjectID,
		WithProviderBaseURL(srv.URL+"/"),
		WithProviderHTTPClient(hc),
		WithProviderName("bb-eu"),
		WithSessionParams(map[string]any{"keepAlive": true, "region": "eu-central-1", "projectId": "not-this"}))
	assert.Equal(t, "bb-eu", p.Name())
	_, err := p.CreateSession(context.Background(), "k")
	require.NoError(t, err)
	assert.EqualValues(t, 1, used.Load())
	var body map[string]any
	require.NoError(t, json.Unmarshal(srv.Requests()[0].Body, &body))
	assert.Equal(t, map[string]any{"keepAlive": true, "region": "eu-central-1", "projectId": srv.ProjectID}, body)

	srv.OnCreate(cloudtest.RateLimited("1"))
	_, err = p.CreateSession(context.Background(), "k")
	var pe *ProviderError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "bb-eu", pe.Provider)
	assert.True(t, strings.HasPrefix(err.Error(), "cloud browser provider bb-eu: create session failed: HTTP 429 RATE_LIMIT_EXCEEDED"), err.Error())
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestRedactURL(t *testing.T) {
	t.Parallel()
	rows := []struct{ in, want, proves string }{
		{"wss://connect.browserbase.com?signingKey=abc123", "wss://connect.browserbase.com?signingKey=REDACTED", "query values are replaced"},
		{"wss://chrome.browserless.io/?token=t0k3n&stealth=true", "wss://chrome.browserless.io/?token=REDACTED&stealth=REDACTED", "every query value goes, in place"},
		{"ws://user:pass@127.0.0.1:9222/devtools/browser/x", "ws://127.0.0.1:9222/devtools/browser/x", "userinfo is dropped"},
		{"ws://127.0.0.1:9222/devtools/browser/x", "ws://127.0.0.1:9222/devtools/browser/x", "a URL without secrets is unchanged"},
		{"https://x.example/#frag", "https://x.example/", "the fragment is dropped"},
		{"", "", "empty stays empty"},
		{"http://[::1:bad", "[unparseable URL]", "an unparseable URL is not echoed"},
	}
	for _, row := range rows {
		t.Run(row.proves, func(t *testing.T) {
			assert.Equal(t, row.want, redactURL(row.in))
		})
	}
}

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
		assert.Equal(t, row.want, parseRetryAfter(row.in, now), "Retry-After %q", row.in)
	}
}

func TestProviderErrorText(t *testing.T) {
	t.Parallel()
	e := &ProviderError{Provider: "Browserbase", Op: "create", Status: 429, Code: "RATE_LIMIT_EXCEEDED", RetryAfter: 17 * time.Second, Limit: 200}
	assert.Equal(t, "cloud browser provider Browserbase: create session failed: HTTP 429 RATE_LIMIT_EXCEEDED (retry after 17s, limit 200)", e.Error())
	cause := errors.New("dial tcp: connection refused")
	e = &ProviderError{Provider: "Steel", Op: "release", Err: cause}
	assert.Equal(t, "cloud browser provider Steel: release session failed: dial tcp: connection refused", e.Error())
	assert.ErrorIs(t, e, cause)
	assert.ErrorIs(t, e, ErrProviderUnavailable)
}
