package hybroute

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hybroute/hybroute/internal/admission"
	"github.com/hybroute/hybroute/internal/browsertab"
	"github.com/hybroute/hybroute/internal/config"
	"github.com/hybroute/hybroute/internal/egress"
	"github.com/hybroute/hybroute/internal/floor"
	"github.com/hybroute/hybroute/internal/guard"
	"github.com/hybroute/hybroute/internal/outage"
	"github.com/hybroute/hybroute/internal/profiles"
	"github.com/hybroute/hybroute/internal/sessions"
	sc "github.com/hybroute/hybroute/internal/sidecar"
	"github.com/hybroute/hybroute/internal/teardown"
	"github.com/hybroute/hybroute/provider"
	"github.com/hybroute/hybroute/route"
)

// entry is one cached session: one cache key, one tab. It holds what the
// Router decides of the session (its key, route and fallback, its
// teardown, its use, the guard's session and the call's scope); the tab and
// the tab layer's records are its handle's (internal/browsertab).
type entry struct {
	key      string
	route    route.Route // the browser its calls run on: route.Local for a fallback, whatever the plan said
	fallback bool
	// fallbackAccount is the key-free account of why a fallback runs
	// locally, for the caller (Result.FallbackReason).
	fallbackAccount string
	// fallbackLabel is the bounded name of that cause, for the metrics
	// and traces (internal/telemetry's fallback reasons).
	fallbackLabel string
	// cloud is the provider's session a cloud entry runs on (its live
	// view, replay and expiry for Status); nil otherwise.
	cloud *provider.Session
	// h is the tab and what the tab layer records of it (its dialogs,
	// pages, origins, whether to probe it first); the entry lends it to
	// the call that holds callMu.
	h        *browsertab.Handle
	released atomic.Bool     // Release, the reaper or Close ended it; calls on it get ErrReleased
	ending   teardown.Steps  // the steps that end the session, once, in order (internal/teardown)
	guard    floor.CallScope // the scope of the running call: its answers, what the guard refused (internal/floor)
	gs       guard.Session   // the session as the guard knows it: its tab, name answers and refusals
	bg       *guard.Guard    // the guard of the tab's browser (internal/guard)

	callMu   sync.Mutex   // one call at a time drives a tab
	inUse    atomic.Int32 // calls holding the entry; the reaper skips it
	lastUsed atomic.Int64 // unix nanoseconds

	roomWaited atomic.Int64 // how long its creation waited for room, until the first call reports it
}

// landedURL is where the main frame of the tab calls run in is. One owner
// keeps it for each kind of tab: the browser's guard, from the events of
// every page (internal/guard), and for a session without CDP, its handle,
// from what the server last reported (restpage.go). A page not seen to
// navigate is on about:blank, where a new tab starts.
func (e *entry) landedURL() string {
	if u, ok := e.h.Landed(); ok {
		return u
	}
	if e.bg != nil {
		if u, ok := e.bg.Landed(e.frontID()); ok {
			return u
		}
	}
	return "about:blank"
}

func (e *entry) touch() { e.lastUsed.Store(time.Now().UnixNano()) }

// letGo ends a hold on e (inUse), and tells the sessions waiting for room
// when e is idle now.
func (r *Router) letGo(e *entry) {
	if e.inUse.Add(-1) == 0 {
		r.room.Free()
	}
}

// errReleasedWhileCreating is what the callers waiting on a creation get
// when the session was released before it was ready.
var errReleasedWhileCreating = fmt.Errorf("%w while it was being created", ErrReleased)

// end releases the session for good on a context of its own (the caller's
// may be over: Close, a deadline), so what a provider made is always given
// back. Calls still on it fail with ErrReleased.
func (e *entry) end() error {
	e.released.Store(true)
	defer e.h.Pages.StopAll()
	ctx, cancel := context.WithTimeout(context.Background(), teardown.ReleaseTimeout)
	defer cancel()
	return e.ending.Run(ctx)
}

// acquire returns the live session of the plan's cache key, held,
// creating it once however many callers ask at the same time
// (internal/sessions' Acquire). A failed creation caches nothing, so the
// next call starts afresh.
func (r *Router) acquire(ctx context.Context, p Plan) (*entry, error) {
	if e, ok := r.sess.Held(r.owner, p.CacheKey); ok {
		return e, nil
	}
	if p.openOnly {
		e, err := r.sess.Acquire(ctx, r.owner, p.CacheKey, nil)
		if errors.Is(err, sessions.ErrNotOpen) {
			return nil, fmt.Errorf("%w: it is not open any more, and this call may not open it again", ErrReleased)
		}
		return e, err
	}
	return r.sess.Acquire(ctx, r.owner, p.CacheKey, func(mark *sessions.Creation) (*entry, error) { return r.open(ctx, p, mark) })
}

// newOwner is the router's side of its session cache.
func (r *Router) newOwner() *sessions.Life[*entry] {
	return &sessions.Life[*entry]{Mu: &r.mu, Closed: func() bool { return r.closed }, Reap: r.startReaper,
		Live: func(e *entry) bool { return !e.h.Dead() }, Hold: func(e *entry) { e.inUse.Add(1) },
		Free: r.room.Free, End: (*entry).end, ErrClosed: ErrClosed,
		Gone: func(ctx context.Context, e *entry) {
			r.log.LogAttrs(ctx, slog.LevelWarn, "hybroute: browser of cached session is gone; recreating",
				slog.String("cache_key", e.key), slog.String("route", e.route.String()))
		}}
}

// open makes the session of a plan for acquire, which marked its
// creation (mark), and stores it.
func (r *Router) open(ctx context.Context, p Plan, mark *sessions.Creation) (*entry, error) {
	// The creation outlives a caller that gives up, so the others
	// waiting on it are not failed by one caller's deadline; Close
	// ends it, after a grace that lets a provider's answer arrive
	// (a session it made is then released, not left running). The
	// first caller's deadline only shapes how long the provider may
	// take before the floor is tried.
	timeout := r.cfg.CreateTimeout
	if p.Route == route.Local {
		timeout = r.cfg.LocalTimeout
	}
	budget := outage.Budget(ctx, timeout)
	// The caller's terms for the wait for a turn at the local
	// browser go along (internal/admission), and the wait they allow
	// is not taken from the opening's own bound.
	actx, queue := admission.ForCreation(context.WithoutCancel(ctx), ctx)
	grace := time.Duration(0)
	if p.Route == route.Cloud && !r.pol.Override {
		grace = closeGrace
	}
	cctx, cancel := sessions.Bound(actx, timeout+queue, r.life, grace)
	defer cancel()
	sctx, span := r.tel.Tracer.Start(cctx, "hybroute.session.create",
		trace.WithAttributes(attribute.String("hybroute.cache_key", p.CacheKey)))
	waited, err := r.bounds.MakeRoom(sctx, p.CacheKey, p.Route == route.Local)
	if err != nil {
		r.endAcquire(span, nil, err)
		return nil, err
	}
	started := time.Now()
	e, err := r.create(sctx, p, budget)
	r.endAcquire(span, e, err)
	if err != nil {
		return nil, err
	}
	r.tel.Created(sctx, e.route.String(), e.fallback, started)
	w, err := r.armTab(e)
	if err != nil {
		_ = e.end()
		return nil, fmt.Errorf("hybroute: enabling the request guard: %w", e.h.WrapErr(err))
	}
	if err := r.startState(sctx, e); err != nil {
		_ = e.end()
		w.Ended()
		return nil, err
	}
	r.mu.Lock()
	closed, released := r.closed, mark.Released
	if closed || released {
		r.mu.Unlock()
		_ = e.end()
		w.Ended()
		if released {
			return nil, errReleasedWhileCreating
		}
		return nil, ErrClosed
	}
	e.touch()
	e.roomWaited.Store(int64(waited))
	e.ending.Add(teardown.Count, r.tel.SessionOpened(cctx, e.route.String())) // counted open while the cache holds it
	r.sess.M[p.CacheKey] = e
	// Started under mu after the closed check, so Close's Wait
	// cannot miss them.
	w.Start(&r.sess.WG, r.closed)
	r.mu.Unlock()
	return e, nil
}

// create makes the session a plan needs. budget bounds the provider's part.
func (r *Router) create(ctx context.Context, p Plan, budget time.Duration) (*entry, error) {
	switch {
	case p.Route == route.Local:
		return r.localEntry(ctx, p.CacheKey, route.Local)
	case r.pol.Override:
		return r.overrideEntry(ctx, p.CacheKey)
	}
	return r.cloud.Open(ctx, p.CacheKey, budget)
}

// localEntry is a session on the sidecar. The no-provider path, the hybrid
// ::local path and the fallback all come through here: the local endpoint
// is resolved one way only.
func (r *Router) localEntry(ctx context.Context, key string, route route.Route) (*entry, error) {
	lt, err := r.side.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	if r.profiles != nil {
		if err := r.profiles.Restore(ctx, profileTab(lt), key); err != nil {
			_ = lt.Close()
			return nil, err
		}
	}
	e := &entry{key: key, route: route, h: browsertab.NewHandle(lt)}
	if r.profiles != nil {
		e.ending.Add(teardown.Tab, func(context.Context) error { return r.profiles.Release(profileTab(lt)) })
	}
	e.ending.Add(teardown.Tab, func(context.Context) error { return lt.Close() })
	return e, nil
}

// startReaper starts the inactivity reaper once. Called under r.mu.
func (r *Router) startReaper() {
	r.sess.StartReaper(r.cfg.ReapInterval, func(now time.Time) { r.reapIdle(now) })
}

// reapIdle releases the sessions idle longer than the idle timeout, and the
// ones whose browser died.
func (r *Router) reapIdle(now time.Time) int {
	r.mu.Lock()
	// A sticky route outlives its sessions only as long as a session
	// would: after that, the key starts afresh, and memory stays bound.
	r.routes.ForgetIdle(now.Add(-r.cfg.IdleTimeout).UnixNano(), func(k string) bool {
		return r.sess.M[k] != nil || r.sess.M[k+LocalSuffix] != nil
	})
	idle := r.sess.TakeIf(func(e *entry) bool {
		return e.inUse.Load() == 0 && (e.h.Dead() || now.Sub(time.Unix(0, e.lastUsed.Load())) > r.cfg.IdleTimeout)
	})
	r.mu.Unlock()
	if len(idle) > 0 {
		r.room.Free()
	}
	if r.cfg.MaxLocalMemory > 0 {
		_ = r.bounds.Shed(context.Background(), false)
	}
	for _, e := range idle {
		if err := e.end(); err != nil {
			r.log.LogAttrs(context.Background(), slog.LevelWarn, "hybroute: releasing idle session",
				slog.String("cache_key", e.key), slog.String("route", e.route.String()), slog.String("error", err.Error()))
		} else {
			r.log.LogAttrs(context.Background(), slog.LevelDebug, "hybroute: released idle session",
				slog.String("cache_key", e.key), slog.String("route", e.route.String()))
		}
	}
	return len(idle)
}

// Release ends the sessions of sessionKey (its cloud session and its
// sidecar session) now, rather than waiting for the reaper. Its next call
// starts fresh sessions; a call still running on them fails with
// [ErrReleased]. A session being created is released as soon as it is
// made. The release runs on a context of its own, bounded, so a session a
// provider made is given back even when ctx is already over.
func (r *Router) Release(ctx context.Context, sessionKey string) error {
	key, err := normalizeKey(sessionKey)
	if err != nil {
		return err
	}
	return r.sess.Release(r.owner, func() { r.routes.Delete(key); r.states.Forget(key) }, key, key+LocalSuffix)
}

// closeSessions releases every session (internal/sessions' Close) and
// waits for the background work.
func (r *Router) closeSessions() error {
	err := r.sess.Close(r.owner, func() error {
		r.endLife() // creations in flight stop and give back what they made
		// The sidecar first: its tabs go with its Chromium, so their
		// releases ask nothing of a browser that is going anyway (a busy
		// one would fail Close with a dispose that timed out).
		if r.profiles != nil {
			r.profiles.SaveAll() // before the browser contexts go with the Chromium
		}
		return r.side.Close()
	})
	if c, ok := r.provider.(idleCloser); ok {
		c.CloseIdleConnections()
	}
	return err
}

// closeGrace is how long Close lets a provider call in flight finish, so
// the session it makes is released rather than left running unseen.
const closeGrace = 2 * time.Second

// idleCloser is a provider whose HTTP client keeps idle connections: Close
// closes them, so nothing of the router outlives it.
type idleCloser interface{ CloseIdleConnections() }

// profileTab is a local tab as its profile knows it.
func profileTab(lt *sc.Tab) profiles.Tab {
	return profiles.Tab{Proc: lt.Proc(), Context: lt.BrowserContextID()}
}

// newBounds keeps the router's sessions within WithMaxSessions and
// WithMaxLocalMemory: a new session first ends the least recently used
// idle ones, or waits for room (internal/sessions' Bounds says how);
// Result.Evicted and Result.WaitedForRoom tell the caller.
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

// The local Chromium's process lives in internal/sidecar. What it needs of
// the router comes through its sc.Config: the options it reads, the guard
// and the egress proxy of each process it starts, both deciding with the
// router's policy on the local browser, and the turn to open a tab
// (internal/admission). The sidecar holds no rule and no config of the router's.

// maxTabsAtOnce bounds the new tabs the sidecar makes at the same time.
const maxTabsAtOnce = 4

// newSidecar makes the sidecar of a router with cfg, whose local browser
// decides with pol; observe (nil: none) records each tab opening's wait
// for its turn. It starts nothing; the first open starts Chromium.
func newSidecar(cfg *config.Config, pol *floor.Policy, observe func(waited time.Duration, err error)) *sc.Sidecar {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tabs := newTabQueue(maxTabsAtOnce) // the rest wait in turn
	return sc.New(sc.Config{
		Guard: func() *guard.Guard { return floor.NewGuard(pol, log, route.Local) },
		Egress: func(ctx context.Context) (*egress.Proxy, error) {
			return floor.StartEgress(ctx, pol, cfg.EgressDialer, log)
		},
		Turn: tabs.Turn(observe),
		// A spare's making counts in the queue's estimate: its first
		// estimate comes from the spare made at start, before a burst of
		// sessions asks.
		Opened:         tabs.Sample,
		Path:           cfg.ChromiumPath,
		Flags:          cfg.ChromiumFlags,
		ViewportWidth:  cfg.ViewportW,
		ViewportHeight: cfg.ViewportH,
		NoChromium:     ErrNoChromium,
		Dead:           errLocalDead,
		Log:            log,
	})
}

// newTabQueue is the admission queue of the local browser's tab openings,
// whose refusals are [*BusyError]s.
func newTabQueue(slots int) *admission.Queue {
	return admission.New(slots, func(b admission.Busy) error {
		return &BusyError{Ahead: b.Ahead, Waited: b.Waited, Estimate: b.Estimate, Budget: b.Budget}
	})
}
