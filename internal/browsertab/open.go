package browsertab

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// ControlTimeout bounds the protocol calls made on the browser's own
// behalf (make or dispose of a browser context, close a replaced tab, a
// graceful close), which must not hang on a wedged browser and must not
// be cut short by a caller's ctx (that would leave half-made state in
// Chromium).
const ControlTimeout = 10 * time.Second

// ProbeTimeout bounds the question that tells a wedged tab from a busy
// one. A page that answers nothing for this long after its call already
// timed out is not coming back in time for the next call.
const ProbeTimeout = 2 * time.Second

// ErrWedged is the probe's finding.
var ErrWedged = errors.New("the tab did not answer after its last call's deadline")

// Probe asks the tab for 1 and waits ProbeTimeout at most.
func Probe(ctx, tabCtx context.Context) error {
	pctx, cancel := Bind(tabCtx, ctx)
	defer cancel()
	pctx, cancel2 := context.WithTimeout(pctx, ProbeTimeout)
	defer cancel2()
	_, err := chromedp.Call(pctx, runtime.Evaluate, runtime.EvaluateParams{Expression: "1"})
	if err != nil && pctx.Err() != nil {
		return ErrWedged
	}
	return nil // an answer, even an error, is an answer
}

// Open opens a new tab with chromedp.NewContext(parent, opts...) and
// attaches to it; a ctx that ends first undoes it at once. A replacement
// tab is opened on its caller's time, under the session's call lock, so it
// is not left to settle (FirstAction): a page the browser makes after the
// undo goes with the session's browser context, which the failed
// replacement's drop disposes of.
func Open(ctx, parent context.Context, opts ...chromedp.ContextOption) (context.Context, context.CancelFunc, error) {
	tctx, stop := chromedp.NewContext(parent, opts...)
	if err := FirstAction(ctx, tctx, 0, func(OpenState) { stop() }); err != nil {
		return nil, nil, err
	}
	return tctx, stop, nil
}

// OpenState is how far an opening got when it is undone (FirstAction).
type OpenState int

const (
	OpenNotStarted OpenState = iota // ctx was over first: nothing was made
	OpenSettled                     // the first action returned: its target, if any, is known
	OpenUnsettled                   // cut short in flight: a target may be made, unknown
)

// FirstAction runs chromedp's first action on the new tab context tctx
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
func FirstAction(ctx, tctx context.Context, settle time.Duration, undo func(OpenState)) error {
	if err := ctx.Err(); err != nil {
		undo(OpenNotStarted)
		return err
	}
	done := make(chan error, 1)
	go func() { done <- chromedp.Do(tctx) }()
	select {
	case err := <-done:
		if err != nil {
			undo(OpenSettled)
		}
		return err
	case <-ctx.Done():
	}
	state := OpenUnsettled
	if settle > 0 {
		timer := time.NewTimer(settle)
		select {
		case <-done:
			state = OpenSettled
		case <-timer.C:
		}
		timer.Stop()
	}
	undo(state) // when unsettled, it cancels tctx: the action returns
	if state == OpenUnsettled {
		<-done
	}
	return ctx.Err()
}

// Terminate stops the script running in a wedged tab (Chromium answers
// Runtime.terminateExecution off the page's main thread), so its renderer
// stops spinning. Best effort, bounded by ProbeTimeout.
func Terminate(tabCtx context.Context) {
	c := chromedp.FromContext(tabCtx)
	if c == nil || c.Target == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), ProbeTimeout)
	defer cancel()
	_, _ = cdp.Call(ctx, c.Target, runtime.TerminateExecution, cdp.Empty{})
}

// Abandon closes a replaced tab. Best effort and bounded: the browser
// context's end takes whatever is left.
func Abandon(old context.Context) {
	c := chromedp.FromContext(old)
	if c == nil || c.Target == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), ControlTimeout)
	defer cancel()
	_ = CloseTarget(ctx, old, c.Target.TargetID)
}

// CloseTarget closes the target id on the browser of tabCtx, within ctx,
// and counts a target already gone as closed.
func CloseTarget(ctx, tabCtx context.Context, id target.ID) error {
	c := chromedp.FromContext(tabCtx)
	if c == nil || c.Browser == nil {
		return nil
	}
	if _, err := cdp.Call(ctx, c.Browser, target.CloseTarget, target.CloseTargetParams{TargetID: id}); err != nil && !TargetGone(err) {
		return fmt.Errorf("closing the tab %s: %w", id, err)
	}
	return nil
}

// TargetGone reports Chromium's answer to a command on a target that is
// no longer there ("No target with given id found").
func TargetGone(err error) bool {
	return strings.Contains(err.Error(), "No target with given id")
}
