package hybroute

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

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

// A wedged tab recovers by itself (browsertab's Handle.Recover): a tab
// its last call's deadline left unable to answer is replaced by a fresh tab
// in the same browser context, with the guard, the landing tracker and the
// dialog answerer on it, and the result says so (Result.TabReplaced).

// recoverTab runs at the start of a call, under the entry's callMu, when
// the previous call ended by its deadline. It reports whether the tab was
// replaced. A session whose tab could not be replaced, or whose
// replacement could not be guarded, is dropped: the next call starts a
// fresh one rather than meet this tab again, and a tab with no guard must
// not run a call.
func (r *Router) recoverTab(ctx context.Context, e *entry) (bool, error) {
	retire, err := e.h.Recover(ctx, r.cfg.CreateTimeout)
	if rerr, ok := errors.AsType[*browsertab.ReplaceError](err); ok {
		r.drop(e)
		return false, fmt.Errorf("hybroute: replacing a tab that does not answer: %w", rerr.Err)
	}
	if err != nil || retire == nil {
		return false, err
	}
	if err := r.arm(e, "the replacement tab", retire); err != nil {
		return false, err
	}
	r.log.LogAttrs(ctx, slog.LevelWarn, "hybroute: a tab did not answer after its call's deadline; replaced it in the same browser context",
		slog.String("cache_key", e.key), slog.String("route", e.route.String()))
	return true, nil
}

// armTab readies the current tab of e to run calls, the same way for a new
// session, a replacement tab and a fresh front tab: the guard (Fetch, the offline rules,
// the landing tracker) and the dialog answerer. The watchers it returns
// must be started (Start, with r.mu held), or run by Ended once the tab is
// ended.
func (r *Router) armTab(e *entry) (browsertab.Watchers, error) {
	guard, err := r.enableGuard(e)
	if err != nil {
		return browsertab.Watchers{}, err
	}
	return browsertab.Watchers{Guard: guard, Dialogs: r.watchDialogs(e, e.h.Context())}, nil
}

// arm readies the current tab of e to run calls (armTab) and starts its
// watchers. A tab it cannot guard ends the session: the next call starts a
// fresh one, and a tab with no guard must not run a call. retire, if not
// nil, lets go of the tab this one replaces, on the sessions' wait group
// (at once once the router is closed). what names the tab in the error.
func (r *Router) arm(e *entry, what string, retire func()) error {
	w, err := r.armTab(e)
	if err != nil {
		r.drop(e)
		return fmt.Errorf("hybroute: enabling the request guard on %s: %w", what, e.h.WrapErr(err))
	}
	r.mu.Lock()
	w.Start(&r.sess.WG, r.closed)
	closed := r.closed
	if !closed && retire != nil {
		r.sess.WG.Go(retire)
	}
	r.mu.Unlock()
	if closed {
		if retire != nil {
			retire()
		}
		return ErrClosed
	}
	return nil
}

// drop forgets the session of e and ends it as every end does (end): the
// calls still on it fail with ErrReleased.
func (r *Router) drop(e *entry) {
	r.mu.Lock()
	if r.sess.M[e.key] == e {
		delete(r.sess.M, e.key)
	}
	r.mu.Unlock()
	r.room.Free()
	_ = e.end()
}
