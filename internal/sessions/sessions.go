// Package sessions is the mechanics of a router's cache of live sessions:
// the map by cache key, the creations not yet stored, the keys whose
// session was evicted, the shared creation of a key (Acquire), the
// background work Close waits for, the idle reaper's loop, a key's
// release, the parallel end at Close, and the caps on the sessions and on
// the local browser's memory (Bounds). What a session is, and how one is
// made or ended, is the router's: the cache is generic over its entry, and
// asks of it through functions, under the router's mutex (Life).
package sessions

import (
	"context"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/hybroute/hybroute/internal/admission"
)

// Cache is the live sessions, keyed by cache key. Its maps and the
// reaper's state are guarded by the router's mutex: the methods that say
// so are called with it held.
type Cache[E any] struct {
	M        map[string]E         // the live sessions
	InFlight map[string]*Creation // creations not yet stored
	Evicted  admission.Evicted    // keys whose session was evicted, until their next call
	Creating singleflight.Group   // one creation per key, however many callers ask
	WG       sync.WaitGroup       // background work: the reaper, creations, guards
	stop     chan struct{}        // ends the reaper
	started  bool                 // the reaper runs
	// releases counts Take's calls; takenAt is the count at which each
	// key was last taken, so that a call can tell whether its key was
	// released while it ran (ReleasedSince), whichever session it was on.
	releases atomic.Uint64
	takenAt  map[string]uint64
}

// New is an empty cache.
func New[E any]() *Cache[E] {
	return &Cache[E]{M: make(map[string]E), InFlight: make(map[string]*Creation)}
}

// Creation marks a session being created, so a release that comes before
// it is stored is not lost. Its fields are guarded by the router's mutex.
type Creation struct {
	Released bool
	// Admitted: the creation has made room under the router's caps and
	// counts as an open session; one still waiting for room does not.
	Admitted bool
}

// StartReaper starts sweep every interval, once, until StopReaper; the
// loop runs in WG. Called with the mutex held.
func (c *Cache[E]) StartReaper(every time.Duration, sweep func(now time.Time)) {
	if c.started {
		return
	}
	c.started = true
	c.stop = make(chan struct{})
	stop := c.stop
	c.WG.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				sweep(now)
			}
		}
	})
}

// StopReaper ends the reaper's loop, if it runs. Called with the mutex
// held, once.
func (c *Cache[E]) StopReaper() {
	if c.started {
		close(c.stop)
	}
}

// Take removes the sessions of keys from the cache and returns them, and
// marks their creations in flight released. Called with the mutex held.
func (c *Cache[E]) Take(keys ...string) []E {
	n := c.releases.Add(1)
	if c.takenAt == nil {
		c.takenAt = make(map[string]uint64)
	}
	if len(c.takenAt) >= maxTakenKept {
		// A call that outlived this many releases is told its own by
		// its session, not by the count.
		for k, at := range c.takenAt {
			if at+maxTakenKept/4 < n {
				delete(c.takenAt, k)
			}
		}
	}
	var es []E
	for _, k := range keys {
		c.takenAt[k] = n
		if cr := c.InFlight[k]; cr != nil {
			cr.Released = true
		}
		if e, ok := c.M[k]; ok {
			delete(c.M, k)
			es = append(es, e)
		}
	}
	return es
}

// maxTakenKept bounds the keys whose last release the cache remembers.
const maxTakenKept = 4096

// Releases is the count of releases so far: a call takes it as it starts,
// for ReleasedSince. It takes no lock.
func (c *Cache[E]) Releases() uint64 { return c.releases.Load() }

// ReleasedSince reports whether key was released after the count since
// was taken: a call that started then and failed was cut short by the
// release, even one that had not reached the session yet (it was making a
// new one while the release ended the old). Called with the mutex held.
func (c *Cache[E]) ReleasedSince(key string, since uint64) bool {
	return c.takenAt[key] > since
}

// Of are the sessions of keys that ok accepts, in the order of keys.
// Called with the mutex held.
func (c *Cache[E]) Of(ok func(E) bool, keys ...string) []E {
	var es []E
	for _, k := range keys {
		if e, found := c.M[k]; found && ok(e) {
			es = append(es, e)
		}
	}
	return es
}

// EvictLRU takes the least recently used idle session (idle says when it
// was last used, and whether it may go) out of the cache, marks its key
// evicted and counts its release in WG; false when there is none. Called
// with the mutex held.
func (c *Cache[E]) EvictLRU(key func(E) string, idle func(E) (lastUsed int64, ok bool)) (E, bool) {
	victim, found := admission.LeastRecent(maps.Values(c.M), idle)
	if found {
		delete(c.M, key(victim))
		c.Evicted.Mark(key(victim))
		c.WG.Add(1) // Close waits for its release
	}
	return victim, found
}

// TakeIf removes the sessions ok chooses from the cache and returns them.
// Called with the mutex held.
func (c *Cache[E]) TakeIf(ok func(E) bool) []E {
	var es []E
	for k, e := range c.M {
		if ok(e) {
			delete(c.M, k)
			es = append(es, e)
		}
	}
	return es
}

// EndAll ends es side by side, at most n at once, and returns the error
// of each: ending takes about one end's time, not one per session.
func EndAll[E any](es []E, n int, end func(E) error) []error {
	errs := make([]error, len(es))
	var wg sync.WaitGroup
	sem := make(chan struct{}, n)
	for i, e := range es {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = end(e)
		})
	}
	wg.Wait()
	return errs
}

// Bound is the context a creation runs under: d bounds it, and the end of
// life (the router's, at Close) ends it after grace, which lets a
// provider's answer arrive so that a session it made is released, not
// left running. cancel releases it.
func Bound(ctx context.Context, d time.Duration, life context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	cctx, cancel := context.WithTimeout(ctx, d)
	stop := context.AfterFunc(life, func() {
		t := time.AfterFunc(grace, cancel)
		context.AfterFunc(cctx, func() { t.Stop() })
	})
	return cctx, func() { stop(); cancel() }
}

// Await waits for the result of a creation shared through singleflight, on
// behalf of one caller. A caller that gives up returns at once; the
// creation goes on for the others (its context is not the caller's), and
// Close ends it.
func Await[T any](ctx context.Context, ch <-chan singleflight.Result) (T, error) {
	select {
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	case res := <-ch:
		if res.Err != nil {
			var zero T
			return zero, res.Err
		}
		return res.Val.(T), nil
	}
}
