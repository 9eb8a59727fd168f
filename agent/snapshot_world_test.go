package agent

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/hybroute/hybroute/hybroutetest"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/agenttest"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent/internal/snapshot"
)

// TestSnapshotInTheWorldOfTheTabsEvents: after a navigation the snapshot
// walks the world the tab's events named, paired with the document that
// world belongs to; a world that no longer answers sends the snapshot the
// long way, with the same text. The toolset's tabs run without the DOM
// domain.
func TestSnapshotInTheWorldOfTheTabsEvents(t *testing.T) {
	hybroutetest.Parallel(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agenttest.ServePage(w, "path", r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	r := agenttest.NewRouter(t, nil)
	ts := New(r)
	t.Cleanup(func() { _ = ts.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const key = "world"
	call := func(name string, args any) Result {
		t.Helper()
		raw, err := json.Marshal(args)
		require.NoError(t, err)
		res, err := ts.Call(ctx, key, name, raw)
		require.NoError(t, err)
		require.False(t, res.IsError, res.Text)
		return res
	}
	call(ToolNavigate, map[string]string{"url": srv.URL + "/a"})
	call(ToolNavigate, map[string]string{"url": srv.URL + "/b"})
	s, err := ts.session(key)
	require.NoError(t, err)
	tab := s.pageTarget
	w, ok := s.worlds.Get(tab)
	require.True(t, ok, "the navigation's events named the walk's world")

	// The document the tracker pairs the world with is the one the tab
	// shows, and the world is not the page's own.
	var doc cdp.LoaderID
	var topLayer error
	_, err = r.Exec(ctx, key, "", func(ctx context.Context, call *hybroute.Call) error {
		var err error
		doc, _, err = snapshot.DocumentID(ctx)
		_, topLayer = chromedp.Call(ctx, dom.GetTopLayerElements, cdp.Empty{})
		return err
	})
	require.NoError(t, err)
	assert.Equal(t, doc, w.Doc)
	assert.Equal(t, srv.URL+"/b", w.URL)
	require.Error(t, topLayer, "the DOM domain is off on the toolset's tab")
	assert.Contains(t, topLayer.Error(), "enabled")

	fast := call(ToolSnapshot, nil)
	assert.Contains(t, fast.Text, `- heading "Page /b"`)
	assert.Equal(t, doc, s.refs.Doc())

	// A world that does not answer: the long way, the same text.
	w.ID = "0.0"
	s.worlds.Put(tab, w)
	slow := call(ToolSnapshot, nil)
	assert.Equal(t, fast.Text, slow.Text)
	_, ok = s.worlds.Get(tab)
	assert.False(t, ok, "a world that did not answer is forgotten")
	assert.Equal(t, doc, s.refs.Doc())

	// Its refs still click their elements.
	ref := refIn(t, slow.Text, `button "Go"`)
	call(ToolClick, map[string]string{"ref": ref})
}

func refIn(t *testing.T, text, what string) string {
	t.Helper()
	m := regexp.MustCompile(regexp.QuoteMeta(what) + ` \[ref=(e\d+)\]`).FindStringSubmatch(text)
	require.NotNil(t, m, "no ref for %s in:\n%s", what, text)
	return m[1]
}
