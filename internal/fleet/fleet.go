// Package fleet is the router's side of a shared store: every call to it is
// bounded by a short timeout, and a store that fails or is slow is replaced
// by the router's own in-process state until it answers again, with one
// warning per outage and one line when it is back. The provider's
// concurrency leases live here too: taken per cloud session, renewed while
// it lives, and registered again with a store that lost them.
//
// The fleet knows nothing of telemetry (the root decorates the shared store
// before it hands it over) nor of what a window means (internal/health
// reads and writes it through [Fleet.Health]).
package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hybroute/hybroute/store"
)

// storeRetry is how long after a failed call the fleet stays on its
// in-process state before it asks the store again, so that an outage
// costs one timeout a second, not one per call.
const storeRetry = time.Second

const (
	// DefaultTimeout bounds one store call, unless Config.Timeout says
	// otherwise.
	DefaultTimeout = 500 * time.Millisecond
	// DefaultTTL is a concurrency lease's life without renewal: a
	// replica that dies holds its slots this long at most. Leases are
	// renewed every third of it.
	DefaultTTL = 30 * time.Second
)

// Config is what a fleet is made of.
type Config struct {
	// Shared is the store the replicas share; nil: none, Local is the
	// only state and nothing can fail.
	Shared store.Store
	// Local is the in-process state a failing shared store falls back
	// to. It must not fail.
	Local store.Store
	// Timeout bounds one call to Shared; 0 is DefaultTimeout.
	Timeout time.Duration
	// Provider is the provider's Name(), for the log and the store's keys.
	Provider string
	// Log gets the store's failures and recoveries; nil discards them.
	Log *slog.Logger
	// Limit is the concurrency cap; 0: none.
	Limit int
	// TTL is a lease's life without renewal; 0 is DefaultTTL.
	TTL time.Duration
}

// Fleet is the router's store, guarded, and its concurrency leases.
type Fleet struct {
	store    store.Store // the shared store; local when none is
	local    store.Store
	own      bool // no shared store: store is local, nothing can fail
	timeout  time.Duration
	provider string
	log      *slog.Logger

	mu      sync.Mutex
	down    bool      // a store failure was logged and no success seen since
	retryAt time.Time // before this, the store is not asked

	limit  int
	ttl    time.Duration
	id     string // this router's part of every holder name
	seq    atomic.Uint64
	full   atomic.Bool  // the cap was logged as reached and no slot was taken since
	shared atomic.Int64 // leases this router holds in the shared store
	leases sync.Map     // holder -> *Lease, the leases to renew

	// epoch is the store's name for its memory of the leases (store.Slots.Epoch)
	// as this router last read it, and holdUntil the end of the wait after
	// the store was found to have forgotten them; both guarded by mu.
	epoch     string
	holdUntil time.Time
	held      atomic.Bool // the wait was logged and no slot was taken since
}

// Lease is one concurrency slot a cloud session holds.
type Lease struct {
	holder string
	// mu orders a renewal's store call against the release's: a renewal
	// adds a lease the store lost back, and must not add one just
	// released.
	mu       sync.Mutex
	local    bool // taken from the in-process state while the store was down
	released bool
}

// Holder is the lease's name in the store.
func (l *Lease) Holder() string { return l.holder }

// Local reports whether the lease is counted by the in-process state
// only: taken while the store was down, and not yet registered with it.
func (l *Lease) Local() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.local
}

// New makes the fleet c describes.
func New(c Config) *Fleet {
	f := &Fleet{
		store: c.Shared, local: c.Local, timeout: c.Timeout,
		provider: c.Provider, log: c.Log, limit: c.Limit, ttl: c.TTL,
	}
	if f.timeout <= 0 {
		f.timeout = DefaultTimeout
	}
	if f.ttl <= 0 {
		f.ttl = DefaultTTL
	}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	if f.store == nil {
		f.store, f.own = f.local, true
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	f.id = hex.EncodeToString(b[:])
	return f
}

// Limit is the concurrency cap; 0: none.
func (f *Fleet) Limit() int { return f.limit }

// call runs one call on the shared store, bounded by the timeout. It
// returns false, having logged the failure, when the store failed or is
// being given a rest: the caller then uses f.local.
func (f *Fleet) call(ctx context.Context, op string, do func(ctx context.Context, s store.Store) error) bool {
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

// Retry ends the rest a failed store is given: the next call asks it.
func (f *Fleet) Retry() {
	f.mu.Lock()
	f.retryAt = time.Time{}
	f.mu.Unlock()
}

// AcquireSlot takes a concurrency slot for a new cloud session, or reports
// that the cap is reached. With no cap it takes nothing and succeeds.
func (f *Fleet) AcquireSlot(ctx context.Context) (*Lease, bool) {
	if f.limit <= 0 {
		return nil, true
	}
	// The store must count what this router holds before it is asked
	// for more: one that restarted empty would otherwise hand out the
	// slots of sessions still open.
	f.checkEpoch(ctx)
	f.reassert(ctx)
	if until, ok := f.holding(); ok {
		if !f.held.Swap(true) {
			f.log.LogAttrs(ctx, slog.LevelWarn, "hybroute: the store forgot the fleet's slot leases; no new cloud session until the fleet's routers have registered theirs again",
				slog.String("provider", f.provider), slog.Int("limit", f.limit), slog.Duration("wait", time.Until(until).Round(time.Millisecond)))
		}
		return nil, false
	}
	l := &Lease{holder: f.id + "-" + strconv.FormatUint(f.seq.Add(1), 10)}
	var ok bool
	if !f.call(ctx, "acquire_slot", func(ctx context.Context, s store.Store) (err error) {
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
	f.held.Store(false)
	if !l.local {
		f.shared.Add(1)
	}
	f.leases.Store(l.holder, l)
	return l, true
}

// Release gives the slot back, once. A store that cannot be told lets the
// lease expire.
func (f *Fleet) Release(ctx context.Context, l *Lease) {
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
	f.call(ctx, "release_slot", func(ctx context.Context, s store.Store) error {
		return s.ReleaseSlot(ctx, f.provider, l.holder)
	})
}

// Renew extends every lease this router holds, and registers again with
// the store every lease it no longer counts: one lost while the store was
// unreachable, or forgotten by a store that restarted empty or was
// flushed, and one taken from the in-process state during an outage. A
// lease comes back even past the cap: its session is open, in a caller's
// hands, and a store that does not count it would give its slot to a new
// session, so that the fleet would run over its cap for as long as the
// session lives. It reports how many leases the store had lost.
func (f *Fleet) Renew(ctx context.Context) int {
	f.checkEpoch(ctx)
	return f.renewAll(ctx, 0)
}

// renewAll is Renew, with lost leases already found and registered again.
func (f *Fleet) renewAll(ctx context.Context, lost int) int {
	f.leases.Range(func(_, v any) bool {
		if f.renewLease(ctx, v.(*Lease)) {
			lost++
		}
		return true
	})
	if lost > 0 {
		f.hold()
		f.log.LogAttrs(ctx, slog.LevelInfo, "hybroute: the store had lost slot leases of open sessions; registered them again",
			slog.String("provider", f.provider), slog.Int("leases", lost))
	}
	return lost
}

// After the store forgets the leases (a restart with nothing on disk, a
// flush), it counts none of the fleet's open sessions until each router
// registers its own again, at its next renewal, within a third of a
// lease. A router that took slots in between would take the slots of
// sessions still open, and the fleet would run past its cap, which is the
// provider's plan limit: 429s and bills. So a router that knows the store
// forgot (its epoch changed, or a lease of its own was lost) takes no
// slot for one lease's life: new sessions run on local Chromium, as at
// the cap. A router that never read the epoch before cannot know, and a
// fresh fleet on a fresh store does not wait.

// checkEpoch reads the store's epoch, and when it differs from the one
// read before, holds new slots back for one lease. (The caller then
// registers this router's leases again: Renew, or AcquireSlot's reassert.)
func (f *Fleet) checkEpoch(ctx context.Context) {
	if f.own || f.limit <= 0 {
		return
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	fresh := hex.EncodeToString(b[:])
	var got string
	if !f.call(ctx, "epoch", func(ctx context.Context, s store.Store) (err error) {
		got, err = s.Epoch(ctx, f.provider, fresh)
		return err
	}) || got == "" {
		return
	}
	f.mu.Lock()
	forgot := f.epoch != "" && got != f.epoch
	f.epoch = got
	f.mu.Unlock()
	if forgot {
		f.hold()
		f.log.LogAttrs(ctx, slog.LevelWarn, "hybroute: the store forgot the fleet's slot leases (a restart or a flush); waiting one lease for the routers to register theirs again",
			slog.String("provider", f.provider), slog.Duration("lease", f.ttl))
	}
}

// hold starts one lease's wait before new slots.
func (f *Fleet) hold() {
	f.mu.Lock()
	f.holdUntil = time.Now().Add(f.ttl)
	f.mu.Unlock()
}

// holding is the end of the wait after the store forgot, and whether it
// is still on.
func (f *Fleet) holding() (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.holdUntil, time.Now().Before(f.holdUntil)
}

// KnowsEpoch reports whether the router has read the store's epoch, so
// that it can tell when the store forgets.
func (f *Fleet) KnowsEpoch() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.epoch != ""
}

// renewLease renews one lease, registering it with the store if the store
// had lost it or never had it, and reports whether the store had lost it.
// With the store away, a lease of the in-process state is renewed there.
func (f *Fleet) renewLease(ctx context.Context, l *Lease) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return false
	}
	var had bool
	if !f.call(ctx, "renew_slot", func(ctx context.Context, s store.Store) (err error) {
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
func (f *Fleet) reassert(ctx context.Context) {
	var first *Lease
	anyLocal := false
	f.leases.Range(func(_, v any) bool {
		l := v.(*Lease)
		if first == nil {
			first = l
		}
		anyLocal = l.Local()
		return !anyLocal
	})
	if first == nil {
		return
	}
	if anyLocal {
		// renewAll, not Renew: AcquireSlot has read the epoch already.
		f.renewAll(ctx, 0)
	} else if f.renewLease(ctx, first) {
		f.renewAll(ctx, 1)
	}
}

// KeepLeases renews the leases every third of their life until ctx ends.
// It reads the store's epoch first, so that the router knows when the
// store forgets before it holds any lease.
func (f *Fleet) KeepLeases(ctx context.Context) {
	f.checkEpoch(ctx)
	t := time.NewTicker(f.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = f.Renew(ctx)
		}
	}
}
