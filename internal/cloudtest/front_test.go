package cloudtest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// create posts a create call to a fake in its kind's shape and returns the
// decoded answer.
func create(t *testing.T, s *Server) map[string]any {
	t.Helper()
	ep := map[Kind]struct{ path, header string }{
		Browserbase:  {"/v1/sessions", "X-BB-API-Key"},
		BrowserUseV2: {"/api/v2/browsers", "X-Browser-Use-API-Key"},
		Steel:        {"/v1/sessions", "steel-api-key"},
	}[s.Kind]
	req, err := http.NewRequest(http.MethodPost, s.URL+ep.path, strings.NewReader(`{"projectId":"`+s.ProjectID+`"}`))
	require.NoError(t, err)
	req.Header.Set(ep.header, s.APIKey)
	resp, err := s.HTTPClient().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Less(t, resp.StatusCode, 300)
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out
}

// browserVersion dials wsURL with hc and asks the browser for its version
// over CDP: proof that the websocket reached a real Chromium.
func browserVersion(t *testing.T, hc *http.Client, wsURL string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		return "", err
	}
	defer c.CloseNow()
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"id":1,"method":"Browser.getVersion"}`)); err != nil {
		return "", err
	}
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return "", err
		}
		var m struct {
			ID     int `json:"id"`
			Result struct {
				Product string `json:"product"`
			} `json:"result"`
		}
		if json.Unmarshal(data, &m) == nil && m.ID == 1 {
			return m.Result.Product, nil
		}
	}
}

// TestFrontServesTheProviderShapes proves each kind hands out its
// real-world URL shape, and that the front behind it checks the key and
// reaches the real Chromium over TLS under the public-looking name.
func TestFrontServesTheProviderShapes(t *testing.T) {
	c := LaunchChromium(t)

	t.Run("browserbase", func(t *testing.T) {
		s := NewServer(t, Browserbase, c.WSURL, WithRealShapes())
		out := create(t, s)
		connect := out["connectUrl"].(string)
		key := out["signingKey"].(string)
		assert.True(t, strings.HasPrefix(connect, "wss://connect.browserbase.test?signingKey="), connect)
		assert.Contains(t, connect, url.QueryEscape(key))
		assert.True(t, strings.ContainsAny(key, "+") && strings.ContainsAny(key, "/") && strings.ContainsAny(key, "="), key)
		product, err := browserVersion(t, s.HTTPClient(), connect)
		require.NoError(t, err)
		assert.Contains(t, product, "Chrome")
		assert.EqualValues(t, 1, s.Front.Upgrades())

		_, err = browserVersion(t, s.HTTPClient(), "wss://connect.browserbase.test?signingKey=wrong")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "401")
		assert.EqualValues(t, 1, s.Front.Refused())
	})

	t.Run("steel", func(t *testing.T) {
		s := NewServer(t, Steel, c.WSURL, WithRealShapes())
		ws := create(t, s)["websocketUrl"].(string)
		assert.True(t, strings.HasPrefix(ws, "wss://connect.steel.test?sessionId="), ws)
		_, err := browserVersion(t, s.HTTPClient(), ws)
		require.Error(t, err, "the front must want the apiKey the Steel client appends")
		product, err := browserVersion(t, s.HTTPClient(), ws+"&apiKey="+url.QueryEscape(s.APIKey))
		require.NoError(t, err)
		assert.Contains(t, product, "Chrome")
	})

	t.Run("browser-use", func(t *testing.T) {
		s := NewServer(t, BrowserUseV2, c.WSURL, WithRealShapes())
		out := create(t, s)
		cdp := out["cdpUrl"].(string)
		id := out["id"].(string)
		assert.Equal(t, "https://"+id+".cdp.browser-use.test", cdp)
		resp, err := s.HTTPClient().Get(cdp + "/json/version")
		require.NoError(t, err)
		var v struct {
			WS string `json:"webSocketDebuggerUrl"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
		resp.Body.Close()
		assert.Equal(t, "wss://"+id+".cdp.browser-use.test"+s.Front.BrowserPath, v.WS)
		product, err := browserVersion(t, s.HTTPClient(), v.WS)
		require.NoError(t, err)
		assert.Contains(t, product, "Chrome")

		resp, err = s.HTTPClient().Get("https://no-such-session.cdp.browser-use.test/json/version")
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	})

	t.Run("browserless", func(t *testing.T) {
		s := NewServer(t, CDP, c.WSURL, WithRealShapes())
		assert.Equal(t, "wss://cdp.browserless.test?token="+url.QueryEscape(s.APIKey), s.EndpointURL())
		product, err := browserVersion(t, s.HTTPClient(), s.EndpointURL())
		require.NoError(t, err)
		assert.Contains(t, product, "Chrome")
	})
}

// TestFrontClientStaysOnLoopback proves the test client sends nothing to a
// name it does not serve, and that a client without the front's
// certificate cannot talk to it.
func TestFrontClientStaysOnLoopback(t *testing.T) {
	f := NewFront(t, "ws://127.0.0.1:9/devtools/browser/x")
	_, err := f.Client().Get("https://example.com/")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "loopback only")

	// The names reach the front on any port; a plain client does not
	// trust its certificate.
	resp, err := f.Client().Get("https://connect.steel.test:8443/json/version")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	untrusting := loopbackClient(nil, f.Addr, f.Names)
	_, err = untrusting.Get("https://connect.steel.test/")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "certificate")
}

// TestFrontScriptedUpgradeAndDrop proves a scripted answer refuses an
// upgrade before the key check, and DropConnections cuts a live websocket.
func TestFrontScriptedUpgradeAndDrop(t *testing.T) {
	c := LaunchChromium(t)
	f := NewFront(t, c.WSURL, WithFrontAuth(QueryKey("token", "t0k")))
	f.OnUpgrade(Status(http.StatusTooManyRequests, "slow down"))
	_, err := browserVersion(t, f.Client(), "wss://cdp.browserless.test?token=t0k")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "429")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "wss://cdp.browserless.test?token=t0k", &websocket.DialOptions{HTTPClient: f.Client()})
	require.NoError(t, err)
	defer ws.CloseNow()
	assert.EqualValues(t, 1, f.Upgrades())
	f.DropConnections()
	_, _, err = ws.Read(ctx)
	require.Error(t, err)
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
	require.Len(t, f.Requests(), 2)
	assert.Equal(t, "cdp.browserless.test", f.Requests()[1].Host)
}
