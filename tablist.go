package hybroute

import (
	"context"
	"fmt"

	"github.com/chromedp/cdproto/target"

	"github.com/hybroute/hybroute/internal/browsertab"
	"github.com/hybroute/hybroute/route"
)

// A session has a tab per browser it runs in, and the pages its pages open
// (popups the guard let load) or that the caller opens ([Call.OpenTab]).
// Every page of a session's browser context is the session's: the guard
// covers each one from its first request, and the landing check after a
// call checks each one. One of them is the session's front tab, the one
// calls run in; [Router.SelectTab] makes another one the front. The front
// tab has what the first tab has: the guard names it as the tab, its main
// frame's URL is what the landing check reads, and its dialogs are
// answered by the policy. A tab that was the front once keeps its chromedp
// context (and its listeners) until it closes or the session ends.
//
// See docs/decisions/2026-12-02-a-session-switches-its-front-tab.md.

// Tab is one page of a session, as [Router.Tabs] lists it.
type Tab struct {
	ID    string      // the browser's target id
	Route route.Route // the browser it is in (route.Local for a fallback too)
	URL   string      // its main frame's URL as the browser reports it (as LandedURL, not redacted)
	Title string
	// Front: calls on its browser run in it. Current: it is the front tab
	// of the browser the session's calls run in now.
	Front, Current bool
}

// Tabs lists the pages of the session sessionKey in each browser it has
// (the cloud's and the local one's), front tabs first. It runs no call.
func (r *Router) Tabs(ctx context.Context, sessionKey string) ([]Tab, error) {
	key, err := normalizeKey(sessionKey)
	if err != nil {
		return nil, err
	}
	cur := r.pol.CacheKey(key, route.Cloud)
	if route, ok := r.lastRoute(key); ok {
		cur = r.pol.CacheKey(key, route)
	}
	var out []Tab
	for _, e := range r.sessionEntries(key) {
		if e.bg == nil {
			continue // no CDP: one page, the server's
		}
		front := e.frontID()
		for _, id := range browsertab.Order(front, e.bg.Popups(&e.gs)) {
			ti, err := e.bg.TargetInfo(ctx, id)
			if err != nil {
				continue // gone meanwhile
			}
			u, title := browsertab.Describe(ti)
			out = append(out, Tab{ID: string(id), Route: e.route, URL: u, Title: title,
				Front: id == front, Current: id == front && e.key == cur})
		}
	}
	return out, nil
}

// sessionEntries are the live entries of a session key: its cloud (or
// only) one and its local one.
func (r *Router) sessionEntries(key string) []*entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sess.Of(func(e *entry) bool { return !e.released.Load() }, key, key+LocalSuffix)
}

// frontID is the entry's front tab.
func (e *entry) frontID() target.ID {
	return e.gs.Tab()
}

// holding finds the entry of the session that has the page id, and holds
// it (inUse, callMu) for the caller's change. done lets go.
func (r *Router) holding(key string, id target.ID) (*entry, func(), error) {
	for _, e := range r.sessionEntries(key) {
		if e.bg == nil || !e.bg.Owns(&e.gs, id) {
			continue
		}
		e.inUse.Add(1)
		e.callMu.Lock()
		return e, func() { e.callMu.Unlock(); e.touch(); r.letGo(e) }, nil
	}
	return nil, nil, fmt.Errorf("%w: %q", ErrNoSuchTab, id)
}

// SelectTab makes the page id the front tab of its browser, and that
// browser the one the session's next calls run in. It returns the route of
// that browser. It runs no call: the next call runs in the tab, and the
// landing check after it checks where the tab is.
func (r *Router) SelectTab(ctx context.Context, sessionKey, id string) (route.Route, error) {
	key, err := normalizeKey(sessionKey)
	if err != nil {
		return 0, err
	}
	e, done, err := r.holding(key, target.ID(id))
	if err != nil {
		return 0, err
	}
	defer done()
	if err := r.toFront(ctx, e, target.ID(id)); err != nil {
		return 0, fmt.Errorf("hybroute: selecting tab %s: %w", id, e.h.WrapErr(err))
	}
	planned := e.route
	if e.fallback {
		planned = route.Cloud // it stands in for the cloud session, under its key
	}
	r.remember(key, planned)
	return e.route, nil
}

// CloseTab closes the page id of the session. Closing a front tab makes
// another page of its browser the front; the only page of a browser is
// not closed ([ErrLastTab]).
func (r *Router) CloseTab(ctx context.Context, sessionKey, id string) error {
	key, err := normalizeKey(sessionKey)
	if err != nil {
		return err
	}
	tid := target.ID(id)
	e, done, err := r.holding(key, tid)
	if err != nil {
		return err
	}
	defer done()
	if e.frontID() == tid {
		others := e.bg.Popups(&e.gs)
		if len(others) == 0 {
			return ErrLastTab
		}
		next := browsertab.Order("", others)[0]
		if err := r.toFront(ctx, e, next); err != nil {
			return fmt.Errorf("hybroute: closing tab %s: %w", id, e.h.WrapErr(err))
		}
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), browsertab.ControlTimeout)
	defer cancel()
	err = e.bg.CloseTarget(cctx, tid)
	if pg, ok := e.h.Pages.Take(tid); ok && pg.Stop != nil {
		pg.Stop()
	}
	return err
}

// OpenTab opens a fresh page in the browser the run drives and makes it
// the session's front tab. It returns the context the rest of the run
// drives the new tab with; the landing check after the run checks the new
// tab. Navigate it in a run of [Router.Navigate], so that its URL is
// planned and decided like any navigation.
func (c *Call) OpenTab(ctx context.Context) (context.Context, error) {
	e := c.e
	ft, ok := e.h.Paged()
	if !ok {
		return nil, browsertab.ErrOnePage
	}
	tctx, stop, err := ft.OpenPage(c.caller)
	if err != nil {
		return nil, fmt.Errorf("hybroute: opening a tab: %w", e.h.WrapErr(err))
	}
	if err := c.r.makeFront(c.caller, e, ft, tctx, stop, true); err != nil {
		return nil, err
	}
	cctx, cancel := e.h.Bind(c.caller)
	context.AfterFunc(ctx, cancel)
	return cctx, nil
}

// toFront makes the page id, which is the entry's, its front tab.
func (r *Router) toFront(ctx context.Context, e *entry, id target.ID) error {
	if e.frontID() == id {
		return nil
	}
	tctx, stop, fresh, err := e.h.PageContext(ctx, id, r.cfg.CreateTimeout)
	if err != nil {
		return err
	}
	ft, _ := e.h.Paged()
	return r.makeFront(ctx, e, ft, tctx, stop, fresh)
}

// makeFront swaps tctx in as the entry's front tab. A fresh context (never
// a front before) gets what every front tab has: the guard's
// registration, the landing tracker, the dialog answerer. One that was
// the front before has them still, and is registered again as the tab.
func (r *Router) makeFront(ctx context.Context, e *entry, ft browsertab.PagedTab, tctx context.Context, stop context.CancelFunc, fresh bool) error {
	e.h.SwapFront(ft, tctx, stop)
	if fresh {
		if err := r.arm(e, "a tab", nil); err != nil {
			return err
		}
	} else {
		if err := e.bg.Register(&e.gs, e.key, tctx, ft.BrowserContextID()); err != nil {
			return err
		}
	}
	// The landing check reads the front's URL from now on: its own, as
	// the browser has it (the tracker saw no event of a page it was not
	// listening to, or of a tab that was not the front).
	u, err := browsertab.CurrentURL(tctx, ctx)
	if err != nil {
		return err
	}
	e.bg.SetLanded(e.frontID(), u)
	return nil
}
