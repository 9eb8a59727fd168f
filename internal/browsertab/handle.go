package browsertab

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
)

// Tab is a kind of tab a session drives: on the local browser, on a remote
// one over CDP, or through a REST API. Each answers the same questions, so
// a call need not know which it runs on.
type Tab interface {
	// Context is the tab's current chromedp context (a replacement or a
	// switch of the front changes it). Never cancel it: the session's end
	// closes the tab.
	Context() context.Context
	// Dead reports that the browser under the tab is gone.
	Dead() bool
	// WrapErr turns a call's error into one that names a dead browser.
	WrapErr(err error) error
	// Replace swaps in a fresh tab in the same browser context, for a tab
	// that stopped answering. retire lets go of the old one, after
	// Abandon is done with it.
	Replace(ctx context.Context) (retire func(), err error)
	// BrowserContextID is the session's browser context, once known;
	// empty on a tab without one.
	BrowserContextID() cdp.BrowserContextID
}

// PagedTab is a tab whose session can have other pages, one of which is
// its front.
type PagedTab interface {
	Tab
	// Attach opens a chromedp context on an existing page of the session.
	Attach(ctx context.Context, id target.ID) (context.Context, context.CancelFunc, error)
	// OpenPage opens a fresh page in the session's browser context.
	OpenPage(ctx context.Context) (context.Context, context.CancelFunc, error)
	// Swap makes tctx the front and returns the previous front.
	Swap(tctx context.Context, stop context.CancelFunc) (context.Context, context.CancelFunc)
}

// Handle is what the tab layer keeps of one session: its tab, and the
// records of what the tab's pages did that the next call reports or acts
// on. The session's owner lends it to one call at a time.
type Handle struct {
	tab Tab

	// Dialogs are the dialogs answered since the last call took them.
	Dialogs Dialogs
	// Held is a dialog left open for the caller to answer.
	Held Held
	// Pages are the session's other pages that calls ran in.
	Pages Pages
	// Origins are the origins its pages went to.
	Origins Origins

	probe  atomic.Bool            // the last call ended by its deadline: probe the tab first
	landed atomic.Pointer[string] // a tab without CDP: the page URL its server last reported
}

// NewHandle is the handle of a session's tab t.
func NewHandle(t Tab) *Handle { return &Handle{tab: t} }

// Tab is the session's tab.
func (h *Handle) Tab() Tab { return h.tab }

// Paged is the session's tab, when it can have other pages.
func (h *Handle) Paged() (PagedTab, bool) {
	p, ok := h.tab.(PagedTab)
	return p, ok
}

// Context is the tab's current chromedp context.
func (h *Handle) Context() context.Context { return h.tab.Context() }

// Bind returns the context a call's chromedp actions run with: bound to
// the tab's current context, ended by ctx, never closing the tab when it
// ends (Bind). It is the same on every kind of tab.
func (h *Handle) Bind(ctx context.Context) (context.Context, context.CancelFunc) {
	return Bind(h.tab.Context(), ctx)
}

// Dead reports that the browser under the tab is gone.
func (h *Handle) Dead() bool { return h.tab.Dead() }

// WrapErr turns a call's error into one that names a dead browser.
func (h *Handle) WrapErr(err error) error { return h.tab.WrapErr(err) }

// ProbeFirst reports whether the next call must first check that the tab
// answers (the last one ended by its deadline: Probe).
func (h *Handle) ProbeFirst() bool { return h.probe.Load() }

// SetProbeFirst sets or clears ProbeFirst.
func (h *Handle) SetProbeFirst(v bool) { h.probe.Store(v) }

// Landed is the page URL the server of a tab without CDP last reported,
// if one did. (On a CDP tab the browser's guard tracks it, from events.)
func (h *Handle) Landed() (string, bool) {
	if u := h.landed.Load(); u != nil {
		return *u, true
	}
	return "", false
}

// SetLanded keeps u as the page URL of a tab without CDP.
func (h *Handle) SetLanded(u string) { h.landed.Store(&u) }

// Origins is the set of origins a session's pages went to: Chromium lists
// no origins that hold storage, so a read of the storage asks these. The
// zero value is empty and ready.
type Origins struct {
	mu sync.Mutex
	m  map[string]struct{}
}

// Add records the origin o, unless limit origins are kept already.
func (s *Origins) Add(o string, limit int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]struct{}{}
	}
	if len(s.m) < limit {
		s.m[o] = struct{}{}
	}
}

// List returns the recorded origins, in no order.
func (s *Origins) List() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.m))
	for o := range s.m {
		out = append(out, o)
	}
	return out
}

// Front is the page a tab's calls run in: the chromedp context on it and
// what ends that context. A replacement of a wedged page or a switch of the
// front swaps it; the kind of tab that holds it closes it with the tab.
// The zero value has no page.
type Front struct {
	mu   sync.Mutex
	ctx  context.Context
	stop context.CancelFunc
}

// Get is the front page's context; nil before the first Swap.
func (f *Front) Get() context.Context {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ctx
}

// Stopper is what ends the front page's context; nil before the first
// Swap, or when nothing ends it but the connection.
func (f *Front) Stopper() context.CancelFunc {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stop
}

// Swap makes ctx, which stop ends, the front page, and returns the page
// it was.
func (f *Front) Swap(ctx context.Context, stop context.CancelFunc) (context.Context, context.CancelFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	old, oldStop := f.ctx, f.stop
	f.ctx, f.stop = ctx, stop
	return old, oldStop
}
