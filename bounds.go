package hybroute

import (
	"context"
	"log/slog"
	"time"

	sc "github.com/hybroute/hybroute/internal/sidecar"

	"github.com/hybroute/hybroute/internal/admission"
	"github.com/hybroute/hybroute/internal/config"
	"github.com/hybroute/hybroute/internal/sessions"
)

// Bounded sessions: past [WithMaxSessions] or [WithMaxLocalMemory], a new
// session first ends the least recently used idle ones, or waits for room
// (internal/sessions' Bounds says how); [Result.Evicted] and
// [Result.WaitedForRoom] tell the caller.

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

// newBounds keeps the router's sessions within WithMaxSessions and
// WithMaxLocalMemory (internal/sessions).
func (r *Router) newBounds() *sessions.Bounds[*entry] {
	return &sessions.Bounds[*entry]{Mu: &r.mu, Cache: r.sess, Room: &r.room,
		MaxSessions: r.cfg.MaxSessions, MaxMemory: r.cfg.MaxLocalMemory,
		Key:      func(e *entry) string { return e.key },
		LastUsed: func(e *entry) int64 { return e.lastUsed.Load() },
		Idle:     func(e *entry) bool { return e.inUse.Load() == 0 },
		Local:    func(e *entry) bool { _, ok := e.h.Tab().(*sc.Tab); return ok },
		Memory:   r.side.Memory, Credit: r.side.Credit, End: r.endEvicted, ErrBusy: ErrBusy,
		Busy: func(b admission.Busy, sessions int, memory int64) error {
			return &BusyError{Sessions: sessions, Memory: memory, Ahead: b.Ahead, Waited: b.Waited, Estimate: b.Estimate, Budget: b.Budget}
		},
	}
}

// endEvicted releases an evicted session.
func (r *Router) endEvicted(ctx context.Context, e *entry, reason string) {
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
