package hybroute

import (
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/config"
	"github.com/hybroute/hybroute/internal/fleet"
	"github.com/hybroute/hybroute/internal/storeseam"
	"github.com/hybroute/hybroute/internal/testlog"
	"github.com/hybroute/hybroute/store"
)

// fleetRouter is a router of a fleet sharing store: its provider is never
// asked here (these tests drive the store side of session creation).
func fleetRouter(t testing.TB, store store.Store, limit int, logs *testlog.Buffer, opts ...Option) *Router {
	t.Helper()
	if logs == nil {
		logs = &testlog.Buffer{}
	}
	base := []Option{WithStore(store), WithProviderConcurrency(limit),
		WithStoreTimeout(2 * time.Second), // a loaded test machine is not an outage
		WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})))}
	return newRouter(t, &stubProvider{name: "Cloud"}, nil, append(base, opts...)...)
}

// forget drops every window, probe claim and lease the store holds, as a
// FLUSHALL, or a redis-server restarted with nothing on disk, does.
func (s *flakyStore) forget() { storeseam.Forget(&s.Memory) }

// leases counts provider's unexpired slot leases.
func (s *flakyStore) leases(provider string) int {
	n, now := 0, time.Now()
	storeseam.Edit(&s.Memory, provider, func(p *storeseam.Record) {
		for _, exp := range p.Slots {
			if now.Before(exp) {
				n++
			}
		}
	})
	return n
}

// Three routers on one store, 50 session creations at once: exactly the
// cap gets a cloud slot, the others none; released slots serve the next.
func TestFleetCapAcrossRouters(t *testing.T) {
	t.Parallel()
	store := &flakyStore{}
	const limit = 7
	routers := []*Router{fleetRouter(t, store, limit, nil), fleetRouter(t, store, limit, nil), fleetRouter(t, store, limit, nil)}
	ctx := testCtx(t)
	var mu sync.Mutex
	var got []*fleet.Lease
	var owners []*Router
	var wg sync.WaitGroup
	for i := range 50 {
		r := routers[i%3]
		wg.Go(func() {
			if l, ok := r.fleet.AcquireSlot(ctx); ok {
				mu.Lock()
				got, owners = append(got, l), append(owners, r)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Len(t, got, limit, "the fleet's cap, not one per router")
	for _, l := range got {
		assert.False(t, l.Local(), "every slot came from the shared store")
	}
	assert.Equal(t, limit, store.leases("Cloud"))
	_, ok := routers[0].fleet.AcquireSlot(ctx)
	assert.False(t, ok)
	owners[0].fleet.Release(ctx, got[0])
	l, ok := routers[2].fleet.AcquireSlot(ctx)
	require.True(t, ok, "a released slot is free for any router")
	routers[2].fleet.Release(ctx, l)
}

// A router holds its slots while it lives (its leases are renewed past
// their ttl) and, once it stops dead (a SIGKILL: no release, no renewal),
// they come back to the fleet when its leases expire.
func TestFleetKilledRouterSlotsComeBack(t *testing.T) {
	t.Parallel()
	store := &flakyStore{}
	const ttl = 600 * time.Millisecond
	holder := fleetRouter(t, store, 3, nil, withSlotTTL(ttl))
	r := fleetRouter(t, store, 3, nil)
	ctx := testCtx(t)
	for range 3 {
		_, ok := holder.fleet.AcquireSlot(ctx)
		require.True(t, ok)
	}
	// Past three of its ttls the holder, alive, still holds every slot.
	end := time.Now().Add(3 * ttl)
	for time.Now().Before(end) {
		_, ok := r.fleet.AcquireSlot(ctx)
		require.False(t, ok, "a live router's renewed leases hold the cap")
		time.Sleep(ttl / 4)
	}
	holder.endLife() // what a SIGKILL leaves: its renewals stop, nothing is released
	var l *fleet.Lease
	deadline := time.After(30 * time.Second)
	for l == nil {
		if got, ok := r.fleet.AcquireSlot(ctx); ok {
			l = got
			break
		}
		select {
		case <-deadline:
			t.Fatal("the killed router's slots never came back")
		case <-time.After(ttl / 4):
		}
	}
	assert.False(t, l.Local())
	r.fleet.Release(ctx, l)
}

// withSlotTTL sets the lease ttl (and so the renewal period) of a test router.
func withSlotTTL(d time.Duration) Option { return func(c *config.Config) { c.SlotTTL = d } }
