package hybroute

import (
	"context"
	"time"

	"github.com/hybroute/hybroute/internal/admission"
)

// admissionKey carries a call's admission terms on its context.
type admissionKey struct{}

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
