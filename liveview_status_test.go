package hybroute

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/testlog"
	"github.com/hybroute/hybroute/provider"
	"github.com/hybroute/hybroute/route"
)

// TestStatusCarriesEachProvidersLiveView proves the live view each
// provider's API gives (its fake answers as the provider's SDK documents:
// internal/cloudtest/server.go, sessionapi.go) arrives in the Router's
// SessionStatus of a cloud session, and that Router.Replay gives the
// recording once the session is released where the provider records by
// default (its fake: internal/cloudtest/replay.go), and Browser Use's
// timeoutAt as the session's end. One cloud Chromium
// serves every provider's fake.
func TestStatusCarriesEachProvidersLiveView(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	s := newSite(t)
	cloud := cloudtest.LaunchChromium(t, "--user-agent="+cloudUA, "--host-resolver-rules="+hostRules)
	rows := []struct {
		kind   cloudtest.Kind
		live   func(api *cloudtest.Server, id string) string
		replay func(api *cloudtest.Server, id string) string // nil: none without asking the provider to record
	}{
		{cloudtest.Browserbase, func(_ *cloudtest.Server, id string) string { return cloudtest.BrowserbaseLiveURL(id) },
			func(_ *cloudtest.Server, id string) string { return cloudtest.FakeReplayURL(cloudtest.Browserbase, id) }},
		{cloudtest.BrowserUse, func(api *cloudtest.Server, id string) string { return api.URL + "/live/" + id }, nil},
		{cloudtest.Steel, func(api *cloudtest.Server, id string) string { return api.URL + "/debug/" + id + "?interactive=true" },
			func(api *cloudtest.Server, id string) string {
				return api.URL + cloudtest.FakeReplayURL(cloudtest.Steel, id)
			}},
		{cloudtest.Anchor, func(_ *cloudtest.Server, id string) string { return "https://live.anchorbrowser.test?sessionId=" + id },
			func(_ *cloudtest.Server, id string) string { return cloudtest.FakeReplayURL(cloudtest.Anchor, id) }},
		{cloudtest.Kernel, func(_ *cloudtest.Server, id string) string { return "https://live.kernel.test/" + id }, nil},
		{cloudtest.Hyperbrowser, func(_ *cloudtest.Server, _ string) string { return "https://app.hyperbrowser.test/live?token=" }, nil},
	}
	for _, row := range rows {
		t.Run(string(row.kind), func(t *testing.T) {
			t.Parallel()
			w := &world{t: t, site: s, cloud: cloud, logs: &testlog.Buffer{}}
			w.api = cloudtest.NewServer(t, row.kind, cloud.WSURL, cloudtest.WithAPIKey(w.key()), cloudtest.WithProjectID("proj-1"), cloudtest.WithRealShapes())
			w.r = newRouter(t, w.provider(row.kind), w.logs)
			ctx := testCtx(t)
			_, err := w.r.Navigate(ctx, "s", s.url(publicHost, "/live-"+string(row.kind)), nil)
			require.NoError(t, err)
			st, err := w.r.Status(ctx, "s")
			require.NoError(t, err)
			require.Equal(t, route.Cloud, st.Route)
			id := w.r.sessionOf("s")
			require.NotEmpty(t, id)
			assert.True(t, strings.HasPrefix(st.LiveViewURL, row.live(w.api, id)), "live view %q", st.LiveViewURL)
			assert.NotContains(t, st.LiveViewURL, w.key(), "the live view carries no API key")
			assert.Empty(t, st.ReplayURL, "no create answer names a recording, and Status asks nothing")
			if row.kind == cloudtest.BrowserUse {
				assert.WithinDuration(t, time.Now().Add(cloudtest.FakeSessionLife), st.ExpiresAt, time.Minute, "its timeoutAt")
			}

			require.NoError(t, w.r.Release(ctx, "s"))
			u, err := w.r.Replay(ctx, "s")
			if row.replay == nil {
				require.ErrorIs(t, err, provider.ErrNoReplay)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, row.replay(w.api, id), u)
		})
	}
}

// sessionOf is the provider's id of sessionKey's last cloud session.
func (r *Router) sessionOf(sessionKey string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.sess.M[sessionKey]; e != nil && e.cloud != nil {
		return e.cloud.ID
	}
	return ""
}
