package snapshot

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// The walk's world in each tab's main frame, known from the tab's events:
// Chromium makes the world as each document starts (Warm) and
// says so, with the world's system-wide id, right after the frame
// navigated. A snapshot of the main frame then needs one round trip, the
// walk itself, instead of reading the frame tree and asking for the world
// first, and the walk is the function the world defined at its start, not
// a source compiled again for every call.

// World is what a tab's events said of its main frame's document.
type World struct {
	Doc cdp.LoaderID // the document's loader
	URL string       // the document's URL, as the frame reports it
	ID  string       // the walk world's unique context id; empty: not seen yet
}

// Worlds holds the World of each tab of a session. Its listener
// runs on the tab's reader, so it only records, under a lock.
type Worlds struct {
	mu   sync.Mutex
	tabs map[target.ID]*World
}

// Get returns the tab's document and walk world, if both are known.
func (w *Worlds) Get(tab target.ID) (World, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.tabs[tab]
	if t == nil || t.Doc == "" || t.ID == "" {
		return World{}, false
	}
	return *t, true
}

// forget drops what is known of a tab whose world did not answer.
func (w *Worlds) forget(tab target.ID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t := w.tabs[tab]; t != nil {
		t.ID = ""
	}
}

// Put records what is known of a tab's main frame, as its events would
// tell it; the tab's listener goes on from there.
func (w *Worlds) Put(tab target.ID, x World) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t := w.tabs[tab]; t != nil {
		*t = x
		return
	}
	if w.tabs == nil {
		w.tabs = map[target.ID]*World{}
	}
	w.tabs[tab] = &x
}

// Listen follows tab's main frame: its documents and the walk world of
// each. A document that starts clears the world until its own is made, so
// a world is never paired with another document.
func (w *Worlds) Listen(ctx context.Context, tab target.ID) error {
	w.mu.Lock()
	if w.tabs == nil {
		w.tabs = map[target.ID]*World{}
	}
	t := &World{}
	w.tabs[tab] = t
	w.mu.Unlock()
	return chromedp.Listen(ctx, func(ev any) { w.on(tab, t, ev) })
}

// on records one event of tab, whose state is t.
func (w *Worlds) on(tab target.ID, t *World, ev any) {
	switch ev := ev.(type) {
	case *page.EventFrameNavigated:
		if ev.Frame == nil || ev.Frame.ParentID != "" || string(ev.Frame.ID) != string(tab) {
			return
		}
		w.mu.Lock()
		*t = World{Doc: ev.Frame.LoaderID, URL: ev.Frame.URL}
		w.mu.Unlock()
	case *page.EventNavigatedWithinDocument:
		if string(ev.FrameID) != string(tab) {
			return
		}
		w.mu.Lock()
		t.URL = ev.URL
		w.mu.Unlock()
	case *runtime.EventExecutionContextCreated:
		if ev.Context == nil || ev.Context.Name != walkWorld || !isolatedIn(ev.Context.AuxData, tab) {
			return
		}
		w.mu.Lock()
		if t.Doc != "" {
			t.ID = ev.Context.UniqueID
		}
		w.mu.Unlock()
	case *runtime.EventExecutionContextDestroyed:
		w.mu.Lock()
		if t.ID == ev.ExecutionContextUniqueID {
			t.ID = ""
		}
		w.mu.Unlock()
	case *runtime.EventExecutionContextsCleared:
		w.mu.Lock()
		t.ID = ""
		w.mu.Unlock()
	}
}

// isolatedIn reports whether a context's auxData names an isolated world
// of frame tab (the tab's main frame has the tab's id).
func isolatedIn(aux []byte, tab target.ID) bool {
	var a struct {
		Type    string `json:"type"`
		FrameID string `json:"frameId"`
	}
	return json.Unmarshal(aux, &a) == nil && a.Type == "isolated" && a.FrameID == string(tab)
}

// walkDefined calls the walk the world defined at its start.
const walkDefined = `(next, inline) => globalThis.__hybrouteWalk(next, inline)`
