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
// past either first ends the least recently used idle sessions; when none
// is idle, it is refused with [ErrBusy]. The evicted session's next call
// starts a fresh session, and its [Result] says so (Result.Evicted).

// WithMaxSessions caps the sessions the router keeps open at once, cloud
// and local, sessions being created included (default 0: no cap). A new
// session past the cap ends the least recently used idle one; when every
// session is running a call, the new one fails with [ErrBusy].
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
// first; when none is idle, it fails with [ErrBusy]. The idle reaper also
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
// caps. It runs in the session's creation, which is counted in inFlight.
func (r *Router) makeRoom(ctx context.Context, p Plan) error {
	if n := r.cfg.MaxSessions; n > 0 {
		for {
			r.mu.Lock()
			open := len(r.sess.M) + len(r.sess.InFlight) - 1 // this creation is in inFlight
			if open < n {
				r.mu.Unlock()
				break
			}
			victim := r.evictLRU(func(*entry) bool { return true })
			r.mu.Unlock()
			if victim == nil {
				return fmt.Errorf("%w: %d sessions are open, the most WithMaxSessions allows, and none is idle", ErrBusy, open)
			}
			r.endEvicted(ctx, victim, evictMaxSessions)
		}
	}
	if p.Route != route.Local || r.cfg.MaxLocalMemory <= 0 {
		return nil
	}
	return r.shedMemory(ctx, true)
}

// shedMemory ends idle local sessions while the local browser's memory is
// over its budget, least recently used first, freeing about what the
// excess is worth. needRoom says a new session waits for room: then no
// idle session to end means ErrBusy.
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
