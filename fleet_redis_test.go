package hybroute

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/redistest"
	"github.com/hybroute/hybroute/redisstore"
)

// fleetRouter is a router of a fleet on the Redis at addr: its provider is
// never asked here (these tests drive the store side of session creation).
func fleetRouter(t testing.TB, addr string, limit int, logs *logBuffer, opts ...Option) *Router {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	if logs == nil {
		logs = &logBuffer{}
	}
	base := []Option{WithStore(redisstore.New(c)), WithProviderConcurrency(limit),
		WithStoreTimeout(2 * time.Second), // a loaded test machine is not an outage
		WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})))}
	return newTestRouter(t, &stubProvider{name: "Cloud"}, append(base, opts...)...)
}

// Three routers on one Redis, 50 session creations at once: exactly the
// cap gets a cloud slot, the others none; released slots serve the next.
func TestFleetCapAcrossRouters(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const limit = 7
	routers := []*Router{fleetRouter(t, srv.Addr, limit, nil), fleetRouter(t, srv.Addr, limit, nil), fleetRouter(t, srv.Addr, limit, nil)}
	ctx := testCtx(t)
	var mu sync.Mutex
	var got []*lease
	var owners []*Router
	var wg sync.WaitGroup
	for i := range 50 {
		r := routers[i%3]
		wg.Go(func() {
			if l, ok := r.fleet.acquireSlot(ctx); ok {
				mu.Lock()
				got, owners = append(got, l), append(owners, r)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Len(t, got, limit, "the fleet's cap, not one per router")
	for _, l := range got {
		assert.False(t, l.isLocal(), "every slot came from Redis")
	}
	_, ok := routers[0].fleet.acquireSlot(ctx)
	assert.False(t, ok)
	owners[0].fleet.release(ctx, got[0])
	l, ok := routers[2].fleet.acquireSlot(ctx)
	require.True(t, ok, "a released slot is free for any router")
	routers[2].fleet.release(ctx, l)
}

// A router in another process holds slots while it lives (its leases are
// renewed past their ttl) and gives them back when it is SIGKILLed, once
// the leases expire.
func TestFleetKilledRouterSlotsComeBack(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("skipping: re-runs the test binary as a child router (-short)")
	}
	srv := redistest.Start(t)
	const ttl = 600 * time.Millisecond
	child := startChild(t, "TestFleetChildRouter", "HYBROUTE_FLEET_CHILD="+srv.Addr, "HYBROUTE_FLEET_TTL="+ttl.String())
	require.Equal(t, "holding 3", child.await("holding ", 60*time.Second))

	r := fleetRouter(t, srv.Addr, 3, nil)
	ctx := testCtx(t)
	// Past three of its ttls the child, alive, still holds every slot.
	end := time.Now().Add(3 * ttl)
	for time.Now().Before(end) {
		_, ok := r.fleet.acquireSlot(ctx)
		require.False(t, ok, "a live router's renewed leases hold the cap")
		time.Sleep(ttl / 4)
	}
	require.NoError(t, child.cmd.Process.Signal(syscall.SIGKILL))
	child.wait(30 * time.Second)
	var l *lease
	deadline := time.After(30 * time.Second)
	for l == nil {
		if got, ok := r.fleet.acquireSlot(ctx); ok {
			l = got
			break
		}
		select {
		case <-deadline:
			t.Fatal("the killed router's slots never came back")
		case <-time.After(ttl / 4):
		}
	}
	assert.False(t, l.isLocal())
	r.fleet.release(ctx, l)
}

// TestFleetChildRouter is the child of TestFleetKilledRouterSlotsComeBack:
// a router that takes three slots and holds them until it is killed.
func TestFleetChildRouter(t *testing.T) {
	addr := os.Getenv("HYBROUTE_FLEET_CHILD")
	if addr == "" {
		t.Skip("the child router of TestFleetKilledRouterSlotsComeBack")
	}
	ttl, err := time.ParseDuration(os.Getenv("HYBROUTE_FLEET_TTL"))
	require.NoError(t, err)
	r := fleetRouter(t, addr, 3, nil, withSlotTTL(ttl))
	ctx := testCtx(t)
	for range 3 {
		_, ok := r.fleet.acquireSlot(ctx)
		require.True(t, ok)
	}
	fmt.Println("holding " + strconv.Itoa(3))
	<-ctx.Done() // killed long before
}

// withSlotTTL sets the lease ttl (and so the renewal period) of a test router.
func withSlotTTL(d time.Duration) Option { return func(c *config) { c.slotTTL = d } }

// Redis stopped mid-run and started again: slots keep coming (from the
// router's own state while Redis is away), with one warning and one
// recovered line, and the shared state is used again once it is back.
func TestFleetRedisRestart(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	logs := &logBuffer{}
	r := fleetRouter(t, srv.Addr, 5, logs, WithStoreTimeout(300*time.Millisecond))
	ctx := testCtx(t)
	a, ok := r.fleet.acquireSlot(ctx)
	require.True(t, ok)
	require.False(t, a.isLocal())

	srv.Stop()
	var held []*lease
	for range 4 {
		l, ok := r.fleet.acquireSlot(ctx)
		require.True(t, ok, "Redis down: the call goes on")
		assert.True(t, l.isLocal())
		held = append(held, l)
	}
	_, ok = r.fleet.acquireSlot(ctx)
	assert.False(t, ok, "the cap holds in-process while Redis is down")
	for _, l := range held {
		r.fleet.release(ctx, l)
	}

	srv.Restart()
	var back atomic.Bool
	deadline := time.After(30 * time.Second)
	for !back.Load() {
		l, ok := r.fleet.acquireSlot(ctx)
		require.True(t, ok)
		r.fleet.release(ctx, l)
		if !l.isLocal() {
			back.Store(true)
			break
		}
		select {
		case <-deadline:
			t.Fatal("the router never used Redis again")
		case <-time.After(200 * time.Millisecond):
		}
	}
	r.fleet.release(ctx, a) // its lease died with the old server: no error either
	assert.Equal(t, 1, logs.count("store unreachable"), logs.String())
	assert.Equal(t, 1, logs.count("store recovered"), logs.String())
}

// The same cap with real sessions: three routers, each with its sidecar,
// against one provider with a real cloud Chromium behind it, and 50 new
// keys at once. Heavy (three local Chromiums and 50 tabs), so it runs
// only with HYBROUTE_FLEET_LOAD=1.
func TestFleetCapLoad(t *testing.T) {
	if os.Getenv("HYBROUTE_FLEET_LOAD") == "" {
		t.Skip("skipping: set HYBROUTE_FLEET_LOAD=1 for 50 real session creations across 3 routers")
	}
	srv := redistest.Start(t)
	const limit = 5
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 64})
	t.Cleanup(func() { _ = c.Close() })
	// A loaded machine starts three Chromiums slowly and answers slowly:
	// the time is not what this test measures, and a store call cut short
	// would send its router to its own, per-process cap.
	// The floor's budget too (WithLocalTimeout, 60 s by default): 45 new
	// local tabs at once on three Chromiums of a shared 2-core machine
	// take minutes, not what this test counts.
	opts := []Option{WithStore(redisstore.New(c)), WithProviderConcurrency(limit), WithStoreTimeout(20 * time.Second),
		WithCreateTimeout(5 * time.Minute), WithLocalTimeout(5 * time.Minute)}
	w := newWorld(t, cloudtest.Browserbase, opts...)
	live := &liveCounter{}
	routers := []*Router{}
	for range 3 {
		// The world's HTTP client: it trusts the fake's TLS front and
		// dials its provider-shaped names on loopback.
		p := &liveProvider{Provider: NewBrowserbase(testAPIKey, "proj-1", WithProviderBaseURL(w.api.URL),
			WithProviderHTTPClient(w.api.HTTPClient())), live: live}
		routers = append(routers, newBrowserRouter(t, p, w.logs, opts...))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var cloud, local, failed atomic.Int32
	var wg sync.WaitGroup
	for i := range 50 {
		r := routers[i%3]
		wg.Go(func() {
			res, err := r.Navigate(ctx, fmt.Sprint("k", i), w.site.url(publicHost, fmt.Sprint("/p", i)))
			switch {
			case err != nil:
				failed.Add(1)
				t.Log(err)
			case res.FallbackFromCloud:
				local.Add(1)
			default:
				cloud.Add(1)
			}
		})
	}
	wg.Wait()
	t.Logf("cloud %d, local %d, failed %d, provider creates %d, most open at once %d", cloud.Load(), local.Load(), failed.Load(), w.api.Creates(), live.peak.Load())
	if failed.Load() > 0 {
		// What the routers said about it: the guard closing targets it
		// could not cover in time, the floor failing, the store.
		for _, line := range strings.Split(w.logs.String(), "\n") {
			if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
				t.Log(line)
			}
		}
	}
	require.Zero(t, w.logs.count("store unreachable"), "the store answered every call: %s", w.logs.String())
	assert.Zero(t, failed.Load())
	assert.LessOrEqual(t, cloud.Load(), int32(limit))
	assert.Positive(t, cloud.Load())
	assert.LessOrEqual(t, live.peak.Load(), int32(limit), "never more provider sessions open at once than the fleet's cap")
}

// liveCounter counts the provider sessions open at once, and the most.
type liveCounter struct{ now, peak atomic.Int32 }

// liveProvider counts its sessions in a liveCounter shared by the
// routers of a fleet.
type liveProvider struct {
	Provider
	live *liveCounter
}

func (p *liveProvider) CreateSession(ctx context.Context, key string) (*Session, error) {
	s, err := p.Provider.CreateSession(ctx, key)
	if err == nil {
		n := p.live.now.Add(1)
		for {
			peak := p.live.peak.Load()
			if n <= peak || p.live.peak.CompareAndSwap(peak, n) {
				break
			}
		}
	}
	return s, err
}

// CloseIdleConnections passes Close's call on to the wrapped client.
func (p *liveProvider) CloseIdleConnections() {
	if ic, ok := p.Provider.(idleCloser); ok {
		ic.CloseIdleConnections()
	}
}

func (p *liveProvider) ReleaseSession(ctx context.Context, s *Session) error {
	p.live.now.Add(-1)
	return p.Provider.ReleaseSession(ctx, s)
}
