package redisstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/redistest"
	"github.com/hybroute/hybroute/redisstore"
)

// Values written straight into Redis, as another program, a bug or an
// attacker with its password could: a probe claim with no expiry, slot
// holders that expire in a thousand years, a ten-year window with a reason
// of 4 MiB. The store cuts the claim and the holders to the caller's
// lease when it next meets them, reads only the head of the reason, and
// the router's repair of a window (a close and a shorter open) leaves
// exactly what it wrote. The router's
// half (its cap on windows, its cleaning of reasons) is tested in the
// hybroute package on a store that holds the same values.
func TestHostileKeysAreCutToOneLease(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := client(t, srv.Addr)
	s := redisstore.New(c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	key := func(what string) string { return "hybroute:{P}:" + what }
	const ttl = 2 * time.Second

	require.NoError(t, c.Set(ctx, key("probe"), "1", 0).Err())
	ok, err := s.TryProbe(ctx, "P", ttl)
	require.NoError(t, err)
	assert.False(t, ok, "the claim is held")
	left, err := c.PTTL(ctx, key("probe")).Result()
	require.NoError(t, err)
	assert.True(t, left > 0 && left <= ttl, "the claim with no expiry got one lease: %v", left)

	far := float64(time.Now().AddDate(1000, 0, 0).UnixMilli())
	require.NoError(t, c.ZAdd(ctx, key("slots"), redis.Z{Score: far, Member: "ghost-1"}, redis.Z{Score: far, Member: "ghost-2"}).Err())
	ok, err = s.AcquireSlot(ctx, "P", "h", 2, ttl)
	require.NoError(t, err)
	assert.False(t, ok, "the ghosts fill the cap until their cut leases end")
	ends, err := c.ZMScore(ctx, key("slots"), "ghost-1", "ghost-2").Result()
	require.NoError(t, err)
	bound := float64(time.Now().Add(ttl + time.Second).UnixMilli()) // a second for the two clocks of one machine
	for i, end := range ends {
		assert.LessOrEqual(t, end, bound, "ghost-%d ends within one lease", i+1)
	}
	deadline := time.Now().Add(10 * ttl)
	for {
		ok, err = s.AcquireSlot(ctx, "P", "h", 2, ttl)
		require.NoError(t, err)
		if ok {
			break
		}
		require.True(t, time.Now().Before(deadline), "the ghosts never expired")
		time.Sleep(ttl / 10)
	}

	evil := "HTTP 429\n\x1b[2J" + strings.Repeat("A\x00\r\n", 1<<20)
	require.NoError(t, c.Set(ctx, key("backoff"), evil, 10*365*24*time.Hour).Err())
	until, reason, err := s.Window(ctx, "P")
	require.NoError(t, err)
	assert.Greater(t, time.Until(until), 9*365*24*time.Hour, "the store reports what it holds; the router caps it")
	assert.True(t, strings.HasPrefix(evil, reason) && len(reason) <= 1024, "the store reads the head of a reason only: %d bytes of %d", len(reason), len(evil))
	require.NoError(t, s.CloseWindow(ctx, "P"))
	require.NoError(t, s.OpenWindow(ctx, "P", time.Now().Add(time.Minute), "HTTP 429"))
	left, err = c.PTTL(ctx, key("backoff")).Result()
	require.NoError(t, err)
	assert.True(t, left > 0 && left <= time.Minute, "the repaired window: %v", left)
	until, reason, err = s.Window(ctx, "P")
	require.NoError(t, err)
	assert.Equal(t, "HTTP 429", reason)
	assert.LessOrEqual(t, time.Until(until), time.Minute)
}
