package hybroute

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/provider"
	"github.com/hybroute/hybroute/route"
)

// TestReplayAfterRelease proves Router.Replay asks the provider about the
// key's cloud session, and still knows it after Release: Browser Use
// names a recording only once the session has ended (its fake answers
// GET /api/v3/browsers/{id} so, internal/cloudtest/replay.go).
func TestReplayAfterRelease(t *testing.T) {
	t.Parallel()
	w := newWorld(t, cloudtest.BrowserUse)
	p := provider.NewBrowserUse(w.key(), provider.WithBaseURL(w.api.URL), provider.WithHTTPClient(w.api.HTTPClient()),
		provider.WithSessionParams(map[string]any{"enableRecording": true}))
	r := newRouter(t, p, w.logs)
	ctx := testCtx(t)

	_, err := r.Replay(ctx, "s")
	require.ErrorIs(t, err, provider.ErrNoReplay, "no cloud session yet")

	res, err := r.Navigate(ctx, "s", w.site.url(publicHost, "/replay"), nil)
	require.NoError(t, err)
	require.Equal(t, route.Cloud, res.Route)
	_, err = r.Replay(ctx, "s")
	require.ErrorIs(t, err, provider.ErrNoReplay, "Browser Use records it once it ends")
	st, err := r.Status(ctx, "s")
	require.NoError(t, err)
	assert.Empty(t, st.ReplayURL, "Status asks the provider nothing")

	require.NoError(t, r.Release(ctx, "s"))
	u, err := r.Replay(ctx, "s")
	require.NoError(t, err)
	prefix := strings.TrimSuffix(cloudtest.FakeReplayURL(cloudtest.BrowserUse, ""), ".mp4")
	assert.True(t, strings.HasPrefix(u, prefix) && strings.HasSuffix(u, ".mp4"), u)
	assert.EqualValues(t, 1, w.api.Ended(), "the session was released before its replay was asked")
	assert.Zero(t, w.api.LiveCount())
}

// TestReplayWithoutOne proves a provider with no replay URL, and a key
// that ran locally, answer ErrNoReplay without a call, and that a replay
// URL the create answer named is given as it is.
func TestReplayWithoutOne(t *testing.T) {
	t.Parallel()
	r := newRouter(t, provider.CDPEndpoint("ws://127.0.0.1:9/devtools/browser/x"), nil)
	ctx := testCtx(t)
	r.ended.Put("s", &provider.Session{Key: "s", ID: "sess-1"})
	_, err := r.Replay(ctx, "s")
	require.ErrorIs(t, err, provider.ErrNoReplay)
	assert.Contains(t, err.Error(), "CDP endpoint")

	r.ended.Put("s", &provider.Session{Key: "s", ID: "sess-2", ReplayURL: "https://replay.example/sess-2"})
	u, err := r.Replay(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, "https://replay.example/sess-2", u)

	local := newRouter(t, nil, nil)
	_, err = local.Replay(ctx, "s")
	require.ErrorIs(t, err, provider.ErrNoReplay)
	assert.Contains(t, err.Error(), "no cloud session")
}
