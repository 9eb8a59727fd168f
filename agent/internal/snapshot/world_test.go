package snapshot

import (
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWorldTrackerPairsWorldsWithDocuments: a world is taken only for the
// tab's main frame, only as an isolated world of the walk, and only once
// the document it belongs to has been seen; a new document, a cleared or
// destroyed context drop it.
func TestWorldTrackerPairsWorldsWithDocuments(t *testing.T) {
	const tab = target.ID("TAB")
	var w Worlds
	st := &World{}
	w.tabs = map[target.ID]*World{tab: st}
	created := func(name, typ, frame, unique string) *runtime.EventExecutionContextCreated {
		return &runtime.EventExecutionContextCreated{Context: &runtime.ExecutionContextDescription{
			Name: name, UniqueID: unique, AuxData: []byte(`{"type":"` + typ + `","frameId":"` + frame + `","isDefault":false}`)}}
	}
	navigated := func(frame, parent, loader, url string) *page.EventFrameNavigated {
		return &page.EventFrameNavigated{Frame: &cdp.Frame{ID: cdp.FrameID(frame), ParentID: cdp.FrameID(parent), LoaderID: cdp.LoaderID(loader), URL: url}}
	}
	known := func() (World, bool) { return w.Get(tab) }

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
	assert.Equal(t, World{Doc: "L1", URL: "http://a/", ID: "u1"}, got)

	w.on(tab, st, &page.EventNavigatedWithinDocument{FrameID: "TAB", URL: "http://a/#x"})
	got, _ = known()
	assert.Equal(t, World{Doc: "L1", URL: "http://a/#x", ID: "u1"}, got, "the same document, another URL")

	w.on(tab, st, navigated("TAB", "", "L2", "http://b/"))
	_, ok = known()
	assert.False(t, ok, "a new document has no world until its own is made")
	w.on(tab, st, created(walkWorld, "isolated", "TAB", "u2"))
	got, _ = known()
	assert.Equal(t, World{Doc: "L2", URL: "http://b/", ID: "u2"}, got)

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
