package hybroute

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The router's side of the [Store]: every call to a shared store is bounded
// by a short timeout, and a store that fails or is slow is replaced by the
// router's own in-process state until it answers again, with one warning
// per outage and one line when it is back. The provider's concurrency
// leases live here too.

const (
	// defaultStoreTimeout bounds one store call.
	defaultStoreTimeout = 500 * time.Millisecond
	// storeRetry is how long after a failed call the router stays on its
	// in-process state before it asks the store again, so that an outage
	// costs one timeout a second, not one per call.
	storeRetry = time.Second
	// defaultSlotTTL is a concurrency lease's life without renewal: a
	// replica that dies holds its slots this long at most. Leases are
	// renewed every third of it.
	defaultSlotTTL = 30 * time.Second
)

// fleet is the router's store, guarded.
type fleet struct {
	store    Store        // the configured store; local when none is
	local    *MemoryStore // the in-process state a failing store falls back to
	own      bool         // no store was configured: shared is local, nothing can fail
	timeout  time.Duration
	provider string
	log      *slog.Logger

	mu      sync.Mutex
	down    bool      // a store failure was logged and no success seen since
	retryAt time.Time // before this, the store is not asked

	// the concurrency cap (WithProviderConcurrency)
	limit  int
	ttl    time.Duration
	id     string // this router's part of every holder name
	seq    atomic.Uint64
	full   atomic.Bool  // the cap was logged as reached and no slot was taken since
	shared atomic.Int64 // leases this router holds in the shared store
	leases sync.Map     // holder -> *lease, the leases to renew
}

// lease is one concurrency slot a cloud session holds.
type lease struct {
	holder string
	// mu orders a renewal's store call against the release's: a renewal
	// adds a lease the store lost back, and must not add one just
	// released.
	mu       sync.Mutex
	local    bool // taken from the in-process state while the store was down
	released bool
}

// isLocal reports whether the lease is counted by the in-process state
// only: taken while the store was down, and not yet registered with it.
func (l *lease) isLocal() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.local
}

func newFleet(cfg *config, provider string, log *slog.Logger, tel *telemetry) *fleet {
	f := &fleet{
		store: cfg.store, local: &MemoryStore{}, timeout: cfg.storeTimeout,
		provider: provider, log: log,
		limit: cfg.providerConcurrency, ttl: cfg.slotTTL,
	}
	if f.store == nil {
		f.store, f.own = f.local, true
	} else {
		f.store = tracedStore{Store: f.store, tel: tel}
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	f.id = hex.EncodeToString(b[:])
	return f
}

// call runs one call on the shared store, bounded by the timeout. It
// returns false, having logged the failure (tracedStore counts it), when the store
// failed or is being given a rest: the caller then uses f.local.
func (f *fleet) call(ctx context.Context, op string, do func(ctx context.Context, s Store) error) bool {
	if f.own {
		_ = do(ctx, f.local)
		return true
	}
	f.mu.Lock()
	resting := f.down && time.Now().Before(f.retryAt)
	f.mu.Unlock()
	if resting {
		return false
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.timeout)
	err := do(sctx, f.store)
	cancel()
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		if f.down {
			f.down = false
			f.log.LogAttrs(ctx, slog.LevelInfo, "hybroute: store recovered; shared state in use again",
				slog.String("provider", f.provider))
		}
		return true
	}
	f.retryAt = time.Now().Add(storeRetry)
	if !f.down {
		f.down = true
		f.log.LogAttrs(ctx, slog.LevelWarn, "hybroute: store unreachable; using in-process state until it answers",
			slog.String("provider", f.provider), slog.String("op", op), slog.String("error", err.Error()))
	}
	return false
}

// acquireSlot takes a concurrency slot for a new cloud session, or reports
// that the cap is reached. With no cap it takes nothing and succeeds.
func (f *fleet) acquireSlot(ctx context.Context) (*lease, bool) {
	if f.limit <= 0 {
		return nil, true
	}
	// The store must count what this router holds before it is asked
	// for more: one that restarted empty would otherwise hand out the
	// slots of sessions still open.
	f.reassert(ctx)
	l := &lease{holder: f.id + "-" + strconv.FormatUint(f.seq.Add(1), 10)}
	var ok bool
	if !f.call(ctx, "acquire_slot", func(ctx context.Context, s Store) (err error) {
		ok, err = s.AcquireSlot(ctx, f.provider, l.holder, f.limit, f.ttl)
		return err
	}) {
		// The store is down: this process keeps to the cap on its own,
		// counting the shared slots it still holds.
		l.local = true
		if room := f.limit - int(f.shared.Load()); room > 0 {
			ok, _ = f.local.AcquireSlot(ctx, f.provider, l.holder, room, f.ttl)
		}
	}
	if !ok {
		if !f.full.Swap(true) {
			f.log.LogAttrs(ctx, slog.LevelWarn, "hybroute: provider concurrency limit reached; new sessions run on local Chromium",
				slog.String("provider", f.provider), slog.Int("limit", f.limit))
		}
		return nil, false
	}
	f.full.Store(false)
	if !l.local {
		f.shared.Add(1)
	}
	f.leases.Store(l.holder, l)
	return l, true
}

// release gives the slot back, once. A store that cannot be told lets the
// lease expire.
func (f *fleet) release(ctx context.Context, l *lease) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return
	}
	l.released = true
	f.leases.Delete(l.holder)
	if l.local {
		_ = f.local.ReleaseSlot(ctx, f.provider, l.holder)
		return
	}
	f.shared.Add(-1)
	f.call(ctx, "release_slot", func(ctx context.Context, s Store) error {
		return s.ReleaseSlot(ctx, f.provider, l.holder)
	})
}

// renew extends every lease this router holds, and registers again with
// the store every lease it no longer counts: one lost while the store was
// unreachable, or forgotten by a store that restarted empty or was
// flushed, and one taken from the in-process state during an outage. A
// lease comes back even past the cap: its session is open, in a caller's
// hands, and a store that does not count it would give its slot to a new
// session, so that the fleet would run over its cap for as long as the
// session lives. It reports how many leases the store had lost.
func (f *fleet) renew(ctx context.Context) int { return f.renewAll(ctx, 0) }

// renewAll is renew, with lost leases already found and registered again.
func (f *fleet) renewAll(ctx context.Context, lost int) int {
	f.leases.Range(func(_, v any) bool {
		if f.renewLease(ctx, v.(*lease)) {
			lost++
		}
		return true
	})
	if lost > 0 {
		f.log.LogAttrs(ctx, slog.LevelInfo, "hybroute: the store had lost slot leases of open sessions; registered them again",
			slog.String("provider", f.provider), slog.Int("leases", lost))
	}
	return lost
}

// renewLease renews one lease, registering it with the store if the store
// had lost it or never had it, and reports whether the store had lost it.
// With the store away, a lease of the in-process state is renewed there.
func (f *fleet) renewLease(ctx context.Context, l *lease) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return false
	}
	var had bool
	if !f.call(ctx, "renew_slot", func(ctx context.Context, s Store) (err error) {
		had, err = s.RenewSlot(ctx, f.provider, l.holder, f.ttl)
		return err
	}) {
		if l.local {
			_, _ = f.local.RenewSlot(ctx, f.provider, l.holder, f.ttl)
		}
		return false
	}
	if l.local {
		// The store counts it from now on.
		_ = f.local.ReleaseSlot(ctx, f.provider, l.holder)
		l.local = false
		f.shared.Add(1)
		return false
	}
	return !had
}

// reassert runs before a new slot is taken: it renews one lease this
// router holds, and if the store had lost it (a restart, a flush) or
// some lease was taken while the store was away, registers all of them
// again, so that the store counts this router's open sessions before it
// counts a new one. Other routers register theirs at their next renewal,
// within a third of a lease.
func (f *fleet) reassert(ctx context.Context) {
	var first *lease
	anyLocal := false
	f.leases.Range(func(_, v any) bool {
		l := v.(*lease)
		if first == nil {
			first = l
		}
		anyLocal = l.isLocal()
		return !anyLocal
	})
	if first == nil {
		return
	}
	if anyLocal {
		f.renew(ctx)
	} else if f.renewLease(ctx, first) {
		f.renewAll(ctx, 1)
	}
}

// renewLeases renews the leases every third of their life until the
// router closes.
func (r *Router) renewLeases() {
	t := time.NewTicker(r.fleet.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-r.life.Done():
			return
		case <-t.C:
			_ = r.fleet.renew(r.life)
		}
	}
}

// fleetHealth is the provider's window and probe on the fleet's store,
// guarded as every store call is: it has the method set of the health
// store the fallback keeps its window and probe in. A window is written to
// the router's own state as well, so that an outage of the store does not
// forget the windows this router opened.
type fleetHealth struct{ f *fleet }

func (h fleetHealth) Window(ctx context.Context, provider string) (until time.Time, reason string, err error) {
	if !h.f.call(ctx, "window", func(ctx context.Context, s Store) (err error) {
		until, reason, err = s.Window(ctx, provider)
		return err
	}) {
		return h.f.local.Window(ctx, provider)
	}
	return until, reason, nil
}

func (h fleetHealth) OpenWindow(ctx context.Context, provider string, until time.Time, reason string) error {
	if !h.f.own {
		h.f.call(ctx, "open_window", func(ctx context.Context, s Store) error {
			return s.OpenWindow(ctx, provider, until, reason)
		})
	}
	return h.f.local.OpenWindow(ctx, provider, until, reason)
}

func (h fleetHealth) CloseWindow(ctx context.Context, provider string) error {
	if !h.f.own {
		h.f.call(ctx, "close_window", func(ctx context.Context, s Store) error {
			return s.CloseWindow(ctx, provider)
		})
	}
	return h.f.local.CloseWindow(ctx, provider)
}

func (h fleetHealth) TryProbe(ctx context.Context, provider string, ttl time.Duration) (ok bool, err error) {
	if !h.f.call(ctx, "try_probe", func(ctx context.Context, s Store) (err error) {
		ok, err = s.TryProbe(ctx, provider, ttl)
		return err
	}) {
		return h.f.local.TryProbe(ctx, provider, ttl)
	}
	return ok, nil
}

func (h fleetHealth) DoneProbe(ctx context.Context, provider string) error {
	if !h.f.own {
		h.f.call(ctx, "done_probe", func(ctx context.Context, s Store) error {
			return s.DoneProbe(ctx, provider)
		})
	}
	return h.f.local.DoneProbe(ctx, provider)
}
