package sessions

import (
	"context"
	"errors"
	"sync"
)

// ErrNotOpen is Acquire's error when it may not create the session and
// none is open.
var ErrNotOpen = errors.New("sessions: the session is not open")

// Life is the router's side of its cache: the mutex that guards it, and
// what a session's use and end are. The functions marked so are called
// with Mu held.
type Life[E any] struct {
	Mu     sync.Locker
	Closed func() bool // with Mu held: the router is closed
	Reap   func()      // with Mu held: the idle reaper runs from now on
	Live   func(E) bool
	Hold   func(E) // with Mu held: a call holds e from now on
	Free   func()  // room under the caps may have come
	End    func(E) error
	Gone   func(ctx context.Context, e E) // e's browser died under it
	// ErrClosed is the error of a call on a closed router.
	ErrClosed error
}

// Held is the live session of key, held, when there is one: Acquire's
// first step, with no creation to allocate for the session every call
// after the first finds.
func (c *Cache[E]) Held(l *Life[E], key string) (E, bool) {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	e, ok := c.M[key]
	if !ok || l.Closed() || !l.Live(e) {
		var none E
		return none, false
	}
	l.Reap()
	l.Hold(e)
	return e, true
}

// Acquire returns the live session of key, held, creating it once however
// many callers ask at the same time: create runs once for all of them, on
// its own, with the creation marked in InFlight and counted in WG, and
// stores the session itself. A failed creation caches nothing, so the next
// call starts afresh. A session whose browser died is dropped, and made
// anew. With create nil, only the open session will do: without one,
// Acquire fails with ErrNotOpen.
func (c *Cache[E]) Acquire(ctx context.Context, l *Life[E], key string, create func(mark *Creation) (E, error)) (E, error) {
	var none E
	for {
		l.Mu.Lock()
		if l.Closed() {
			l.Mu.Unlock()
			return none, l.ErrClosed
		}
		l.Reap()
		e, ok := c.M[key]
		if ok && l.Live(e) {
			l.Hold(e)
			l.Mu.Unlock()
			return e, nil
		}
		if ok {
			// The browser died under a cached session: drop it so this
			// call makes a new one instead of failing on it forever.
			delete(c.M, key)
			c.WG.Add(1) // Close waits for this release too
			l.Mu.Unlock()
			l.Free()
			l.Gone(ctx, e)
			_ = l.End(e)
			c.WG.Done()
			continue
		}
		if create == nil {
			// Only an open session will do: under Mu, so no release can
			// come between the look and the hold.
			l.Mu.Unlock()
			return none, ErrNotOpen
		}
		l.Mu.Unlock()

		ch := c.Creating.DoChan(key, func() (any, error) {
			// Counted under Mu after the closed check, so Close waits for
			// every creation it did not prevent.
			l.Mu.Lock()
			if l.Closed() {
				l.Mu.Unlock()
				return nil, l.ErrClosed
			}
			c.WG.Add(1)
			mark := &Creation{}
			c.InFlight[key] = mark
			l.Mu.Unlock()
			defer c.WG.Done()
			defer func() {
				l.Mu.Lock()
				delete(c.InFlight, key)
				l.Mu.Unlock()
				l.Free()
			}()
			e, err := create(mark)
			if err != nil {
				return nil, err
			}
			return e, nil
		})
		if _, err := Await[E](ctx, ch); err != nil {
			return none, err
		}
		// Loop to take the entry under the lock, which also re-checks
		// that it did not die or get reaped in between.
	}
}

// Release takes the sessions of keys out of the cache (a creation in
// flight is marked released: it ends once made), forgets what else the
// router keeps of them (forget, with Mu held), and ends them, each
// release counted in WG so that a Close that comes meanwhile waits for it.
func (c *Cache[E]) Release(l *Life[E], forget func(), keys ...string) error {
	l.Mu.Lock()
	es := c.Take(keys...)
	forget()
	for _, k := range keys {
		c.Evicted.Take(k)
	}
	c.WG.Add(len(es))
	l.Mu.Unlock()
	if len(es) > 0 {
		l.Free()
	}
	var errs []error
	for _, e := range es {
		errs = append(errs, l.End(e))
		c.WG.Done()
	}
	return errors.Join(errs...)
}

// CloseParallel bounds the releases Close runs at once.
const CloseParallel = 16

// Close takes every session out of the cache and stops the reaper; then,
// first runs (what must go before the sessions: the router's life, so that
// creations in flight give back what they made, and the local browser),
// ends the sessions side by side (EndAll: Close takes about one release's
// time, not one per session), and waits for the background work: the
// guards end with their tabs, the reaper with its stop, the creations
// with the router's life.
func (c *Cache[E]) Close(l *Life[E], first func() error) error {
	l.Mu.Lock()
	es := c.TakeIf(func(E) bool { return true })
	c.StopReaper()
	l.Mu.Unlock()
	err := first()
	errs := append(EndAll(es, CloseParallel, l.End), err)
	c.WG.Wait()
	return errors.Join(errs...)
}
