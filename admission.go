package hybroute

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// Admission to the local browser. Opening a tab in a fresh browser context
// starts a renderer process and has the guard set the paused target up
// before it runs: on a small machine that is CPU-bound, about as many tabs
// per second at one at a time as at eight, so a burst of new sessions
// waits. It waits in a fair queue (first come, first served), and that wait
// is its own part of the call: it is measured apart from the page's time,
// it has its own budget, and a call that would wait past its budget is told
// at once that the browser is busy ([ErrBusy]), unless its caller chose to
// wait ([WaitForTurn]).

// admissionKey carries a call's admission terms on its context.
type admissionKey struct{}

// admissionTerms are what a call's context says about its wait for a tab.
type admissionTerms struct {
	caller context.Context // the call's own context: its deadline, and whether its caller is gone
	run    time.Duration   // the run's own budget (WithRunTimeout), kept out of the wait's
	wait   bool            // WaitForTurn: wait rather than be refused at once
}

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
	terms := admissionTerms{caller: caller, run: runTimeout(caller), wait: w}
	allow, _ := terms.allowance(time.Now())
	return context.WithValue(create, admissionKey{}, terms), max(allow, 0)
}

// busyMargin is how much sooner than the caller's deadline a wait with no
// run budget gives up, so that the caller hears ErrBusy rather than its
// own deadline.
const busyMargin = 500 * time.Millisecond

// allowance is how long the terms let a call wait for its turn; ok is
// false when nothing bounds it.
func (a admissionTerms) allowance(now time.Time) (time.Duration, bool) {
	if a.caller == nil {
		return 0, false
	}
	dl, ok := a.caller.Deadline()
	if !ok {
		return 0, false
	}
	left := dl.Sub(now)
	if a.run > 0 {
		return left - a.run, true
	}
	return left - busyMargin, true
}

// tabQueue lets at most slots tab openings run at once, and the rest wait
// their turn in arrival order.
type tabQueue struct {
	slots int

	mu      sync.Mutex
	running int
	waiting list.List     // of *turn, first come first
	mean    time.Duration // moving mean of one opening's time; 0 until one is seen
}

// turn is one waiting opening: granted closes when a slot passes to it,
// refused when the queue foresees that its wait will outlast its deadline.
type turn struct {
	granted chan struct{}
	refused chan *BusyError
	elem    *list.Element

	start    time.Time
	deadline time.Time // when its allowance ends; zero: unbounded, or the caller waits it out
	budget   time.Duration
}

func newTabQueue(slots int) *tabQueue { return &tabQueue{slots: max(slots, 1)} }

// estimate is the foreseen wait behind ahead queued openings, and the
// opening itself. Called with q.mu held.
func (q *tabQueue) estimate(ahead int) time.Duration {
	return time.Duration(ahead/q.slots+1) * q.mean
}

// wait takes a slot for one opening, in turn. It refuses at once with a
// *BusyError when the foreseen wait exceeds the terms' allowance (unless
// they say to wait), and gives up with one when the allowance runs out in
// the queue. It returns how long it waited; done gives the slot back.
func (q *tabQueue) wait(ctx context.Context, terms admissionTerms) (waited time.Duration, done func(opened time.Duration), err error) {
	start := time.Now()
	allow, bounded := terms.allowance(start)
	q.mu.Lock()
	if q.running < q.slots && q.waiting.Len() == 0 {
		q.running++
		q.mu.Unlock()
		return 0, q.done, nil
	}
	ahead := q.waiting.Len()
	if est := q.estimate(ahead); bounded && !terms.wait && q.mean > 0 && est > allow {
		q.mu.Unlock()
		return 0, nil, &BusyError{Ahead: ahead, Estimate: est, Budget: allow}
	}
	t := &turn{granted: make(chan struct{}), refused: make(chan *BusyError, 1), start: start, budget: allow}
	if bounded && !terms.wait {
		t.deadline = start.Add(allow)
	}
	t.elem = q.waiting.PushBack(t)
	q.mu.Unlock()

	var timeout <-chan time.Time
	if bounded {
		timer := time.NewTimer(max(allow, 0))
		defer timer.Stop()
		timeout = timer.C
	}
	var gone <-chan struct{}
	if terms.caller != nil {
		gone = terms.caller.Done()
	}
	var why error
	select {
	case <-t.granted:
		return time.Since(start), q.done, nil
	case be := <-t.refused:
		return time.Since(start), nil, be
	case <-ctx.Done():
		why = ctx.Err()
	case <-gone:
		why = terms.caller.Err()
	case <-timeout:
	}
	ahead = 0
	q.mu.Lock()
	select {
	case <-t.granted:
		// The slot came as the wait ended: pass it on.
		q.mu.Unlock()
		q.done(0)
	case be := <-t.refused:
		// Refused as the wait ended: it has left the queue already.
		q.mu.Unlock()
		if why == nil {
			return time.Since(start), nil, be
		}
	default:
		for e := q.waiting.Front(); e != nil && e != t.elem; e = e.Next() {
			ahead++
		}
		q.waiting.Remove(t.elem)
		q.mu.Unlock()
	}
	waited = time.Since(start)
	if why != nil {
		return waited, nil, why
	}
	return waited, nil, &BusyError{Ahead: ahead, Waited: waited, Budget: allow}
}

// done gives a slot back, to the first waiting opening if there is one,
// and counts opened (0: no opening happened) into the mean.
func (q *tabQueue) done(opened time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.count(opened)
	if f := q.waiting.Front(); f != nil {
		t := q.waiting.Remove(f).(*turn)
		close(t.granted) // the slot passes on: running stays
	} else {
		q.running--
	}
	if opened > 0 {
		q.refuseLate(time.Now())
	}
}

// count adds one opening's time (0: none happened) to the moving mean.
// Called with q.mu held.
func (q *tabQueue) count(opened time.Duration) {
	switch {
	case opened <= 0:
	case q.mean == 0:
		q.mean = opened
	default:
		q.mean = (q.mean*3 + opened) / 4
	}
}

// sample counts an opening made outside the queue (the sidecar's spare).
func (q *tabQueue) sample(opened time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.count(opened)
	q.refuseLate(time.Now())
}

// refuseLate tells the waiting openings whose foreseen wait now outlasts
// their allowance that the browser is busy, at once rather than when the
// allowance ends: a burst arrives before the queue has measured an
// opening, and learns its fate from the first ones. Called with q.mu held.
func (q *tabQueue) refuseLate(now time.Time) {
	ahead := 0
	for e := q.waiting.Front(); e != nil; {
		next := e.Next()
		t := e.Value.(*turn)
		if est := q.estimate(ahead); !t.deadline.IsZero() && now.Add(est).After(t.deadline) {
			q.waiting.Remove(e)
			t.refused <- &BusyError{Ahead: ahead, Waited: now.Sub(t.start), Estimate: est, Budget: t.budget}
		} else {
			ahead++
		}
		e = next
	}
}

// queued is how many openings wait for a turn.
func (q *tabQueue) queued() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.waiting.Len()
}
