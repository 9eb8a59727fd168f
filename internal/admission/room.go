package admission

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Room is where a new session waits for room under a cap (the sessions',
// the local browser's memory) when every session is running a call: until
// one becomes idle, so that it can be ended, or ends, up to the wait its
// terms allow. A burst of short calls is then served within the wait
// rather than refused because every session was in a call at the instant
// it came. A session is refused at once when the wait cannot serve it:
// its terms allow none, or the calls' measured time foresees a longer
// one.
type Room struct {
	mu      sync.Mutex
	changed chan struct{} // closed by the next Free
	waiting int           // sessions waiting for room
	mean    time.Duration // moving mean of one call's hold on its session; 0 until one is seen
}

// Free tells the waiting sessions that one became idle or ended: each
// looks again.
func (r *Room) Free() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
}

// Held counts one call's hold on its session into the mean.
func (r *Room) Held(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mean = nextMean(r.mean, d)
}

// SetMean sets the measure of one call's hold, as a test of long calls
// does.
func (r *Room) SetMean(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mean = d
}

// Waiting is how many sessions wait for room.
func (r *Room) Waiting() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.waiting
}

// next is the channel the next Free closes.
func (r *Room) next() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.changed == nil {
		r.changed = make(chan struct{})
	}
	return r.changed
}

// Wait makes room for one new session: try makes it if it can (ending an
// idle session) and reports whether the session fits now, or else how
// soon to ask again with nothing freed (0: only when something is; an
// idle session too young to end ages). It is asked at once, and again
// each time a session becomes idle or ends, until the
// terms' allowance runs out or ctx ends; then, and at once when the wait
// cannot serve (the terms allow none, or, unless they say to wait, the
// mean call foresees a wait past the allowance with slots sessions ahead
// in turn), it fails with busy's error. It returns how long it waited.
func (r *Room) Wait(ctx context.Context, terms Terms, slots int, try func() (bool, time.Duration), busy func(Busy) error) (time.Duration, error) {
	start := time.Now()
	ch := r.next()
	ok, again := try()
	if ok {
		return 0, nil
	}
	allow, bounded := terms.Allowance(start)
	r.mu.Lock()
	ahead, mean := r.waiting, r.mean
	est := foresee(ahead, slots, mean)
	if bounded && (allow <= 0 || !terms.Wait && mean > 0 && est > allow) {
		r.mu.Unlock()
		if mean == 0 {
			est = 0
		}
		return 0, busy(Busy{Ahead: ahead, Estimate: est, Budget: max(allow, 0)})
	}
	r.waiting++
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.waiting--
		r.mu.Unlock()
	}()

	var timeout <-chan time.Time
	if bounded {
		timer := time.NewTimer(allow)
		defer timer.Stop()
		timeout = timer.C
	}
	for {
		if err := r.await(ctx, terms, ch, timeout, again, start, allow, busy); err != nil {
			return time.Since(start), err
		}
		ch = r.next()
		if ok, again = try(); ok {
			return time.Since(start), nil
		}
	}
}

// await waits for a change (ch), the retry after again (0: none), the end
// of the allowance (timeout), the caller's leaving or ctx's end; nil is a
// change or the retry.
func (r *Room) await(ctx context.Context, terms Terms, ch <-chan struct{}, timeout <-chan time.Time, again time.Duration,
	start time.Time, allow time.Duration, busy func(Busy) error) error {
	var retry <-chan time.Time
	if again > 0 {
		t := time.NewTimer(again)
		defer t.Stop()
		retry = t.C
	}
	var gone <-chan struct{}
	if terms.Caller != nil {
		gone = terms.Caller.Done()
	}
	select {
	case <-ch:
	case <-retry:
	case <-timeout:
		return busy(Busy{Waited: time.Since(start), Budget: allow})
	case <-gone:
		return terms.Caller.Err()
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			// The creation's own bound, which an unbounded wait has.
			return busy(Busy{Waited: time.Since(start), Budget: allow})
		}
		return ctx.Err()
	}
	return nil
}
