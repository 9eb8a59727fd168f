package cdpconn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/hybroute/hybroute/internal/cloudtest"
)

// cloudUA is the user agent of the stand-in cloud browser: a page that
// reports it ran there, not anywhere else.
const cloudUA = "cdpconn-test-cloud"

// newSite serves pages titled with their path, on loopback.
func newSite(t *testing.T) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/favicon.ico" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<!doctype html><title>%s</title><p>hello", r.URL.Path)
	}))
	t.Cleanup(s.Close)
	return s
}

// drive opens a tab through newAllocator, loads page and returns the
// title and the user agent the page saw.
func drive(t *testing.T, wsURL string, hc *http.Client, page string) (title, ua string) {
	t.Helper()
	actx, cancelAlloc := newAllocator(context.Background(), wsURL, hc)
	defer cancelAlloc()
	tctx, cancelTab := chromedp.NewContext(actx)
	defer cancelTab()
	ctx, cancel := context.WithTimeout(tctx, 30*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(page)))
	title, err := chromedp.Run(ctx, chromedp.Title())
	require.NoError(t, err)
	ua, err = chromedp.Run(ctx, chromedp.Evaluate[string]("navigator.userAgent"))
	require.NoError(t, err)
	return title, ua
}

// TestPlainWebSocketDrivesChromium proves a ws://127.0.0.1 DevTools URL is
// dialled as given and a page really loads on that browser, and that a
// message far over the websocket library's 32 KiB default arrives.
func TestPlainWebSocketDrivesChromium(t *testing.T) {
	c := cloudtest.LaunchChromium(t, "--user-agent="+cloudUA)
	site := newSite(t)

	actx, cancelAlloc := newAllocator(context.Background(), c.WSURL, nil)
	defer cancelAlloc()
	tctx, cancelTab := chromedp.NewContext(actx)
	defer cancelTab()
	ctx, cancel := context.WithTimeout(tctx, 30*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(site.URL+"/plain")))
	title, err := chromedp.Run(ctx, chromedp.Title())
	require.NoError(t, err)
	assert.Equal(t, "/plain", title)
	ua, err := chromedp.Run(ctx, chromedp.Evaluate[string]("navigator.userAgent"))
	require.NoError(t, err)
	assert.Equal(t, cloudUA, ua)

	big, err := chromedp.Run(ctx, chromedp.Evaluate[int]("'x'.repeat(2 << 20).length"))
	require.NoError(t, err)
	assert.Equal(t, 2<<20, big)
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string]("'y'.repeat(2 << 20)"))
	require.NoError(t, err, "a 2 MiB message must be read")
	assert.Len(t, s, 2<<20)
}

// TestProviderShapesOverTLS dials each provider's real URL shape (TLS, no
// port, the key in the query) through a TLS front with a self-signed
// certificate that only the provider's HTTP client trusts, and proves the
// page loads on the cloud browser behind it.
func TestProviderShapesOverTLS(t *testing.T) {
	c := cloudtest.LaunchChromium(t, "--user-agent="+cloudUA)
	site := newSite(t)

	for _, kind := range []cloudtest.Kind{cloudtest.Browserbase, cloudtest.Steel, cloudtest.BrowserUseV2, cloudtest.CDP} {
		t.Run(string(kind), func(t *testing.T) {
			s := cloudtest.NewServer(t, kind, c.WSURL, cloudtest.WithRealShapes())
			hc := s.HTTPClient()
			raw := providerURL(t, s, hc)
			u, err := url.Parse(raw)
			require.NoError(t, err)
			assert.Contains(t, []string{"wss", "https"}, u.Scheme)
			assert.Empty(t, u.Port(), "the provider shape has no port")

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			ws, err := Resolve(ctx, hc, raw, nil)
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(ws, "wss://"), ws)

			title, ua := drive(t, ws, hc, site.URL+"/"+string(kind))
			assert.Equal(t, "/"+string(kind), title)
			assert.Equal(t, cloudUA, ua)
			assert.EqualValues(t, 1, s.Front.Upgrades())
			assert.Zero(t, s.Front.Refused())
		})
	}
}

// providerURL creates a session on the fake in its kind's API shape and
// returns the CDP URL the provider's client would use.
func providerURL(t *testing.T, s *cloudtest.Server, hc *http.Client) string {
	t.Helper()
	if s.Kind == cloudtest.CDP {
		return s.EndpointURL()
	}
	path, header, field := "/v1/sessions", "X-BB-API-Key", "connectUrl"
	switch s.Kind {
	case cloudtest.BrowserUseV2:
		path, header, field = "/api/v2/browsers", "X-Browser-Use-API-Key", "cdpUrl"
	case cloudtest.Steel:
		header, field = "steel-api-key", "websocketUrl"
	}
	req, err := http.NewRequest(http.MethodPost, s.URL+path, strings.NewReader(`{"projectId":"`+s.ProjectID+`"}`))
	require.NoError(t, err)
	req.Header.Set(header, s.APIKey)
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	raw, _ := out[field].(string)
	require.NotEmpty(t, raw, "%v", out)
	if s.Kind == cloudtest.Steel {
		// As the Steel client does: its websocket wants the API key.
		raw += "&apiKey=" + url.QueryEscape(s.APIKey)
	}
	return raw
}

// TestDialRefusesWhatItCannotTrust proves a certificate the client does not
// trust and a wrong key both fail the dial, with ErrDial.
func TestDialRefusesWhatItCannotTrust(t *testing.T) {
	c := cloudtest.LaunchChromium(t)
	s := cloudtest.NewServer(t, cloudtest.CDP, c.WSURL, cloudtest.WithRealShapes())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// Routed to the front, but trusting only the system roots.
	untrusting := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, s.Front.Addr)
		},
	}}
	_, err := Dial(ctx, s.EndpointURL(), untrusting)
	require.ErrorIs(t, err, ErrDial)
	assert.Contains(t, err.Error(), "certificate")
	assertNoSecret(t, err, s.APIKey)

	_, err = Dial(ctx, "wss://cdp.browserless.test?token=wrong-token-123", s.HTTPClient())
	require.ErrorIs(t, err, ErrDial)
	assert.Contains(t, err.Error(), "HTTP 401")
	assertNoSecret(t, err, "wrong-token-123")
	assert.EqualValues(t, 1, s.Front.Refused())
	assert.Zero(t, s.Front.Upgrades())
}

// TestDiscoveryAnswersNeverPanic proves every malformed /json/version
// answer is an error of the right kind, not a panic, and that the
// websocket URL it names is checked before anyone dials it.
func TestDiscoveryAnswersNeverPanic(t *testing.T) {
	const token = "tok+en/x=="
	var answer struct {
		status int
		body   string
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/json/version" || r.URL.Query().Get("token") != token {
			http.Error(w, "bad path or token", http.StatusForbidden)
			return
		}
		w.WriteHeader(answer.status)
		fmt.Fprint(w, answer.body)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	endpoint := srv.URL + "/?token=" + url.QueryEscape(token)

	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   error
	}{
		{"no webSocketDebuggerUrl", 200, `{"Browser":"HeadlessChrome/156"}`, ErrDiscovery},
		{"null", 200, `{"webSocketDebuggerUrl":null}`, ErrDiscovery},
		{"empty", 200, `{"webSocketDebuggerUrl":""}`, ErrDiscovery},
		{"a number", 200, `{"webSocketDebuggerUrl":42}`, ErrDiscovery},
		{"not an object", 200, `["ws://x"]`, ErrDiscovery},
		{"not JSON", 200, `<html>gateway</html>`, ErrDiscovery},
		{"truncated", 200, `{"webSocketDebuggerUrl":"ws://`, ErrDiscovery},
		{"unparseable URL", 200, `{"webSocketDebuggerUrl":"ws://[::1"}`, ErrDiscovery},
		{"http scheme", 200, `{"webSocketDebuggerUrl":"http://` + host + `/devtools/browser/x"}`, ErrDiscovery},
		{"no host", 200, `{"webSocketDebuggerUrl":"ws:///devtools/browser/x"}`, ErrDiscovery},
		{"another host", 200, `{"webSocketDebuggerUrl":"ws://198.51.100.7:9222/devtools/browser/x"}`, ErrUntrustedURL},
		{"another host by name", 200, `{"webSocketDebuggerUrl":"wss://evil.test/devtools/browser/x?token=` + url.QueryEscape(token) + `"}`, ErrUntrustedURL},
		{"server error", 500, `{"error":"boom ` + token + `"}`, ErrDiscovery},
		{"redirect", 302, ``, ErrDiscovery},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answer.status, answer.body = tc.status, tc.body
			ws, err := Discover(context.Background(), nil, endpoint, nil)
			require.ErrorIs(t, err, tc.want, "got %q", ws)
			assert.Empty(t, ws)
			assertNoSecret(t, err, token)
		})
	}
}

// TestDiscoveryChecksTheAnsweredURL proves the scheme and host rules, and
// that the endpoint's token is added only on the endpoint's own host.
func TestDiscoveryChecksTheAnsweredURL(t *testing.T) {
	c := cloudtest.LaunchChromium(t)
	s := cloudtest.NewServer(t, cloudtest.BrowserUseV2, c.WSURL, cloudtest.WithRealShapes())
	hc := s.HTTPClient()
	cdp := providerURL(t, s, hc)
	host := strings.TrimPrefix(cdp, "https://")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// https must not be downgraded to ws.
	s.OnVersion(cloudtest.Reply{Body: `{"webSocketDebuggerUrl":"ws://` + host + `/devtools/browser/x"}`})
	_, err := Discover(ctx, hc, cdp, nil)
	require.ErrorIs(t, err, ErrUntrustedURL)
	assert.Contains(t, err.Error(), "downgrades")

	// Another host is refused unless allowed; allowed, it gets no token.
	other := `{"webSocketDebuggerUrl":"wss://relay.browser-use.test/devtools/browser/x"}`
	s.OnVersion(cloudtest.Reply{Body: other}, cloudtest.Reply{Body: other}, cloudtest.Reply{Body: other})
	_, err = Discover(ctx, hc, cdp+"?k=secret-value", nil)
	require.ErrorIs(t, err, ErrUntrustedURL)
	ws, err := Discover(ctx, hc, cdp+"?k=secret-value", []string{"relay.browser-use.test"})
	require.NoError(t, err)
	assert.Equal(t, "wss://relay.browser-use.test/devtools/browser/x", ws)
	ws, err = Discover(ctx, hc, cdp+"?k=secret-value", []string{"*.browser-use.test"})
	require.NoError(t, err)
	assert.Equal(t, "wss://relay.browser-use.test/devtools/browser/x", ws)

	// The same host keeps the endpoint's query where the answer lacks it,
	// and its own value where it has one.
	s.OnVersion(cloudtest.Reply{Body: `{"webSocketDebuggerUrl":"wss://` + host + `/devtools/browser/x?k=mine"}`})
	ws, err = Discover(ctx, hc, cdp+"?k=secret-value&t=a%2Bb", nil)
	require.NoError(t, err)
	assert.Equal(t, "wss://"+host+"/devtools/browser/x?k=mine&t=a%2Bb", ws)

	// The real answer: the session's own host, then a real browser.
	ws, err = Discover(ctx, hc, cdp, nil)
	require.NoError(t, err)
	assert.Equal(t, "wss://"+host+s.Front.BrowserPath, ws)
	conn, err := Dial(ctx, ws, hc)
	require.NoError(t, err)
	require.NoError(t, conn.Close())
	require.NoError(t, conn.Close(), "Close twice")
}

// TestCleartextCredentialsRefused proves a key is never sent unencrypted to
// a host that is not loopback, before anything is dialled.
func TestCleartextCredentialsRefused(t *testing.T) {
	ctx := context.Background()
	for _, raw := range []string{
		"ws://connect.example.test?apiKey=abcd1234",
		"ws://user:pass1234@grid.example.test:9222/devtools/browser/x",
		"ws://10.0.0.5:9222/devtools/browser/x?token=abcd1234",
	} {
		_, err := Dial(ctx, raw, nil)
		require.ErrorIs(t, err, ErrCleartext, raw)
		assertNoSecret(t, err, "abcd1234")
		assertNoSecret(t, err, "pass1234")
	}
	_, err := Discover(ctx, nil, "http://cdp.example.test/?token=abcd1234", nil)
	require.ErrorIs(t, err, ErrCleartext)
	assertNoSecret(t, err, "abcd1234")

	for _, raw := range []string{"", "ftp://x/", "wss://", "wss:opaque", "::"} {
		_, err := Dial(ctx, raw, nil)
		require.ErrorIs(t, err, ErrInvalidURL, raw)
		_, err = Resolve(ctx, nil, raw, nil)
		require.ErrorIs(t, err, ErrInvalidURL, raw)
	}
}

// TestKeyNeverInErrors collects errors from every failing path with a key
// that has "+", "/" and "=" in it, and checks that no spelling of the key
// is in any error text of the chain.
func TestKeyNeverInErrors(t *testing.T) {
	const key = "sk+live/Key==9f8e7d"
	q := url.QueryEscape(key)

	refused := closedPort(t)
	hang := hangingServer(t)
	status := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "unauthorized "+r.URL.RawQuery, http.StatusUnauthorized)
	}))
	defer status.Close()
	sHost := strings.TrimPrefix(status.URL, "http://")

	ctx := context.Background()
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	var errs []error
	add := func(_ any, err error) { errs = append(errs, err) }
	add(Dial(ctx, "ws://"+refused+"/?signingKey="+q, nil))
	add(Dial(ctx, "wss://"+refused+"?signingKey="+q, nil))
	add(Dial(ctx, "ws://"+refused+"/devtools/browser/x?signingKey="+strings.ToLower(q), nil))
	add(Dial(ctx, "ws://"+sHost+"/?apiKey="+q+"&sessionId=abc", nil))
	add(Dial(ctx, "ws://"+sHost+"/?apiKey="+url.PathEscape(key), nil))
	add(Dial(short, "ws://"+hang+"/?token="+q, nil))
	add(Dial(ctx, "ws://user:"+url.PathEscape(key)+"@"+refused+"/", nil))
	add(Dial(ctx, "ws://"+refused+"/?"+q, nil)) // a bare token
	add(Dial(ctx, "gopher://"+refused+"/?k="+q, nil))
	add(Dial(ctx, "ws://"+refused+"/?k="+q+"&bad=%zz", nil))
	add(Discover(ctx, nil, "http://"+refused+"/?token="+q, nil))
	add(Discover(ctx, nil, "http://"+sHost+"/?token="+q, nil))
	add(Discover(short, nil, "http://"+hang+"/?token="+q, nil))
	add(Resolve(ctx, nil, "ws://%zz/?token="+q, nil))

	for i, err := range errs {
		require.Error(t, err, "case %d", i)
		assertNoSecret(t, err, key)
	}
	assert.ErrorIs(t, errs[5], context.DeadlineExceeded)
	assert.ErrorIs(t, errs[12], context.DeadlineExceeded)
	assert.Contains(t, errs[0].Error(), "signingKey=REDACTED")
}

// assertNoSecret checks every error text of err's chain for any spelling
// of secret: raw, query-escaped, path-escaped, with either case of hex.
func assertNoSecret(t *testing.T, err error, secret string) {
	t.Helper()
	forms := []string{secret, url.QueryEscape(secret), url.PathEscape(secret)}
	for _, f := range forms[1:] {
		forms = append(forms, strings.ToLower(f))
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		text := e.Error()
		for _, f := range forms {
			if strings.Contains(text, f) {
				t.Errorf("error text %q contains the secret as %q", text, f)
			}
		}
	}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// hangingServer accepts connections and never answers, until the test
// ends.
func hangingServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
	})
	return l.Addr().String()
}

// TestGivingUpLeaksNothing proves a cancelled context and a server that
// never answers both end the dial with the context's error, quickly, and
// leave no goroutine behind, through Dial and through a chromedp action.
func TestGivingUpLeaksNothing(t *testing.T) {
	c := cloudtest.LaunchChromium(t)
	front := cloudtest.NewFront(t, c.WSURL)
	// Every upgrade at this front waits until its client leaves.
	hangFront := cloudtest.NewFront(t, c.WSURL, cloudtest.WithFrontAuth(func(r *http.Request) error {
		<-r.Context().Done()
		return r.Context().Err()
	}))
	hang := hangingServer(t)
	hc, hangHC := front.Client(), hangFront.Client()
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	defer hc.CloseIdleConnections()
	defer hangHC.CloseIdleConnections()

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Dial(cancelled, c.WSURL, nil)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, ErrDial)

	for name, dial := range map[string]func(ctx context.Context) error{
		"tcp that never answers": func(ctx context.Context) error {
			_, err := Dial(ctx, "wss://"+hang+"?token=x1234", hc)
			return err
		},
		"upgrade that never answers": func(ctx context.Context) error {
			_, err := Dial(ctx, "wss://cdp.browserless.test?token=x1234", hangHC)
			return err
		},
		"chromedp action on a hanging upgrade": func(ctx context.Context) error {
			actx, cancelAlloc := newAllocator(context.Background(), "wss://cdp.browserless.test?token=x1234", hangHC)
			defer cancelAlloc()
			tctx, cancelTab := chromedp.NewContext(actx)
			defer cancelTab()
			dl, _ := ctx.Deadline()
			actx2, cancel := context.WithDeadline(tctx, dl)
			defer cancel()
			return chromedp.Do(actx2)
		},
		"discovery that never answers": func(ctx context.Context) error {
			_, err := Discover(ctx, hc, "https://"+hang+"/?token=x1234", nil)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			err := dial(ctx)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Less(t, time.Since(start), 10*time.Second, "the dial must end with its context")
			assertNoSecret(t, err, "x1234")
		})
	}

	// A session that ran and ended leaves nothing behind either: the tab
	// closes, then the connection, then the front's proxy.
	actx, cancelAlloc := newAllocator(context.Background(), "wss://cdp.browserless.test?token=x1234", hc)
	tctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelCtx := context.WithTimeout(tctx, 30*time.Second)
	v, err := chromedp.Run(ctx, chromedp.Evaluate[int]("6*7"))
	require.NoError(t, err)
	assert.Equal(t, 42, v)
	cancelCtx()
	cancelTab()
	cancelAlloc()

	// A provider that drops the websocket ends the tab's context (the
	// session is dead, not hanging), and leaves nothing behind.
	actx, cancelAlloc = newAllocator(context.Background(), "wss://cdp.browserless.test?token=x1234", hc)
	defer cancelAlloc()
	tctx, cancelTab = chromedp.NewContext(actx)
	defer cancelTab()
	require.NoError(t, chromedp.Do(tctx))
	front.DropConnections()
	select {
	case <-tctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the tab outlived its connection")
	}
	_, err = chromedp.Run(tctx, chromedp.Evaluate[int]("1"))
	require.Error(t, err)
}
