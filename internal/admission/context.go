package admission

import (
	"context"
	"time"
)

// A call's terms travel on its context to the session's creation, which
// runs apart from the caller, on a context without the caller's deadline.

type (
	runKey   struct{}
	waitKey  struct{}
	termsKey struct{}
)

// OnContext records a call's run budget (0: none) and whether it waits
// for its turn whatever the queue ahead.
func OnContext(ctx context.Context, run time.Duration, wait bool) context.Context {
	if run > 0 {
		ctx = context.WithValue(ctx, runKey{}, run)
	}
	if wait {
		ctx = context.WithValue(ctx, waitKey{}, true)
	}
	return ctx
}

// RunTimeout is the run budget ctx carries, 0 for none.
func RunTimeout(ctx context.Context) time.Duration {
	d, _ := ctx.Value(runKey{}).(time.Duration)
	return max(d, 0)
}

// ForCreation records the caller's terms on the context a session's
// creation runs under (which has no deadline of the caller's), and returns
// the wait they allow for a turn (0 when unbounded or none).
func ForCreation(create, caller context.Context) (context.Context, time.Duration) {
	w, _ := caller.Value(waitKey{}).(bool)
	terms := Terms{Caller: caller, Run: RunTimeout(caller), Wait: w}
	allow, _ := terms.Allowance(time.Now())
	return context.WithValue(create, termsKey{}, terms), max(allow, 0)
}

// TermsOf are the terms a creation's context carries (ForCreation).
func TermsOf(ctx context.Context) Terms {
	t, _ := ctx.Value(termsKey{}).(Terms)
	return t
}
