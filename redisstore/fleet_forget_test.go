package redisstore_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/fleet"
	"github.com/hybroute/hybroute/internal/redistest"
	"github.com/hybroute/hybroute/internal/testlog"
	"github.com/hybroute/hybroute/redisstore"
	"github.com/hybroute/hybroute/store"
)

// The cap after the store forgets. Cap 2, three routers on one
// redis-server: two hold one session each, the third holds none. Then the
// store forgets every lease, by FLUSHALL or by a restart with nothing on
// disk, and only the idle router asks for slots, two at once. It knows
// the store forgot (the epoch it read is gone) and takes none until the
// holders have registered their sessions again; from then on the store
// counts them, and the cap is full. The fleet never runs more than 2.
// (Before, the idle router took 2 at once: 4 live.)
func TestFleetCapHoldsAfterTheStoreForgets(t *testing.T) {
	for _, how := range []string{"flushall", "restart"} {
		t.Run(how, func(t *testing.T) {
			srv := redistest.Start(t)
			c := redis.NewClient(&redis.Options{Addr: srv.Addr})
			t.Cleanup(func() { _ = c.Close() })
			const limit = 2
			const ttl = 750 * time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			logs := &testlog.Buffer{}
			routers := make([]*fleet.Fleet, 3)
			for i := range routers {
				routers[i] = fleet.New(fleet.Config{Shared: redisstore.New(c), Local: &store.Memory{},
					Timeout: 2 * time.Second, Provider: "Cloud", Log: slog.New(slog.NewTextHandler(logs, nil)), Limit: limit, TTL: ttl})
				lctx, stop := context.WithCancel(ctx)
				done := make(chan struct{})
				go func() { defer close(done); routers[i].KeepLeases(lctx) }()
				t.Cleanup(func() { stop(); <-done })
			}
			holderA, holderB, idle := routers[0], routers[1], routers[2]
			a, ok := holderA.AcquireSlot(ctx)
			require.True(t, ok)
			_, ok = holderB.AcquireSlot(ctx)
			require.True(t, ok)
			require.Eventually(t, idle.KnowsEpoch, 10*time.Second, 10*time.Millisecond, "the idle router reads the epoch as its renewals start")

			switch how {
			case "flushall":
				require.NoError(t, c.FlushAll(ctx).Err())
			case "restart":
				srv.Stop()
				srv.Restart()
				// A router whose call met the stopped server rests on its
				// own state for a while (an outage, not what this test
				// counts): end the rest, so each asks the restarted store.
				for _, r := range routers {
					r.Retry()
				}
			}
			forgot := time.Now()
			leases := func() int {
				n, err := c.ZCard(ctx, "hybroute:{Cloud}:slots").Result()
				require.NoError(t, err)
				return int(n)
			}

			// The idle router asks for two at once, again and again, for
			// two leases: it gets none while the holders' two sessions are
			// open.
			var mu sync.Mutex
			got := 0
			for time.Since(forgot) < 2*ttl {
				var wg sync.WaitGroup
				for range 2 {
					wg.Go(func() {
						if _, ok := idle.AcquireSlot(ctx); ok {
							mu.Lock()
							got++
							mu.Unlock()
						}
					})
				}
				wg.Wait()
				time.Sleep(ttl / 10)
			}
			assert.Zero(t, got, "the idle router took %d slots while two sessions were open at cap %d", got, limit)
			// The holders' renewals register their sessions again: waited on,
			// not read at the end of a fixed time, which a loaded machine can
			// outlast.
			assert.Eventually(t, func() bool {
				n, err := c.ZCard(ctx, "hybroute:{Cloud}:slots").Result()
				return err == nil && int(n) == limit
			}, 10*time.Second, 10*time.Millisecond, "the holders registered their sessions again")
			assert.Contains(t, logs.String(), "the store forgot the fleet's slot leases")

			// One holder ends its session: the idle router gets its slot.
			holderA.Release(ctx, a)
			l, ok := idle.AcquireSlot(ctx)
			require.True(t, ok, "a slot given back is free once the wait is over")
			assert.False(t, l.Local(), "from the shared store")
			assert.Equal(t, limit, leases())
			t.Logf("%s: the idle router took no slot for %v after the store forgot (lease %v)", how, 2*ttl, ttl)
		})
	}
}

// The first router of a fleet on a fresh store knows no earlier epoch:
// it takes its slots at once.
func TestFleetFreshStoreDoesNotWait(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := fleet.New(fleet.Config{Shared: redisstore.New(c), Local: &store.Memory{}, Timeout: 2 * time.Second,
		Provider: "Cloud", Limit: 2, TTL: time.Minute})
	for i := range 2 {
		_, ok := f.AcquireSlot(ctx)
		require.True(t, ok, fmt.Sprint("slot ", i))
	}
	assert.True(t, f.KnowsEpoch())
}
