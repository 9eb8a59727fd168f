package sessions

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hybroute/hybroute/internal/admission"
)

// Bounded sessions. A client that goes away without releasing its session
// leaves a browser context (tens of megabytes of Chromium) until the idle
// timeout. With a cap on the sessions or on the local browser's memory, a
// new session that would go past either first ends the least recently
// used idle sessions. When none is idle, every session being in a call, it
// waits for one to become idle or end, within the wait for a turn its call
// allows (the caller's deadline less its run's budget), and is refused
// with a busy error only when that wait runs out, or at once when it
// cannot serve: the call allows none, or the calls' measured time
// foresees a longer one (unless the call waits for its turn). Past the cap
// on the sessions, only a session idle for a second (EvictGrace) is ended:
// a client between two calls keeps its session. The evicted session's
// next call starts a fresh session, and its result says so.

// Eviction reasons, the reason attribute of hybroute.sessions.evicted.
const (
	EvictMaxSessions = "max_sessions"
	EvictMaxMemory   = "max_local_memory"
)

// EvictGrace is how long a session must have been idle before a new
// session past the cap on the sessions ends it: a client between two calls
// of its work (a navigation, then a snapshot) is not cut off in the gap,
// only a session left idle. A new session waits for it like for a call's
// end.
const EvictGrace = time.Second

// Bounds keeps a cache within its caps. The cache and its entries are the
// router's: Bounds asks of them through its functions, under the router's
// mutex (Mu), and ends a session through End, without it.
type Bounds[E any] struct {
	Mu          sync.Locker // the router's mutex, which guards Cache
	Cache       *Cache[E]
	Room        *admission.Room
	MaxSessions int   // 0: no cap
	MaxMemory   int64 // bytes of the local browser; 0: no cap
	Key         func(E) string
	LastUsed    func(E) int64 // unix nanoseconds
	Idle        func(E) bool  // no call holds it
	Local       func(E) bool  // it runs on the local browser
	Memory      func() int64  // what the local browser uses; 0 when unknown
	Credit      func(freed int64)
	// End ends an evicted session for reason (EvictMaxSessions, EvictMaxMemory).
	End func(ctx context.Context, e E, reason string)
	// Busy is the error of a wait for room that cannot serve: under
	// MaxSessions (sessions set) or MaxMemory (memory set). ErrBusy is
	// what a shed that found no idle session wraps.
	Busy    func(b admission.Busy, sessions int, memory int64) error
	ErrBusy error
}

// MakeRoom ends idle sessions until a new session of key (local: on the
// local browser) fits the caps, waiting for one to become idle or end when
// none is (admission.Room), and returns how long it waited. It runs in the
// session's creation, which is counted in InFlight, on a context that
// carries the caller's terms.
func (b *Bounds[E]) MakeRoom(ctx context.Context, key string, local bool) (time.Duration, error) {
	terms := admission.TermsOf(ctx)
	var waited time.Duration
	if n := b.MaxSessions; n > 0 {
		w, err := b.Room.Wait(ctx, terms, n, func() (bool, time.Duration) { return b.roomForOne(ctx, key, n) }, func(a admission.Busy) error {
			return b.Busy(a, n, 0)
		})
		waited += w
		if err != nil {
			return waited, err
		}
	}
	if !local || b.MaxMemory <= 0 {
		return waited, nil
	}
	w, err := b.Room.Wait(ctx, terms, 1, func() (bool, time.Duration) { return b.Shed(ctx, true) == nil, 0 }, func(a admission.Busy) error {
		return b.Busy(a, 0, b.MaxMemory)
	})
	return waited + w, err
}

// roomForOne ends the least recently used idle sessions (idle for
// EvictGrace at least) until the creation of key fits n, and reports
// whether it does, counting it open from then on; otherwise, how soon an
// idle session will be old enough to end (0: none is idle). The open
// sessions are the live ones and the creations that made room before:
// not the ones still waiting.
func (b *Bounds[E]) roomForOne(ctx context.Context, key string, n int) (bool, time.Duration) {
	c := b.Cache
	for {
		b.Mu.Lock()
		open := len(c.M)
		for _, cr := range c.InFlight {
			if cr.Admitted {
				open++
			}
		}
		if open < n {
			if cr := c.InFlight[key]; cr != nil {
				cr.Admitted = true
			}
			b.Mu.Unlock()
			return true, 0
		}
		old := time.Now().Add(-EvictGrace).UnixNano()
		victim, found := b.evictLRU(func(e E) bool { return b.LastUsed(e) <= old })
		var again time.Duration
		if !found {
			for _, e := range c.M {
				if b.Idle(e) {
					if d := time.Duration(b.LastUsed(e) - old); again == 0 || d < again {
						again = max(d, time.Millisecond)
					}
				}
			}
		}
		b.Mu.Unlock()
		if !found {
			return false, again
		}
		b.end(ctx, victim, EvictMaxSessions)
	}
}

// Shed ends idle local sessions while the local browser's memory is over
// its budget, least recently used first, freeing about what the excess is
// worth. needRoom says a new session waits for room: then no idle session
// to end means ErrBusy (and nothing else fails).
func (b *Bounds[E]) Shed(ctx context.Context, needRoom bool) error {
	budget := b.MaxMemory
	used := b.Memory()
	if used == 0 {
		return nil
	}
	b.Mu.Lock()
	n := 0
	for _, e := range b.Cache.M {
		if b.Local(e) {
			n++
		}
	}
	shed, per := admission.MemoryShed(used, budget, n, needRoom)
	if shed == 0 {
		b.Mu.Unlock()
		return nil
	}
	var victims []E
	for range shed {
		v, found := b.evictLRU(b.Local)
		if !found {
			break
		}
		victims = append(victims, v)
	}
	b.Mu.Unlock()
	for _, v := range victims {
		b.end(ctx, v, EvictMaxMemory)
	}
	b.Credit(per * int64(len(victims)))
	if len(victims) == 0 && needRoom {
		return fmt.Errorf("%w: the local browser uses %d MiB, at or over its budget of %d MiB (WithMaxLocalMemory), and none of its sessions is idle",
			b.ErrBusy, used>>20, budget>>20)
	}
	return nil
}

// evictLRU takes the least recently used idle session that ok accepts out
// of the cache and marks its key evicted. Called with Mu held.
func (b *Bounds[E]) evictLRU(ok func(E) bool) (E, bool) {
	return b.Cache.EvictLRU(b.Key, func(e E) (int64, bool) {
		return b.LastUsed(e), b.Idle(e) && ok(e)
	})
}

// end ends an evicted session, whose release EvictLRU counted in WG.
func (b *Bounds[E]) end(ctx context.Context, e E, reason string) {
	defer b.Cache.WG.Done()
	b.End(ctx, e, reason)
}
