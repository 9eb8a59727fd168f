package hybroute

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/providertest"
	"github.com/hybroute/hybroute/internal/redact"
	"github.com/hybroute/hybroute/provider"
)

// deadWS is a websocket URL for tests that never connect to the browser.
const deadWS = providertest.DeadWS

// clientFor builds the client that talks to srv.
func clientFor(srv *cloudtest.Server, opts ...provider.Option) provider.Provider {
	return providertest.Client(srv, opts...)
}

// clientForKey builds the client that talks to srv with key.
func clientForKey(srv *cloudtest.Server, key string, opts ...provider.Option) provider.Provider {
	return providertest.ClientWithKey(srv, key, opts...)
}

// titlePage serves a page whose title is the given string, on loopback.
func titlePage(t *testing.T, title string) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		servePage(w, "hello", title)
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
		provider func(srv *cloudtest.Server) provider.Provider
		proves   string
		check    func(t *testing.T, srv *cloudtest.Server, s *provider.Session)
	}{
		{
			name:   "browserbase",
			kind:   cloudtest.Browserbase,
			proves: "connectUrl (wss with signingKey query) is used as the CDP URL",
			check: func(t *testing.T, srv *cloudtest.Server, s *provider.Session) {
				assert.Contains(t, s.CDPURL, "signingKey=sig-"+s.ID)
			},
		},
		{
			name:   "browser-use",
			kind:   cloudtest.BrowserUse,
			proves: "an http cdpUrl is resolved through /json/version to the websocket",
			check: func(t *testing.T, srv *cloudtest.Server, s *provider.Session) {
				assert.Equal(t, chrome.WSURL, s.CDPURL)
				assert.EqualValues(t, 1, srv.Versions())
			},
		},
		{
			name:   "steel",
			kind:   cloudtest.Steel,
			proves: "websocketUrl gets the apiKey query Steel's websocket requires",
			check: func(t *testing.T, srv *cloudtest.Server, s *provider.Session) {
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
			check: func(t *testing.T, srv *cloudtest.Server, s *provider.Session) {
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
			provider: func(*cloudtest.Server) provider.Provider { return provider.CDPEndpoint(chrome.WSURL) },
			proves:   "a ws endpoint is handed over unchanged, with no HTTP call",
			check: func(t *testing.T, srv *cloudtest.Server, s *provider.Session) {
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
			assert.Equal(t, row.want, redact.URL(row.in))
		})
	}
}
