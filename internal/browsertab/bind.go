package browsertab

import (
	"context"
	"errors"
	"time"
)

// Bind returns a child of the tab's chromedp context that also ends when
// ctx ends, and reports ctx's deadline: a call's deadline bounds the call
// without closing the tab, which belongs to the session, not to the call.
//
// The child has no timer of its own: it ends only after ctx has, so a call
// that its caller's deadline ended always finds ctx.Err() set. (With the
// deadline on a second timer, that timer could fire first: the call failed
// while ctx still said nothing, and it was taken for a failure of the
// tab's, not a deadline.)
func Bind(tabCtx, ctx context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancelCause(tabCtx)
	stop := context.AfterFunc(ctx, func() { cancel(ctx.Err()) })
	return boundCall{Context: c, caller: ctx}, func() { stop(); cancel(nil) }
}

// boundCall is a call's context on a tab (Bind). Its Err is
// context.DeadlineExceeded when the caller's deadline ended it, as the
// caller's own is, and context.Cause agrees; contexts derived from it read
// context.Canceled then (the context package gives children their
// parent's cancel error, not its Err), with the deadline as their Cause.
type boundCall struct {
	context.Context // a child of the tab's context, ended by the caller's
	caller          context.Context
}

// Deadline is the caller's: run may size its own waits by it.
func (c boundCall) Deadline() (time.Time, bool) { return c.caller.Deadline() }

// Err is fixed once the call ends (the cause of its end does not change).
func (c boundCall) Err() error {
	err := c.Context.Err()
	if err != nil && errors.Is(context.Cause(c.Context), context.DeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return err
}
