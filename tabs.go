package hybroute

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/hybroute/hybroute/internal/browsertab"
)

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
