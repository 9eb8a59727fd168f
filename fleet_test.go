package hybroute

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/config"
	"github.com/hybroute/hybroute/internal/fleet"
	"github.com/hybroute/hybroute/internal/testlog"
	"github.com/hybroute/hybroute/store"
)

// flakyStore is a store.Memory that can be made to fail every call, or to
// hang until the caller's deadline, as an unreachable or stalled Redis does.
type flakyStore struct {
	store.Memory
	mode  atomic.Int32 // 0 answers, 1 fails, 2 hangs
	calls atomic.Int32
}

var errStoreDown = errors.New("store down")

func (s *flakyStore) fault(ctx context.Context) error {
	s.calls.Add(1)
	switch s.mode.Load() {
	case 1:
		return errStoreDown
	case 2:
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (s *flakyStore) AcquireSlot(ctx context.Context, p, h string, limit int, ttl time.Duration) (bool, error) {
	if err := s.fault(ctx); err != nil {
		return false, err
	}
	return s.Memory.AcquireSlot(ctx, p, h, limit, ttl)
}

func (s *flakyStore) Epoch(ctx context.Context, p, fresh string) (string, error) {
	if err := s.fault(ctx); err != nil {
		return "", err
	}
	return s.Memory.Epoch(ctx, p, fresh)
}

func (s *flakyStore) RenewSlot(ctx context.Context, p, h string, ttl time.Duration) (bool, error) {
	if err := s.fault(ctx); err != nil {
		return false, err
	}
	return s.Memory.RenewSlot(ctx, p, h, ttl)
}

func (s *flakyStore) ReleaseSlot(ctx context.Context, p, h string) error {
	if err := s.fault(ctx); err != nil {
		return err
	}
	return s.Memory.ReleaseSlot(ctx, p, h)
}

func testFleet(t *testing.T, s store.Store, limit int, logs *testlog.Buffer, opts ...Option) *fleet.Fleet {
	t.Helper()
	cfg := config.Default()
	cfg.Store, cfg.ProviderConcurrency, cfg.StoreTimeout = s, limit, 100*time.Millisecond
	for _, o := range opts {
		o(&cfg)
	}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	return newFleet(&cfg, "Cloud", log, newTelemetry(nil, nil, "Cloud"))
}

// A store that fails or hangs never fails nor holds up a slot: the router
// keeps to the cap with its own state, warns once per outage, and says
// once when the store is back.
func TestFleetStoreOutageFallsBackToLocalState(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := &flakyStore{}
	logs := &testlog.Buffer{}
	f := testFleet(t, s, 3, logs)

	a, ok := f.AcquireSlot(ctx)
	require.True(t, ok)
	assert.False(t, a.Local(), "taken from the store")

	s.mode.Store(2) // hangs: every call is cut at the timeout
	done := make(chan struct{})
	var b, c *fleet.Lease
	var okB, okC bool
	go func() {
		defer close(done)
		b, okB = f.AcquireSlot(ctx)
		c, okC = f.AcquireSlot(ctx)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("a hanging store held up AcquireSlot")
	}
	require.True(t, okB)
	assert.True(t, b.Local(), "the in-process state gave the slot")
	require.True(t, okC)
	_, okD := f.AcquireSlot(ctx)
	assert.False(t, okD, "the cap holds on local state too, counting the shared slot still held")
	// Three calls: a's epoch and slot, and the epoch read that timed out.
	assert.Equal(t, int32(3), s.calls.Load(), "a failed store is left alone for a while, not asked on every call")
	f.Release(ctx, b)

	s.mode.Store(1) // fails at once: the same outage, not a new warning
	f.Retry()
	d, ok := f.AcquireSlot(ctx)
	require.True(t, ok)

	// The store is back. Three sessions are open (a, and c and d taken
	// while it was away): before it is asked for a fourth, it is told of
	// c and d, and the cap of three holds.
	s.mode.Store(0)
	f.Retry()
	_, ok = f.AcquireSlot(ctx)
	assert.False(t, ok, "the slots taken while the store was away count in it now")
	assert.False(t, c.Local())
	assert.False(t, d.Local())
	f.Release(ctx, d)
	e, ok := f.AcquireSlot(ctx)
	require.True(t, ok)
	assert.False(t, e.Local(), "the store is asked again")
	assert.Equal(t, 1, logs.Count("store unreachable"), logs.String())
	assert.Equal(t, 1, logs.Count("store recovered"), logs.String())
	assert.Contains(t, logs.String(), "limit reached")
	f.Release(ctx, a)
	f.Release(ctx, e)
	f.Release(ctx, c)
}

// Leases are renewed while their sessions live, so they outlast their ttl;
// a lost lease is taken again.
func TestFleetRenewsLeases(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := &store.Memory{}
	f := testFleet(t, s, 1, &testlog.Buffer{}, withSlotTTL(200*time.Millisecond))
	l, ok := f.AcquireSlot(ctx)
	require.True(t, ok)
	for range 4 {
		time.Sleep(100 * time.Millisecond)
		f.Renew(ctx)
	}
	ok, err := s.AcquireSlot(ctx, "Cloud", "intruder", 1, time.Minute)
	require.NoError(t, err)
	assert.False(t, ok, "the renewed lease still holds the only slot")

	require.NoError(t, s.ReleaseSlot(ctx, "Cloud", l.Holder())) // lost, as after an expiry
	f.Renew(ctx)
	ok, err = s.AcquireSlot(ctx, "Cloud", "intruder", 1, time.Minute)
	require.NoError(t, err)
	assert.False(t, ok, "the renewal took the lost lease again")
	f.Release(ctx, l)
	ok, err = s.AcquireSlot(ctx, "Cloud", "intruder", 1, time.Minute)
	require.NoError(t, err)
	assert.True(t, ok, "released")
}

// Past the cap a new session runs on local Chromium, marked as a fallback
// for the concurrency limit, without asking the provider; a released
// session frees its slot for the next one.
func TestProviderConcurrencyCap(t *testing.T) {
	t.Parallel()
	w := newWorld(t, cloudtest.Browserbase, WithProviderConcurrency(1))
	ctx := testCtx(t)
	res, err := w.r.Navigate(ctx, "a", w.site.url(publicHost, "/a"), nil)
	require.NoError(t, err)
	assert.False(t, res.FallbackFromCloud)
	assert.Equal(t, cloudUA, w.site.uaOf("/a"))

	res, err = w.r.Navigate(ctx, "b", w.site.url(publicHost, "/b"), nil)
	require.NoError(t, err)
	assert.True(t, res.FallbackFromCloud, "past the cap")
	assert.Equal(t, localUA, w.site.uaOf("/b"))
	assert.EqualValues(t, 1, w.api.Creates(), "the provider was not asked past the cap")
	assert.Equal(t, 1, w.logs.Count("provider concurrency limit reached"), w.logs.String())

	require.NoError(t, w.r.Release(ctx, "a"))
	res, err = w.r.Navigate(ctx, "c", w.site.url(publicHost, "/c"), nil)
	require.NoError(t, err)
	assert.False(t, res.FallbackFromCloud, "the released slot is free again")
	assert.Equal(t, cloudUA, w.site.uaOf("/c"))
	assert.EqualValues(t, 2, w.api.Creates())
}

// The window and probe through the fleet: shared by routers on one store,
// and still there (this router's own copy) when the store fails.
func TestFleetHealthSharesWindowAndSurvivesOutage(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := &flakyHealthStore{}
	logs := &testlog.Buffer{}
	a, b := testFleet(t, s, 0, logs).Health(), testFleet(t, s, 0, &testlog.Buffer{}).Health()
	until := time.Now().Add(17 * time.Second).Truncate(time.Millisecond)
	require.NoError(t, a.OpenWindow(ctx, "Cloud", until, "rate limited"))
	got, reason, err := b.Window(ctx, "Cloud")
	require.NoError(t, err)
	assert.Equal(t, until, got, "the other router sees the window")
	assert.Equal(t, "rate limited", reason)
	ok, err := a.TryProbe(ctx, "Cloud", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = b.TryProbe(ctx, "Cloud", time.Minute)
	require.NoError(t, err)
	assert.False(t, ok, "one probe for both")

	s.down.Store(true)
	got, _, err = a.Window(ctx, "Cloud")
	require.NoError(t, err, "a store outage is no error to the caller")
	assert.Equal(t, until, got, "the router's own copy of its window")
	got, _, err = b.Window(ctx, "Cloud")
	require.NoError(t, err)
	assert.True(t, got.IsZero(), "b never opened it: its own state has none")
	assert.Equal(t, 1, logs.Count("store unreachable"))
}

// flakyHealthStore is a store.Memory whose window calls fail on demand.
type flakyHealthStore struct {
	store.Memory
	down atomic.Bool
}

func (s *flakyHealthStore) Window(ctx context.Context, p string) (time.Time, string, error) {
	if s.down.Load() {
		return time.Time{}, "", errStoreDown
	}
	return s.Memory.Window(ctx, p)
}
