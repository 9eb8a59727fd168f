package redisstore_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/internal/agenttest"
	"github.com/hybroute/hybroute/internal/redistest"
	"github.com/hybroute/hybroute/provider"
	"github.com/hybroute/hybroute/redisstore"
)

// The fleet's cap with real sessions: three routers on one redis-server,
// each with its local Chromium, against one provider with a real cloud
// Chromium behind it, and 50 new keys at once. Heavy (three local
// Chromiums and 50 tabs), so it runs only with HYBROUTE_FLEET_LOAD=1
// (make fleet-load).
func TestFleetCapLoad(t *testing.T) {
	if os.Getenv("HYBROUTE_FLEET_LOAD") == "" {
		t.Skip("skipping: set HYBROUTE_FLEET_LOAD=1 for 50 real session creations across 3 routers")
	}
	srv := redistest.Start(t)
	const limit = 5
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 64})
	t.Cleanup(func() { _ = c.Close() })
	// The routers log to a file: they may still write while the test
	// reads it.
	logs, err := os.Create(filepath.Join(t.TempDir(), "routers.log"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = logs.Close() })
	logged := func() string {
		b, err := os.ReadFile(logs.Name())
		require.NoError(t, err)
		return string(b)
	}
	// A loaded machine starts three Chromiums slowly and answers slowly:
	// the time is not what this test measures, and a store call cut short
	// would send its router to its own, per-process cap.
	// The floor's budget too (WithLocalTimeout, 60 s by default): 45 new
	// local tabs at once on three Chromiums of a shared 2-core machine
	// take minutes, not what this test counts.
	opts := []hybroute.Option{hybroute.WithStore(redisstore.New(c)), hybroute.WithProviderConcurrency(limit),
		hybroute.WithStoreTimeout(20 * time.Second), hybroute.WithCreateTimeout(5 * time.Minute),
		hybroute.WithLocalTimeout(5 * time.Minute),
		hybroute.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})))}
	cloud := agenttest.NewCloud(t)
	site := agenttest.NewSite(t)
	live := &liveCounter{}
	routers := []*hybroute.Router{}
	for range 3 {
		routers = append(routers, agenttest.NewRouter(t, &liveProvider{Provider: cloud.Provider, live: live}, opts...))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var onCloud, local, failed atomic.Int32
	var wg sync.WaitGroup
	for i := range 50 {
		r := routers[i%3]
		wg.Go(func() {
			res, err := r.Navigate(ctx, fmt.Sprint("k", i), site.URL(agenttest.PublicHost, fmt.Sprint("/p", i)), nil)
			switch {
			case err != nil:
				failed.Add(1)
				t.Log(err)
			case res.FallbackFromCloud:
				local.Add(1)
			default:
				onCloud.Add(1)
			}
		})
	}
	wg.Wait()
	t.Logf("cloud %d, local %d, failed %d, provider creates %d, most open at once %d",
		onCloud.Load(), local.Load(), failed.Load(), cloud.API.Creates(), live.peak.Load())
	if failed.Load() > 0 {
		// What the routers said about it: the guard closing targets it
		// could not cover in time, the floor failing, the store.
		for _, line := range strings.Split(logged(), "\n") {
			if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
				t.Log(line)
			}
		}
	}
	require.NotContains(t, logged(), "store unreachable", "the store answered every call")
	assert.Zero(t, failed.Load())
	assert.LessOrEqual(t, onCloud.Load(), int32(limit))
	assert.Positive(t, onCloud.Load())
	assert.LessOrEqual(t, live.peak.Load(), int32(limit), "never more provider sessions open at once than the fleet's cap")
}

// liveCounter counts the provider sessions open at once, and the most.
type liveCounter struct{ now, peak atomic.Int32 }

// liveProvider counts its sessions in a liveCounter shared by the
// routers of a fleet.
type liveProvider struct {
	provider.Provider
	live *liveCounter
}

func (p *liveProvider) CreateSession(ctx context.Context, key string) (*provider.Session, error) {
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

// CloseIdleConnections passes the router's Close on to the wrapped
// provider's HTTP client.
func (p *liveProvider) CloseIdleConnections() {
	if ic, ok := p.Provider.(interface{ CloseIdleConnections() }); ok {
		ic.CloseIdleConnections()
	}
}

func (p *liveProvider) ReleaseSession(ctx context.Context, s *provider.Session) error {
	p.live.now.Add(-1)
	return p.Provider.ReleaseSession(ctx, s)
}
