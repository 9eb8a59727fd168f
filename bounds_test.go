package hybroute

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	itel "github.com/hybroute/hybroute/internal/telemetry"
	"github.com/hybroute/hybroute/internal/testlog"
)

// evalOne runs a trivial call on key's session.
func evalOne(ctx context.Context, r *Router, key string) (Result, error) {
	return r.Exec(ctx, key, "1", func(ctx context.Context, call *Call) error {
		_, err := chromedp.Run(ctx, chromedp.Evaluate[int]("1"))
		return err
	})
}

// sessionKeys are the cache keys of the router's live sessions.
func sessionKeys(r *Router) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ks []string
	for k := range r.sess.M {
		ks = append(ks, strings.TrimSuffix(k, LocalSuffix))
	}
	return ks
}

// TestMaxSessionsEvictsLeastRecentlyUsed: past WithMaxSessions, a new
// session ends the least recently used idle one, whose next call runs in a
// fresh session and says so; with every session busy, a new one is
// refused with ErrBusy.
func TestMaxSessionsEvictsLeastRecentlyUsed(t *testing.T) {
	requireChromium(t)
	r := newRouter(t, nil, &testlog.Buffer{}, WithMaxSessions(2))
	ctx := testCtx(t)
	for _, k := range []string{"a", "b"} {
		_, err := evalOne(ctx, r, k)
		require.NoError(t, err)
	}
	_, err := evalOne(ctx, r, "a") // b is now the least recently used
	require.NoError(t, err)
	res, err := evalOne(ctx, r, "c")
	require.NoError(t, err)
	assert.False(t, res.Evicted)
	assert.ElementsMatch(t, []string{"a", "c"}, sessionKeys(r), "b, the least recently used, made room")
	assert.Len(t, browserContexts(t, ctx, r.side), 2, "its browser context is gone")

	res, err = evalOne(ctx, r, "b")
	require.NoError(t, err, "an evicted session's next call runs in a fresh one")
	assert.True(t, res.Evicted, "and says so")
	assert.ElementsMatch(t, []string{"b", "c"}, sessionKeys(r))
	res, err = evalOne(ctx, r, "b")
	require.NoError(t, err)
	assert.False(t, res.Evicted, "said once")

	// Both sessions busy: a third cannot make room.
	hold := make(chan struct{})
	running := make(chan struct{}, 2)
	done := make(chan error, 2)
	for _, k := range []string{"b", "c"} {
		go func() {
			_, err := r.Exec(ctx, k, "1", func(context.Context, *Call) error {
				running <- struct{}{}
				<-hold
				return nil
			})
			done <- err
		}()
	}
	<-running
	<-running
	_, err = evalOne(ctx, r, "d")
	require.ErrorIs(t, err, ErrBusy)
	assert.Contains(t, err.Error(), "WithMaxSessions")
	close(hold)
	require.NoError(t, <-done)
	require.NoError(t, <-done)
}

// TestMaxLocalMemoryEvictsIdleLocalSessions: a local browser over its
// memory budget ends idle local sessions, least recently used first,
// before it opens a new one.
func TestMaxLocalMemoryEvictsIdleLocalSessions(t *testing.T) {
	requireChromium(t)
	// One byte: the browser is always over it, so every new session ends
	// the idle ones.
	probe, popts := newTelemetryProbe()
	r := newRouter(t, nil, &testlog.Buffer{}, append(popts, WithMaxLocalMemory(1))...)
	ctx := testCtx(t)
	_, err := evalOne(ctx, r, "a")
	require.NoError(t, err)
	assert.Positive(t, r.side.Memory(), "the browser's memory is measured")
	_, err = evalOne(ctx, r, "b")
	require.NoError(t, err)
	assert.Equal(t, []string{"b"}, sessionKeys(r), "a, idle, made room for b")
	res, err := evalOne(ctx, r, "a")
	require.NoError(t, err)
	assert.True(t, res.Evicted)
	assert.Equal(t, []string{"a"}, sessionKeys(r))
	assert.EqualValues(t, 2, probe.value(t, itel.MetricEvictions, "reason", evictMaxMemory))
}
