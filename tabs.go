package hybroute

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/hybroute/hybroute/internal/browsertab"
	"github.com/hybroute/hybroute/internal/guard"
)

// A wedged tab recovers by itself. A call that its deadline ended may have
// left the page unable to answer (a script in an endless loop holds the
// renderer's main thread; every later command on the tab would wait for
// it). The session is not lost for that: its browser context, with the
// cookies and storage, is fine. So the next call on the entry first asks
// the tab a trivial question (a Runtime.evaluate of 1, bounded by
// browsertab.ProbeTimeout); a tab that does not answer is replaced by a fresh tab
// in the same browser context, with the guard, the landing tracker and the
// dialog answerer on it, and the result says so (Result.TabReplaced).

// controlTimeout bounds the protocol calls made on the browser's own
// behalf (a browser context's dispose, a replaced tab's close), which
// must neither hang on a wedged browser nor be cut short by a caller.
const controlTimeout = browsertab.ControlTimeout

// recoverTab runs at the start of a call, under the entry's callMu, when
// the previous call ended by its deadline. It reports whether the tab was
// replaced.
func (r *Router) recoverTab(ctx context.Context, e *entry) (bool, error) {
	if !e.h.ProbeFirst() {
		return false, nil
	}
	if browsertab.Probe(ctx, e.h.Context()) == nil {
		e.h.SetProbeFirst(false)
		return false, nil
	}
	if err := ctx.Err(); err != nil {
		return false, err // the caller gave up, not the tab: ask again next time
	}
	old := e.h.Context()
	// First stop the script that holds the renderer: Chromium may put the
	// new tab in the same renderer process (same site, a process limit).
	browsertab.Terminate(old)
	rctx, cancel := context.WithTimeout(ctx, r.cfg.createTimeout)
	retire, err := e.h.Tab().Replace(rctx)
	cancel()
	if err != nil {
		// No fresh tab in this browser context: drop the session, so the
		// next call starts a fresh one rather than meet this tab again.
		r.drop(e)
		return false, fmt.Errorf("hybroute: replacing a tab that does not answer: %w", e.h.WrapErr(err))
	}
	e.h.SetProbeFirst(false)
	w, err := r.armTab(e)
	if err != nil {
		// A tab with no guard must not run a call.
		r.drop(e)
		return false, fmt.Errorf("hybroute: enabling the request guard on the replacement tab: %w", e.h.WrapErr(err))
	}
	r.mu.Lock()
	w.startLocked(r)
	if r.closed {
		r.mu.Unlock()
		browsertab.Abandon(old)
		retire()
		return false, ErrClosed
	}
	r.sess.wg.Go(func() {
		browsertab.Abandon(old)
		retire()
	})
	r.mu.Unlock()
	r.log.LogAttrs(ctx, slog.LevelWarn, "hybroute: a tab did not answer after its call's deadline; replaced it in the same browser context",
		slog.String("cache_key", e.key), slog.String("route", e.route.String()))
	return true, nil
}

// tabWatchers watch one tab of a session for as long as it lives: the
// guard's hold on it (which ends by forgetting the tab) and the dialog
// answerer. Each returns when the tab ends.
type tabWatchers struct{ guard, dialogs func() }

// armTab readies the current tab of e to run calls, the same way for a new
// session, a replacement tab and a fresh front tab: the guard (Fetch, the offline rules,
// the landing tracker) and the dialog answerer. The watchers it returns
// must be started (startLocked), or run by ended once the tab is ended.
func (r *Router) armTab(e *entry) (tabWatchers, error) {
	guard, err := r.enableGuard(e)
	if err != nil {
		return tabWatchers{}, err
	}
	return tabWatchers{guard: guard, dialogs: r.watchDialogs(e, e.h.Context())}, nil
}

// startLocked runs the watchers, with r.mu held: on the sessions' wait
// group, so Close waits for them, or, once the router is closed, on their
// own, since Close ends their tab and they end with it.
func (w tabWatchers) startLocked(r *Router) {
	if r.closed {
		go w.guard()
		go w.dialogs()
		return
	}
	r.sess.wg.Go(w.guard)
	r.sess.wg.Go(w.dialogs)
}

// ended runs the watchers of a tab that is already ended, so that they
// return at once and the guard forgets the tab now.
func (w tabWatchers) ended() {
	w.guard()
	w.dialogs()
}

// drop forgets the session of e and ends it as every end does (end): the
// calls still on it fail with ErrReleased.
func (r *Router) drop(e *entry) {
	r.mu.Lock()
	if r.sess.m[e.key] == e {
		delete(r.sess.m, e.key)
	}
	r.mu.Unlock()
	_ = e.end()
}

// openSettleTimeout bounds how long an opening its caller cut short is
// still waited for, so that the tab it made can be closed. It outlasts the
// guard's setup of the new target (guard.TargetSetupTimeout), the longest step
// of an opening on a loaded browser: a shorter bound left tabs open there.
const openSettleTimeout = guard.TargetSetupTimeout + 15*time.Second

// Replace opens a fresh tab on the remote browser, in the browser context
// of the first (chromedp gives a child context its parent's), and makes it
// the tab's front page. The first tab's context holds the connection to the
// browser, so it lives on (closed), and the new tab is its child. Its
// retire closes a replacement that is itself replaced (chromedp closes a
// child tab when its context ends); the first tab's context stays.
func (t *remoteTab) Replace(ctx context.Context) (func(), error) {
	tctx, stop, err := browsertab.Open(ctx, t.ctx)
	if err != nil {
		return nil, err
	}
	_, oldStop := t.page.Swap(tctx, stop)
	if oldStop == nil {
		oldStop = func() {}
	}
	return oldStop, nil
}
