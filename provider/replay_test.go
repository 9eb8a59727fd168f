package provider_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/providertest"
	"github.com/hybroute/hybroute/provider"
)

// replayer is the client of srv as a provider.Replayer.
func replayer(t *testing.T, srv *cloudtest.Server, opts ...provider.Option) (provider.Provider, provider.Replayer) {
	t.Helper()
	p := providertest.Client(srv, opts...)
	rp, ok := p.(provider.Replayer)
	require.True(t, ok, "%s gives replays", srv.Kind)
	return p, rp
}

// lastPath is the path of the last request srv received.
func lastPath(srv *cloudtest.Server) string {
	reqs := srv.Requests()
	return reqs[len(reqs)-1].Method + " " + reqs[len(reqs)-1].Path
}

// TestReplay proves each client that has a replay asks for it as its
// provider documents, and reads the URL from the answer's documented
// shape (the fakes' sources are in internal/cloudtest/replay.go); a
// session that has none is ErrNoReplay.
func TestReplay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("Browserbase: GET /v1/sessions/{id}/replays", func(t *testing.T) {
		t.Parallel()
		srv := cloudtest.NewServer(t, cloudtest.Browserbase, providertest.DeadWS)
		p, rp := replayer(t, srv)
		s, err := p.CreateSession(ctx, "k")
		require.NoError(t, err)
		u, err := rp.Replay(ctx, s)
		require.NoError(t, err)
		assert.Equal(t, cloudtest.FakeReplayURL(srv.Kind, s.ID), u)
		assert.Equal(t, "GET /v1/sessions/"+s.ID+"/replays", lastPath(srv))
	})
	for _, kind := range []cloudtest.Kind{cloudtest.BrowserUse, cloudtest.BrowserUseV2, cloudtest.Nous} {
		t.Run(string(kind)+": recordingUrl once the session ended", func(t *testing.T) {
			t.Parallel()
			srv := cloudtest.NewServer(t, kind, providertest.DeadWS)
			p, rp := replayer(t, srv, provider.WithSessionParams(map[string]any{"enableRecording": true}))
			s, err := p.CreateSession(ctx, "k")
			require.NoError(t, err)
			_, err = rp.Replay(ctx, s)
			require.ErrorIs(t, err, provider.ErrNoReplay, "no recording while it runs")
			require.NoError(t, p.ReleaseSession(ctx, s))
			u, err := rp.Replay(ctx, s)
			require.NoError(t, err)
			assert.Equal(t, cloudtest.FakeReplayURL(kind, s.ID), u)
			want := map[cloudtest.Kind]string{cloudtest.BrowserUse: "/api/v3", cloudtest.BrowserUseV2: "/api/v2"}[kind]
			assert.Equal(t, "GET "+want+"/browsers/"+s.ID, lastPath(srv))
		})
	}
	t.Run("Browser Use without enableRecording has none", func(t *testing.T) {
		t.Parallel()
		srv := cloudtest.NewServer(t, cloudtest.BrowserUse, providertest.DeadWS)
		p, rp := replayer(t, srv)
		s, err := p.CreateSession(ctx, "k")
		require.NoError(t, err)
		require.NoError(t, p.ReleaseSession(ctx, s))
		_, err = rp.Replay(ctx, s)
		require.ErrorIs(t, err, provider.ErrNoReplay)
		assert.Contains(t, err.Error(), s.ID)
	})
	t.Run("Anchor: data.items[0].file_link", func(t *testing.T) {
		t.Parallel()
		srv := cloudtest.NewServer(t, cloudtest.Anchor, providertest.DeadWS)
		p, rp := replayer(t, srv)
		s, err := p.CreateSession(ctx, "k")
		require.NoError(t, err)
		require.NoError(t, p.ReleaseSession(ctx, s))
		u, err := rp.Replay(ctx, s)
		require.NoError(t, err)
		assert.Equal(t, cloudtest.FakeReplayURL(srv.Kind, s.ID), u)
		assert.Equal(t, "GET /v1/sessions/"+s.ID+"/recordings", lastPath(srv))
	})
	t.Run("Kernel: the first replay started", func(t *testing.T) {
		t.Parallel()
		srv := cloudtest.NewServer(t, cloudtest.Kernel, providertest.DeadWS)
		p, rp := replayer(t, srv)
		s, err := p.CreateSession(ctx, "k")
		require.NoError(t, err)
		_, err = rp.Replay(ctx, s)
		require.ErrorIs(t, err, provider.ErrNoReplay, "no replay was started")
		// The user starts one, as kernel's "browsers replays start" does.
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/browsers/"+s.ID+"/replays", strings.NewReader("{}"))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+srv.APIKey)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		u, err := rp.Replay(ctx, s)
		require.NoError(t, err)
		assert.Equal(t, cloudtest.FakeReplayURL(srv.Kind, s.ID), u)
		assert.Equal(t, "GET /browsers/"+s.ID+"/replays", lastPath(srv))
	})
	t.Run("Hyperbrowser: recordingUrl with enableWebRecording", func(t *testing.T) {
		t.Parallel()
		srv := cloudtest.NewServer(t, cloudtest.Hyperbrowser, providertest.DeadWS)
		p, rp := replayer(t, srv, provider.WithSessionParams(map[string]any{"enableWebRecording": true}))
		s, err := p.CreateSession(ctx, "k")
		require.NoError(t, err)
		u, err := rp.Replay(ctx, s)
		require.NoError(t, err)
		assert.Equal(t, cloudtest.FakeReplayURL(srv.Kind, s.ID), u)
		assert.Equal(t, "GET /api/session/"+s.ID+"/recording-url", lastPath(srv))

		p, rp = replayer(t, srv)
		s, err = p.CreateSession(ctx, "k2")
		require.NoError(t, err)
		_, err = rp.Replay(ctx, s)
		require.ErrorIs(t, err, provider.ErrNoReplay, "not_enabled")
	})
	for _, kind := range []cloudtest.Kind{cloudtest.BrowserCash, cloudtest.Browserless} {
		t.Run(string(kind)+" records nothing", func(t *testing.T) {
			t.Parallel()
			srv := cloudtest.NewServer(t, kind, providertest.DeadWS)
			p, rp := replayer(t, srv)
			s, err := p.CreateSession(ctx, "k")
			require.NoError(t, err)
			n := len(srv.Requests())
			_, err = rp.Replay(ctx, s)
			require.ErrorIs(t, err, provider.ErrNoReplay)
			assert.Len(t, srv.Requests(), n, "nothing to ask")
		})
	}
	t.Run("Steel: the HLS playlist of GET /v1/sessions/{id}/hls", func(t *testing.T) {
		t.Parallel()
		srv := cloudtest.NewServer(t, cloudtest.Steel, providertest.DeadWS)
		p, rp := replayer(t, srv)
		s, err := p.CreateSession(ctx, "k")
		require.NoError(t, err)
		u, err := rp.Replay(ctx, s)
		require.NoError(t, err)
		assert.Equal(t, srv.URL+cloudtest.FakeReplayURL(srv.Kind, s.ID), u)
		assert.NotContains(t, u, srv.APIKey, "the playlist plays with the key header; the URL carries none")
		assert.Equal(t, "GET /v1/sessions/"+s.ID+"/hls", lastPath(srv))
		_, err = rp.Replay(ctx, &provider.Session{Key: "k", ID: "no-such-session"})
		require.ErrorIs(t, err, provider.ErrNoReplay, "Steel does not know it")
	})
	t.Run("Camofox gives traces, no replay", func(t *testing.T) {
		t.Parallel()
		var camofox provider.Provider = provider.NewCamofox("")
		_, ok := camofox.(provider.Replayer)
		assert.False(t, ok)
	})
}

// TestSessionAPISpecReplay proves a spec's replay call must name where
// its answer has the URL.
func TestSessionAPISpecReplay(t *testing.T) {
	t.Parallel()
	spec, ok := provider.SessionAPIPreset("anchor")
	require.True(t, ok)
	require.NoError(t, spec.Validate())
	spec.ReplayField = ""
	require.ErrorIs(t, spec.Validate(), provider.ErrInvalidSpec)
	spec.ReplayField, spec.Replay.Path = "x", "/v1/recordings"
	require.ErrorIs(t, spec.Validate(), provider.ErrInvalidSpec, "the path must hold {id}")
}

// TestCamofoxFollowsFlyReplay proves the Camofox client follows a 307 to
// its own origin, as Fly.io's proxy answers one (fly-replay), with the
// same method, body and access key, and follows none to another origin,
// which would get the key.
func TestCamofoxFollowsFlyReplay(t *testing.T) {
	t.Parallel()
	type seen struct{ method, path, auth, body string }
	var mu sync.Mutex
	var got []seen
	var elsewhere []seen
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		elsewhere = append(elsewhere, seen{r.Method, r.URL.Path, r.Header.Get("Authorization"), string(b)})
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `{"tabId":"tab-elsewhere","url":"about:blank"}`)
	}))
	t.Cleanup(other.Close)
	var target string // where the first answer sends the client
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, seen{r.Method, r.URL.Path, r.Header.Get("Authorization"), string(b)})
		first := len(got) == 1
		mu.Unlock()
		if first {
			w.Header().Set("Location", target)
			w.Header().Set("fly-replay", "instance=machine-2")
			w.WriteHeader(http.StatusTemporaryRedirect)
			return
		}
		// camofox-browser's POST /tabs answer (openapi.json).
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"tabId":"tab-1","url":"about:blank"}`)
	}))
	t.Cleanup(srv.Close)

	t.Run("same origin", func(t *testing.T) {
		target = srv.URL + "/tabs?replayed=1"
		c := provider.NewCamofox("camo-key", provider.WithBaseURL(srv.URL))
		s, err := c.CreateSession(context.Background(), "k")
		require.NoError(t, err)
		assert.Equal(t, "tab-1", s.ID)
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, got, 2)
		assert.Equal(t, got[0], got[1], "the same method, path, key and body")
		assert.Equal(t, http.MethodPost, got[1].method)
		assert.Equal(t, "Bearer camo-key", got[1].auth)
		var body map[string]any
		require.NoError(t, json.Unmarshal([]byte(got[1].body), &body))
		assert.Equal(t, "k", body["sessionKey"])
	})
	t.Run("another origin", func(t *testing.T) {
		mu.Lock()
		got = nil
		mu.Unlock()
		target = other.URL + "/tabs"
		c := provider.NewCamofox("camo-key", provider.WithBaseURL(srv.URL))
		_, err := c.CreateSession(context.Background(), "k")
		require.Error(t, err)
		var pe *provider.Error
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, http.StatusTemporaryRedirect, pe.Status)
		mu.Lock()
		defer mu.Unlock()
		assert.Empty(t, elsewhere, "nothing, and no key, goes to another origin")
	})
}
