package hybroute

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// A wedged tab recovers by itself. A call that its deadline ended may have
// left the page unable to answer (a script in an endless loop holds the
// renderer's main thread; every later command on the tab would wait for
// it). The session is not lost for that: its browser context, with the
// cookies and storage, is fine. So the next call on the entry first asks
// the tab a trivial question (a Runtime.evaluate of 1, bounded by
// tabProbeTimeout); a tab that does not answer is replaced by a fresh tab
// in the same browser context, with the guard, the landing tracker and the
// dialog answerer on it, and the result says so (Result.TabReplaced).

// tabProbeTimeout bounds the question that tells a wedged tab from a busy
// one. A page that answers nothing for this long after its call already
// timed out is not coming back in time for the next call.
const tabProbeTimeout = 2 * time.Second

// errTabWedged is the probe's finding.
var errTabWedged = errors.New("the tab did not answer after its last call's deadline")

// recoverTab runs at the start of a call, under the entry's callMu, when
// the previous call ended by its deadline. It reports whether the tab was
// replaced.
func (r *Router) recoverTab(ctx context.Context, e *entry) (bool, error) {
	if !e.suspect.Load() {
		return false, nil
	}
	if probeTab(ctx, e.tab.context()) == nil {
		e.suspect.Store(false)
		return false, nil
	}
	if err := ctx.Err(); err != nil {
		return false, err // the caller gave up, not the tab: ask again next time
	}
	old := e.tab.context()
	// First stop the script that holds the renderer: Chromium may put the
	// new tab in the same renderer process (same site, a process limit).
	terminate(old)
	rctx, cancel := context.WithTimeout(ctx, r.cfg.createTimeout)
	retire, err := e.tab.replace(rctx, &r.cfg)
	cancel()
	if err != nil {
		// No fresh tab in this browser context: drop the session, so the
		// next call starts a fresh one rather than meet this tab again.
		r.drop(e)
		return false, fmt.Errorf("hybroute: replacing a tab that does not answer: %w", e.tab.wrapErr(err))
	}
	e.suspect.Store(false)
	w, err := r.armTab(e)
	if err != nil {
		// A tab with no guard must not run a call.
		r.drop(e)
		return false, fmt.Errorf("hybroute: enabling the request guard on the replacement tab: %w", e.tab.wrapErr(err))
	}
	r.mu.Lock()
	w.startLocked(r)
	if r.closed {
		r.mu.Unlock()
		abandonTab(old)
		retire()
		return false, ErrClosed
	}
	r.sess.wg.Go(func() {
		abandonTab(old)
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
	return tabWatchers{guard: guard, dialogs: r.watchDialogs(e, e.tab.context())}, nil
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

// probeTab asks the tab for 1 and waits tabProbeTimeout at most.
func probeTab(ctx, tabCtx context.Context) error {
	pctx, cancel := bindTab(tabCtx, ctx)
	defer cancel()
	pctx, cancel2 := context.WithTimeout(pctx, tabProbeTimeout)
	defer cancel2()
	_, err := chromedp.Call(pctx, runtime.Evaluate, runtime.EvaluateParams{Expression: "1"})
	if err != nil && pctx.Err() != nil {
		return errTabWedged
	}
	return nil // an answer, even an error, is an answer
}

// openTab opens a new tab with chromedp.NewContext(parent, opts...) and
// attaches to it; a ctx that ends first undoes it at once. A replacement
// tab is opened on its caller's time, under the session's call lock, so it
// is not left to settle (firstAction): a page the browser makes after the
// undo goes with the session's browser context, which the failed
// replacement's drop disposes of.
func openTab(ctx, parent context.Context, opts ...chromedp.ContextOption) (context.Context, context.CancelFunc, error) {
	tctx, stop := chromedp.NewContext(parent, opts...)
	if err := firstAction(ctx, tctx, 0, func(openState) { stop() }); err != nil {
		return nil, nil, err
	}
	return tctx, stop, nil
}

// openSettleTimeout bounds how long an opening its caller cut short is
// still waited for, so that the tab it made can be closed. It outlasts the
// guard's setup of the new target (targetSetupTimeout), the longest step
// of an opening on a loaded browser: a shorter bound left tabs open there.
const openSettleTimeout = targetSetupTimeout + 15*time.Second

// openState is how far an opening got when it is undone (firstAction).
type openState int

const (
	openNotStarted openState = iota // ctx was over first: nothing was made
	openSettled                     // the first action returned: its target, if any, is known
	openUnsettled                   // cut short in flight: a target may be made, unknown
)

// firstAction runs chromedp's first action on the new tab context tctx
// (it makes the target and attaches to it) and returns its error, or
// ctx's when ctx ends first. undo, called once on any failure, cancels
// tctx and closes what was made; its state says how far the opening got
// (only once it settled may the context's target be read).
//
// With settle > 0, a ctx that ends does not cancel the action at once:
// chromedp learns the target's id only when Target.createTarget answers,
// so a cancel before that closes nothing, and the page the browser makes a
// moment later stays open with nobody to close it (on a cloud browser, for
// the session's whole life). So the action is left to settle, for up to
// settle on a clock of its own, and undo then closes the tab it knows.
// Only a caller that does not hold anyone up may wait so: a session's
// creation, which its callers await on their own deadlines. tctx must not
// be a child of ctx.
func firstAction(ctx, tctx context.Context, settle time.Duration, undo func(openState)) error {
	if err := ctx.Err(); err != nil {
		undo(openNotStarted)
		return err
	}
	done := make(chan error, 1)
	go func() { done <- chromedp.Do(tctx) }()
	select {
	case err := <-done:
		if err != nil {
			undo(openSettled)
		}
		return err
	case <-ctx.Done():
	}
	state := openUnsettled
	if settle > 0 {
		timer := time.NewTimer(settle)
		select {
		case <-done:
			state = openSettled
		case <-timer.C:
		}
		timer.Stop()
	}
	undo(state) // when unsettled, it cancels tctx: the action returns
	if state == openUnsettled {
		<-done
	}
	return ctx.Err()
}

// terminate stops the script running in a wedged tab (Chromium answers
// Runtime.terminateExecution off the page's main thread), so its renderer
// stops spinning. Best effort, bounded by tabProbeTimeout.
func terminate(tabCtx context.Context) {
	c := chromedp.FromContext(tabCtx)
	if c == nil || c.Target == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), tabProbeTimeout)
	defer cancel()
	_, _ = cdp.Call(ctx, c.Target, runtime.TerminateExecution, cdp.Empty{})
}

// abandonTab closes a replaced tab. Best effort and bounded: the browser
// context's end takes whatever is left.
func abandonTab(old context.Context) {
	c := chromedp.FromContext(old)
	if c == nil || c.Target == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), controlTimeout)
	defer cancel()
	_ = closeTarget(ctx, old, c.Target.TargetID)
}

// replace opens a fresh tab in the local tab's browser context (its
// cookies and storage stay), with the router's viewport, and makes it the
// tab. retire detaches from the old one.
func (t *localTab) replace(ctx context.Context, cfg *config) (func(), error) {
	tctx, stop, err := openTab(ctx, t.proc.Context(),
		chromedp.WithExistingBrowserContext(t.bcID), chromedp.WithDetachOnCancel())
	if err != nil {
		return nil, err
	}
	if err := setViewport(tctx, cfg); err != nil {
		stop()
		return nil, err
	}
	_, oldStop := t.Swap(tctx, stop)
	return oldStop, nil
}

// replacedPage is the tab a remote session's calls run in once its first
// tab was replaced. The first tab's context holds the connection to the
// browser, so it lives on (closed), and the new tab is its child.
type replacedPage struct {
	mu   sync.Mutex
	ctx  context.Context
	stop context.CancelFunc
}

func (p *replacedPage) get() context.Context {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ctx
}

// replace opens a fresh tab on the remote browser, in the browser context
// of the first (chromedp gives a child context its parent's), and makes it
// the tab. Its retire closes a replacement
// that is itself replaced (chromedp closes a child tab when its context
// ends); the first tab's context stays, as it holds the connection.
func (t *remoteTab) replace(ctx context.Context, _ *config) (func(), error) {
	tctx, stop, err := openTab(ctx, t.ctx)
	if err != nil {
		return nil, err
	}
	t.page.mu.Lock()
	oldStop := t.page.stop
	t.page.ctx, t.page.stop = tctx, stop
	t.page.mu.Unlock()
	if oldStop == nil {
		oldStop = func() {}
	}
	return oldStop, nil
}
