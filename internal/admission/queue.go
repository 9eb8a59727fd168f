// Package admission is the local browser's queue of tab openings. Opening
// a tab in a fresh browser context starts a renderer process and has the
// guard set the paused target up before it runs: on a small machine that
// is CPU-bound, about as many tabs per second at one at a time as at
// eight, so a burst of new sessions waits. It waits in a fair queue (first
// come, first served), and that wait is its own part of the call: it is
// measured apart from the page's time, it has its own budget, and a call
// that would wait past its budget is told at once that the browser is
// busy, unless its caller chose to wait. It also makes the choices of
// bounded sessions (evict.go): which idle session to end for room, and how
// many for the local browser's memory.
package admission

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// Terms are what a call's context says about its wait for a tab.
type Terms struct {
	Caller context.Context // the call's own context: its deadline, and whether its caller is gone
	Run    time.Duration   // the run's own budget (hybroute.RunTimeout), kept out of the wait's
	Wait   bool            // WaitForTurn: wait rather than be refused at once
}

// busyMargin is how much sooner than the caller's deadline a wait with no
// run budget gives up, so that the caller hears that the browser is busy rather
// than its own deadline.
const busyMargin = 500 * time.Millisecond

// Allowance is how long the terms let a call wait for its turn; ok is
// false when nothing bounds it.
func (a Terms) Allowance(now time.Time) (time.Duration, bool) {
	if a.Caller == nil {
		return 0, false
	}
	dl, ok := a.Caller.Deadline()
	if !ok {
		return 0, false
	}
	left := dl.Sub(now)
	if a.Run > 0 {
		return left - a.Run, true
	}
	return left - busyMargin, true
}

// Busy is what a refusal says: how many openings were queued ahead, how
// long the call waited (0: refused at once), the wait the queue foresaw (0:
// the call waited out its whole allowance) and what its budget allowed.
type Busy struct {
	Ahead    int
	Waited   time.Duration
	Estimate time.Duration
	Budget   time.Duration
}

// Queue lets at most slots tab openings run at once, and the rest wait
// their turn in arrival order.
type Queue struct {
	slots int
	busy  func(Busy) error // the error of a refusal

	mu      sync.Mutex
	running int
	waiting list.List     // of *turn, first come first
	mean    time.Duration // moving mean of one opening's time; 0 until one is seen
}

// turn is one waiting opening: granted closes when a slot passes to it,
// refused when the queue foresees that its wait will outlast its deadline.
type turn struct {
	granted chan struct{}
	refused chan error
	elem    *list.Element

	start    time.Time
	deadline time.Time // when its allowance ends; zero: unbounded, or the caller waits it out
	budget   time.Duration
}

// New is a queue of slots openings at once (at least one); busy makes the
// error of a refusal.
func New(slots int, busy func(Busy) error) *Queue {
	return &Queue{slots: max(slots, 1), busy: busy}
}

// estimate is the foreseen wait behind ahead queued openings, and the
// opening itself. Called with q.mu held.
func (q *Queue) estimate(ahead int) time.Duration {
	return foresee(ahead, q.slots, q.mean)
}

// foresee is the wait behind ahead others served slots at a time, each
// taking mean, and one's own turn.
func foresee(ahead, slots int, mean time.Duration) time.Duration {
	return time.Duration(ahead/max(slots, 1)+1) * mean
}

// nextMean is the moving mean after one more measure d (none when d <= 0):
// the first measure, then each new one weighing a quarter.
func nextMean(mean, d time.Duration) time.Duration {
	switch {
	case d <= 0:
		return mean
	case mean == 0:
		return d
	default:
		return (mean*3 + d) / 4
	}
}

// Turn is the wait of one opening for its turn, under the terms its
// context carries (ForCreation): what a browser asks before it opens a
// tab. observe, if not nil, records each wait.
func (q *Queue) Turn(observe func(waited time.Duration, err error)) func(ctx context.Context) (func(opened time.Duration), error) {
	return func(ctx context.Context) (func(opened time.Duration), error) {
		waited, done, err := q.Wait(ctx, TermsOf(ctx))
		if observe != nil {
			observe(waited, err)
		}
		return done, err
	}
}

// Wait takes a slot for one opening, in turn. It refuses at once with a
// refusal (busy) when the foreseen wait exceeds the terms' allowance (unless
// they say to wait), and gives up with one when the allowance runs out in
// the queue. It returns how long it waited; done gives the slot back.
func (q *Queue) Wait(ctx context.Context, terms Terms) (waited time.Duration, done func(opened time.Duration), err error) {
	start := time.Now()
	allow, bounded := terms.Allowance(start)
	q.mu.Lock()
	if q.running < q.slots && q.waiting.Len() == 0 {
		q.running++
		q.mu.Unlock()
		return 0, q.done, nil
	}
	ahead := q.waiting.Len()
	if est := q.estimate(ahead); bounded && !terms.Wait && q.mean > 0 && est > allow {
		q.mu.Unlock()
		return 0, nil, q.busy(Busy{Ahead: ahead, Estimate: est, Budget: allow})
	}
	t := &turn{granted: make(chan struct{}), refused: make(chan error, 1), start: start, budget: allow}
	if bounded && !terms.Wait {
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
	if terms.Caller != nil {
		gone = terms.Caller.Done()
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
		why = terms.Caller.Err()
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
	return waited, nil, q.busy(Busy{Ahead: ahead, Waited: waited, Budget: allow})
}

// done gives a slot back, to the first waiting opening if there is one,
// and counts opened (0: no opening happened) into the mean.
func (q *Queue) done(opened time.Duration) {
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
func (q *Queue) count(opened time.Duration) { q.mean = nextMean(q.mean, opened) }

// Sample counts an opening made outside the queue (the sidecar's spare).
func (q *Queue) Sample(opened time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.count(opened)
	q.refuseLate(time.Now())
}

// refuseLate tells the waiting openings whose foreseen wait now outlasts
// their allowance that the browser is busy, at once rather than when the
// allowance ends: a burst arrives before the queue has measured an
// opening, and learns its fate from the first ones. Called with q.mu held.
func (q *Queue) refuseLate(now time.Time) {
	ahead := 0
	for e := q.waiting.Front(); e != nil; {
		next := e.Next()
		t := e.Value.(*turn)
		if est := q.estimate(ahead); !t.deadline.IsZero() && now.Add(est).After(t.deadline) {
			q.waiting.Remove(e)
			t.refused <- q.busy(Busy{Ahead: ahead, Waited: now.Sub(t.start), Estimate: est, Budget: t.budget})
		} else {
			ahead++
		}
		e = next
	}
}

// Queued is how many openings wait for a turn.
func (q *Queue) Queued() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.waiting.Len()
}

// SetMean sets the queue's measure of one opening's time, as a test of a
// slow or a fast browser does.
func (q *Queue) SetMean(d time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.mean = d
}
