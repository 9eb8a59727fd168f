package hybroute

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	sc "github.com/hybroute/hybroute/internal/sidecar"

	"github.com/hybroute/hybroute/internal/admission"
	"github.com/hybroute/hybroute/internal/config"
	"github.com/hybroute/hybroute/route"
)

// Bounded sessions. A client that goes away without releasing its session
// leaves a browser context (tens of megabytes of Chromium) until the idle
// timeout. With a cap on the sessions ([WithMaxSessions]) or on the local
// browser's memory ([WithMaxLocalMemory]), a new session that would go
// past either first ends the least recently used idle sessions. When none
// is idle, every session being in a call, it waits for one to become idle
// or end, within the wait for a turn its call allows (the caller's
// deadline less [RunTimeout]), and is refused with a [BusyError] only when
// that wait runs out, or at once when it cannot serve: the call allows
// none, or the calls' measured time foresees a longer one (unless
// [WaitForTurn]). Past WithMaxSessions, only a session idle for a second
// (evictGrace) is ended: a client between two calls keeps its session.
// Result.WaitedForRoom says how long it waited. The
// evicted session's next call starts a fresh session, and its [Result]
// says so (Result.Evicted).

// WithMaxSessions caps the sessions the router keeps open at once, cloud
// and local, sessions being created included (default 0: no cap). A new
// session past the cap ends the least recently used idle one; when every
// session is running a call, the new one waits for one to become idle or
// end, within its call's wait for a turn, and fails with [ErrBusy] when
// that wait would not serve it.
func WithMaxSessions(n int) Option {
	return func(c *config.Config) {
		if n >= 0 {
			c.MaxSessions = n
		}
	}
}

// WithMaxLocalMemory caps the memory of the local Chromium, in bytes: the
// proportional set size (PSS) of its processes, shared pages counted once
// (default 0: no cap). A new local session that finds the browser at or
// over the budget first ends idle local sessions, least recently used
// first; when none is idle, it waits as past [WithMaxSessions], and fails
// with [ErrBusy] when the wait would not serve it. The idle reaper also
// ends idle local sessions while the browser is over the budget. Linux
// only: elsewhere the memory is not measured and the option does nothing.
func WithMaxLocalMemory(bytes int64) Option {
	return func(c *config.Config) {
		if bytes >= 0 {
			c.MaxLocalMemory = bytes
		}
	}
}

// Eviction reasons, the reason attribute of hybroute.sessions.evicted.
const (
	evictMaxSessions = "max_sessions"
	evictMaxMemory   = "max_local_memory"
)

// makeRoom ends idle sessions until a new session of the plan fits the
// caps, waiting for one to become idle or end when none is (internal/admission's
// Room), and returns how long it waited. It runs in the session's
// creation, which is counted in inFlight, on a context that carries the
// caller's terms.
func (r *Router) makeRoom(ctx context.Context, p Plan) (time.Duration, error) {
	terms := admission.TermsOf(ctx)
	var waited time.Duration
	if n := r.cfg.MaxSessions; n > 0 {
		w, err := r.room.Wait(ctx, terms, n, func() (bool, time.Duration) { return r.roomForOne(ctx, p.CacheKey, n) }, func(b admission.Busy) error {
			return &BusyError{Sessions: n, Ahead: b.Ahead, Waited: b.Waited, Estimate: b.Estimate, Budget: b.Budget}
		})
		waited += w
		if err != nil {
			return waited, err
		}
	}
	if p.Route != route.Local || r.cfg.MaxLocalMemory <= 0 {
		return waited, nil
	}
	w, err := r.room.Wait(ctx, terms, 1, func() (bool, time.Duration) { return r.shedMemory(ctx, true) == nil, 0 }, func(b admission.Busy) error {
		return &BusyError{Memory: r.cfg.MaxLocalMemory, Ahead: b.Ahead, Waited: b.Waited, Estimate: b.Estimate, Budget: b.Budget}
	})
	return waited + w, err
}

// evictGrace is how long a session must have been idle before a new
// session past WithMaxSessions ends it: a client between two calls of its
// work (a navigation, then a snapshot) is not cut off in the gap, only a
// session left idle. A new session waits for it like for a call's end.
const evictGrace = time.Second

// roomForOne ends the least recently used idle sessions (idle for
// evictGrace at least) until the creation of key fits n, and reports
// whether it does, counting it open from then on; otherwise, how soon an
// idle session will be old enough to end (0: none is idle). The open
// sessions are the live ones and the creations that made room before:
// not the ones still waiting.
func (r *Router) roomForOne(ctx context.Context, key string, n int) (bool, time.Duration) {
	for {
		r.mu.Lock()
		open := len(r.sess.M)
		for _, c := range r.sess.InFlight {
			if c.Admitted {
				open++
			}
		}
		if open < n {
			if c := r.sess.InFlight[key]; c != nil {
				c.Admitted = true
			}
			r.mu.Unlock()
			return true, 0
		}
		old := time.Now().Add(-evictGrace).UnixNano()
		victim := r.evictLRU(func(e *entry) bool { return e.lastUsed.Load() <= old })
		var again time.Duration
		if victim == nil {
			for _, e := range r.sess.M {
				if e.inUse.Load() == 0 {
					if d := time.Duration(e.lastUsed.Load() - old); again == 0 || d < again {
						again = max(d, time.Millisecond)
					}
				}
			}
		}
		r.mu.Unlock()
		if victim == nil {
			return false, again
		}
		r.endEvicted(ctx, victim, evictMaxSessions)
	}
}

// shedMemory ends idle local sessions while the local browser's memory is
// over its budget, least recently used first, freeing about what the
// excess is worth. needRoom says a new session waits for room: then no
// idle session to end means ErrBusy (and nothing else fails).
func (r *Router) shedMemory(ctx context.Context, needRoom bool) error {
	budget := r.cfg.MaxLocalMemory
	used := r.side.Memory()
	if used == 0 {
		return nil
	}
	local := func(e *entry) bool { _, ok := e.h.Tab().(*sc.Tab); return ok }
	r.mu.Lock()
	n := 0
	for _, e := range r.sess.M {
		if local(e) {
			n++
		}
	}
	shed, per := admission.MemoryShed(used, budget, n, needRoom)
	if shed == 0 {
		r.mu.Unlock()
		return nil
	}
	var victims []*entry
	for range shed {
		v := r.evictLRU(local)
		if v == nil {
			break
		}
		victims = append(victims, v)
	}
	r.mu.Unlock()
	for _, v := range victims {
		r.endEvicted(ctx, v, evictMaxMemory)
	}
	r.side.Credit(per * int64(len(victims)))
	if len(victims) == 0 && needRoom {
		return fmt.Errorf("%w: the local browser uses %d MiB, at or over its budget of %d MiB (WithMaxLocalMemory), and none of its sessions is idle",
			ErrBusy, used>>20, budget>>20)
	}
	return nil
}

// evictLRU takes the least recently used idle session that ok accepts out
// of the cache and marks its key evicted; nil when there is none. Called
// with r.mu held.
func (r *Router) evictLRU(ok func(*entry) bool) *entry {
	victim, _ := r.sess.EvictLRU(func(e *entry) string { return e.key }, func(e *entry) (int64, bool) {
		return e.lastUsed.Load(), e.inUse.Load() == 0 && ok(e)
	})
	return victim
}

// endEvicted releases an evicted session.
func (r *Router) endEvicted(ctx context.Context, e *entry, reason string) {
	defer r.sess.WG.Done()
	idle := time.Since(time.Unix(0, e.lastUsed.Load())).Round(time.Second)
	err := e.end()
	r.tel.Evicted(ctx, reason)
	attrs := []slog.Attr{slog.String("cache_key", e.key), slog.String("route", e.route.String()),
		slog.String("reason", reason), slog.Duration("idle", idle)}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	r.log.LogAttrs(ctx, slog.LevelInfo, "hybroute: ended an idle session to make room", attrs...)
}

// takeEvicted reports, once, that key's previous session was evicted.
func (r *Router) takeEvicted(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sess.Evicted.Take(key)
}
