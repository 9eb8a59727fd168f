package hybroute

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/testlog"
	"github.com/hybroute/hybroute/route"
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
			assert.False(t, s.SingleConnection, "no preset serves one connection only: browserless documents reconnecting")
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
				res, err := w.r.Navigate(testCtx(t), "s", w.site.url(publicHost, path), nil)
				require.NoError(t, err)
				assert.False(t, res.FallbackFromCloud, "logs: %s", w.logs)
				assert.Equal(t, route.Cloud, res.Route)
				assert.Equal(t, cloudUA, w.site.uaOf(path), "the page ran on the cloud browser")
			}
			assert.EqualValues(t, 1, w.api.Creates())
			assert.EqualValues(t, 1, w.api.Front.Upgrades(), "one websocket for the session's calls")
			assert.Zero(t, w.api.Front.Refused())
			if kind == cloudtest.Nous {
				assert.Equal(t, 1, w.logs.Count("external_call_id=call-"), "logs: %s", w.logs)
			}
		})
	}
}

// TestBrowserlessOneWebSocketPerSession proves a browserless session's
// lost connection is replaced by a new session, its pre-tokenized URL
// dialled once per session, and the fake refuses nothing.
func TestBrowserlessOneWebSocketPerSession(t *testing.T) {
	t.Parallel()
	w := newWorld(t, cloudtest.Browserless)
	_, err := w.r.Navigate(testCtx(t), "s", w.site.url(publicHost, "/bl-1"), nil)
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
		_, err = w.r.Navigate(testCtx(t), "s", w.site.url(publicHost, fmt.Sprintf("/bl-%d", i+2)), nil)
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

// TestPaymentRefusalOpensNoFleetWindow proves a 402 sends the call to the
// local floor with the refusal as its reason, holds this router's
// creations off the provider, and writes no back-off window to the
// fleet's store: it is the account's, not an outage.
func TestPaymentRefusalOpensNoFleetWindow(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := cloudtest.NewServer(t, cloudtest.Anchor, deadWS)
	srv.AlwaysOnCreate(&cloudtest.Reply{Status: 402, Body: `{"error":{"code":402,"message":"Insufficient credits"}}`})
	logs := &testlog.Buffer{}
	site := newSite(t)
	r := newRouter(t, clientFor(srv), logs)
	for i, key := range []string{"a", "b", "c"} {
		res, err := r.Navigate(testCtx(t), key, site.url(publicHost, fmt.Sprintf("/pay-%d", i)), nil)
		require.NoError(t, err)
		assert.True(t, res.FallbackFromCloud)
		assert.Contains(t, res.FallbackReason, "HTTP 402")
	}
	assert.EqualValues(t, 1, srv.Creates(), "the refusal holds later creations off the provider")
	until, _, err := r.fleet.Health().Window(context.Background(), r.provider.Name())
	require.NoError(t, err)
	assert.True(t, until.IsZero(), "no back-off window in the fleet's store for a payment refusal")
	assert.Equal(t, 1, logs.Count("refused the configuration"), "logs: %s", logs)
	assert.Equal(t, 1, logs.Count("plan and billing"), "logs: %s", logs)
}

// TestPresetWithoutCDPURLFailsClearly proves a preset's session without a
// CDP URL fails with the no-CDP message, ErrNoCDPEndpoint, not a fallback:
// the provider answered, so there is no outage to fall back from.
func TestPresetWithoutCDPURLFailsClearly(t *testing.T) {
	t.Parallel()
	srv := cloudtest.NewServer(t, cloudtest.Hyperbrowser, deadWS)
	srv.OnCreate(cloudtest.NoCDP())
	r := newRouter(t, clientFor(srv), &testlog.Buffer{})
	site := newSite(t)
	_, err := r.Navigate(testCtx(t), "s", site.url(publicHost, "/nocdp"), nil)
	require.ErrorIs(t, err, ErrNoCDPEndpoint)
	assert.Contains(t, err.Error(), "Cloud browser provider Hyperbrowser returned no CDP endpoint, so Browser Use mode cannot drive it.")
	assert.EqualValues(t, 1, srv.Releases(), "the session is given back")
}
