package agent

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/agenttest"

	"github.com/hybroute/hybroute"
)

// TestSnapshotInTheWorldOfTheTabsEvents: after a navigation the snapshot
// walks the world the tab's events named, paired with the document that
// world belongs to; a world that no longer answers sends the snapshot the
// long way, with the same text. The toolset's tabs run without the DOM
// domain.
func TestSnapshotInTheWorldOfTheTabsEvents(t *testing.T) {
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
	w, ok := s.worlds.get(tab)
	require.True(t, ok, "the navigation's events named the walk's world")

	// The document the tracker pairs the world with is the one the tab
	// shows, and the world is not the page's own.
	var doc cdp.LoaderID
	var topLayer error
	_, err = r.Exec(ctx, key, "", func(ctx context.Context, call *hybroute.Call) error {
		var err error
		doc, _, err = documentID(ctx)
		_, topLayer = chromedp.Call(ctx, dom.GetTopLayerElements, cdp.Empty{})
		return err
	})
	require.NoError(t, err)
	assert.Equal(t, doc, w.doc)
	assert.Equal(t, srv.URL+"/b", w.url)
	require.Error(t, topLayer, "the DOM domain is off on the toolset's tab")
	assert.Contains(t, topLayer.Error(), "enabled")

	fast := call(ToolSnapshot, nil)
	assert.Contains(t, fast.Text, `- heading "Page /b"`)
	assert.Equal(t, doc, s.refs.doc)

	// A world that does not answer: the long way, the same text.
	s.worlds.mu.Lock()
	s.worlds.tabs[tab].world = "0.0"
	s.worlds.mu.Unlock()
	slow := call(ToolSnapshot, nil)
	assert.Equal(t, fast.Text, slow.Text)
	_, ok = s.worlds.get(tab)
	assert.False(t, ok, "a world that did not answer is forgotten")
	assert.Equal(t, doc, s.refs.doc)

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

// TestWorldTrackerPairsWorldsWithDocuments: a world is taken only for the
// tab's main frame, only as an isolated world of the walk, and only once
// the document it belongs to has been seen; a new document, a cleared or
// destroyed context drop it.
func TestWorldTrackerPairsWorldsWithDocuments(t *testing.T) {
	const tab = target.ID("TAB")
	var w worldTracker
	st := &tabWorld{}
	w.tabs = map[target.ID]*tabWorld{tab: st}
	created := func(name, typ, frame, unique string) *runtime.EventExecutionContextCreated {
		return &runtime.EventExecutionContextCreated{Context: &runtime.ExecutionContextDescription{
			Name: name, UniqueID: unique, AuxData: []byte(`{"type":"` + typ + `","frameId":"` + frame + `","isDefault":false}`)}}
	}
	navigated := func(frame, parent, loader, url string) *page.EventFrameNavigated {
		return &page.EventFrameNavigated{Frame: &cdp.Frame{ID: cdp.FrameID(frame), ParentID: cdp.FrameID(parent), LoaderID: cdp.LoaderID(loader), URL: url}}
	}
	known := func() (tabWorld, bool) { return w.get(tab) }

	w.on(tab, st, created(walkWorld, "isolated", "TAB", "u0"))
	_, ok := known()
	assert.False(t, ok, "a world before any document was seen is not paired")

	w.on(tab, st, navigated("TAB", "", "L1", "http://a/"))
	for _, ev := range []any{
		created("other", "isolated", "TAB", "x1"),
		created(walkWorld, "default", "TAB", "x2"),
		created(walkWorld, "isolated", "CHILD", "x3"),
		navigated("CHILD", "TAB", "L9", "http://child/"),
	} {
		w.on(tab, st, ev)
	}
	_, ok = known()
	assert.False(t, ok, "neither another world, the page's own, nor a child frame's")

	w.on(tab, st, created(walkWorld, "isolated", "TAB", "u1"))
	got, ok := known()
	require.True(t, ok)
	assert.Equal(t, tabWorld{doc: "L1", url: "http://a/", world: "u1"}, got)

	w.on(tab, st, &page.EventNavigatedWithinDocument{FrameID: "TAB", URL: "http://a/#x"})
	got, _ = known()
	assert.Equal(t, tabWorld{doc: "L1", url: "http://a/#x", world: "u1"}, got, "the same document, another URL")

	w.on(tab, st, navigated("TAB", "", "L2", "http://b/"))
	_, ok = known()
	assert.False(t, ok, "a new document has no world until its own is made")
	w.on(tab, st, created(walkWorld, "isolated", "TAB", "u2"))
	got, _ = known()
	assert.Equal(t, tabWorld{doc: "L2", url: "http://b/", world: "u2"}, got)

	w.on(tab, st, &runtime.EventExecutionContextDestroyed{ExecutionContextUniqueID: "u1"})
	_, ok = known()
	assert.True(t, ok, "another context's end")
	w.on(tab, st, &runtime.EventExecutionContextDestroyed{ExecutionContextUniqueID: "u2"})
	_, ok = known()
	assert.False(t, ok, "the world's end")

	w.on(tab, st, created(walkWorld, "isolated", "TAB", "u3"))
	w.on(tab, st, &runtime.EventExecutionContextsCleared{})
	_, ok = known()
	assert.False(t, ok, "contexts cleared")

	w.on(tab, st, created(walkWorld, "isolated", "TAB", "u4"))
	w.forget(tab)
	_, ok = known()
	assert.False(t, ok, "forgotten")
	assert.False(t, isolatedIn([]byte(`not json`), tab))
}
