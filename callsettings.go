package hybroute

import (
	"context"
	"time"

	"github.com/hybroute/hybroute/internal/admission"
)

// admissionKey carries a call's admission terms on its context.
type admissionKey struct{}

type runTimeoutKey struct{}
type waitForTurnKey struct{}

// WithRunTimeout gives a call's run (what it does in the page: the
// navigation, the script) its own budget d, which starts once the call has
// its session. The time before (the wait for a turn to open a tab, the
// tab's opening) counts only against ctx's deadline, which should then be
// longer than d: the difference is the most the call waits for a turn.
// A run that d ends fails with context.DeadlineExceeded, as a call whose
// ctx ended does; a wait that runs out fails with [ErrBusy].
func WithRunTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, runTimeoutKey{}, d)
}

// WaitForTurn makes a call wait for its turn to open a local tab even when
// the queue ahead of it looks longer than its budget allows, rather than
// fail at once with [ErrBusy]. It still ends when its context does.
func WaitForTurn(ctx context.Context) context.Context {
	return context.WithValue(ctx, waitForTurnKey{}, true)
}

// runTimeout is the run budget ctx carries, 0 for none.
func runTimeout(ctx context.Context) time.Duration {
	d, _ := ctx.Value(runTimeoutKey{}).(time.Duration)
	return max(d, 0)
}

// withAdmission records the caller's terms on the context a session's
// creation runs under (which has no deadline of the caller's), and returns
// the wait they allow for a turn (0 when unbounded or none).
func withAdmission(create, caller context.Context) (context.Context, time.Duration) {
	w, _ := caller.Value(waitForTurnKey{}).(bool)
	terms := admission.Terms{Caller: caller, Run: runTimeout(caller), Wait: w}
	allow, _ := terms.Allowance(time.Now())
	return context.WithValue(create, admissionKey{}, terms), max(allow, 0)
}

// newTabQueue is the admission queue of the local browser's tab openings,
// whose refusals are [*BusyError]s.
func newTabQueue(slots int) *admission.Queue {
	return admission.New(slots, func(b admission.Busy) error { e := BusyError(b); return &e })
}
