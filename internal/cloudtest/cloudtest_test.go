package cloudtest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChromiumCloseReapsTheProcess proves the launched Chromium answers on
// its DevTools port and is gone after Close.
func TestChromiumCloseReapsTheProcess(t *testing.T) {
	t.Parallel()
	c := LaunchChromium(t)
	require.True(t, strings.HasPrefix(c.WSURL, "ws://127.0.0.1:"), c.WSURL)
	resp, err := http.Get(c.HTTPURL + "/json/version")
	require.NoError(t, err)
	var v struct {
		WebSocketDebuggerURL string `json:"webSocketDebuggerUrl"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
	resp.Body.Close()
	assert.Equal(t, c.WSURL, v.WebSocketDebuggerURL)

	c.Close()
	assert.True(t, c.Exited())
	_, err = http.Get(c.HTTPURL + "/json/version")
	assert.Error(t, err, "the DevTools port still answers after Close")
	c.Close() // idempotent
}

// TestServerChecksTheKeyAndCounts proves a fake refuses a wrong key in the
// provider's shape and still counts the call, and that scripted answers are
// used once, in order.
func TestServerChecksTheKeyAndCounts(t *testing.T) {
	t.Parallel()
	s := NewServer(t, BrowserUseV2, "ws://127.0.0.1:9/devtools/browser/x")
	post := func(key string) (int, string, http.Header) {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/api/v2/browsers", strings.NewReader(`{}`))
		req.Header.Set("X-Browser-Use-API-Key", key)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	st, body, _ := post("wrong")
	assert.Equal(t, 401, st)
	assert.JSONEq(t, `{"detail":"Invalid API key"}`, body)

	s.OnCreate(RateLimited("17"), Status(500, ""))
	st, body, h := post(s.APIKey)
	assert.Equal(t, 429, st)
	assert.Equal(t, "17", h.Get("Retry-After"))
	assert.JSONEq(t, `{"detail":"Too Many Requests"}`, body, "FastAPI's shape, as Browser Use answers")
	st, _, _ = post(s.APIKey)
	assert.Equal(t, 500, st)
	st, body, _ = post(s.APIKey)
	assert.Equal(t, 201, st)
	assert.Contains(t, body, `"cdpUrl":"`+s.URL+"/cdp/")
	assert.EqualValues(t, 4, s.Creates())
	assert.Len(t, s.Requests(), 4)
}

// TestServerHangEndsWithTheClient proves a hanging answer ends when the
// client gives up, so tests never wait on it.
func TestServerHangEndsWithTheClient(t *testing.T) {
	t.Parallel()
	s := NewServer(t, Steel, "ws://127.0.0.1:9/devtools/browser/x")
	s.OnCreate(Hang())
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/v1/sessions", nil)
	req.Header.Set("steel-api-key", s.APIKey)
	start := time.Now()
	_, err := http.DefaultClient.Do(req)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 2*time.Second)
}

// TestBrowserUseFakeMountsEveryVersion proves the Browser Use fake serves
// the browser routes under v2, v3 and v4, and answers a version the key
// is not granted with the service's missing-scope 403.
func TestBrowserUseFakeMountsEveryVersion(t *testing.T) {
	t.Parallel()
	s := NewServer(t, BrowserUse, "ws://127.0.0.1:9/devtools/browser/x", WithKeyScopes("v4"))
	post := func(v string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, s.URL+"/api/"+v+"/browsers", strings.NewReader(`{}`))
		req.Header.Set("X-Browser-Use-API-Key", s.APIKey)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, v := range []string{"v2", "v3"} {
		st, body := post(v)
		assert.Equal(t, http.StatusForbidden, st)
		assert.JSONEq(t, `{"detail":"API key is missing required scope: browsers:`+v+`"}`, body)
	}
	st, _ := post("v4")
	assert.Equal(t, http.StatusCreated, st)
	assert.EqualValues(t, 1, s.Made())
}

// TestBrowserCashFakeStartsSlowly proves a starting Browser.cash session
// answers "starting" with cdpUrl null to its create and to the reads
// before the last, then "active" with its cdpUrl, and "completed" once
// stopped.
func TestBrowserCashFakeStartsSlowly(t *testing.T) {
	t.Parallel()
	s := NewServer(t, BrowserCash, "ws://127.0.0.1:9/devtools/browser/x", WithStartingSessions(3))
	call := func(method, path string) map[string]any {
		req, _ := http.NewRequest(method, s.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+s.APIKey)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var out map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		return out
	}
	created := call(http.MethodPost, "/v1/browser/session")
	assert.Equal(t, "starting", created["status"])
	assert.Nil(t, created["cdpUrl"])
	id := created["sessionId"].(string)
	read := "/v1/browser/session?sessionId=" + id
	for range 2 {
		out := call(http.MethodGet, read)
		assert.Equal(t, "starting", out["status"])
		assert.Nil(t, out["cdpUrl"])
	}
	out := call(http.MethodGet, read)
	assert.Equal(t, "active", out["status"])
	assert.NotEmpty(t, out["cdpUrl"])
	assert.Equal(t, 3, s.Polls())
	assert.Equal(t, true, call(http.MethodDelete, read)["success"])
	assert.Equal(t, "completed", call(http.MethodGet, read)["status"])
}
