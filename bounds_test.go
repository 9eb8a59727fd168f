package hybroute

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/sessions"
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
// fresh session and says so; with every session busy, a new one waits for
// one to become idle, and says how long it waited.
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
	type answer struct {
		res Result
		err error
	}
	d := make(chan answer, 1)
	go func() {
		res, err := evalOne(ctx, r, "d")
		d <- answer{res, err}
	}()
	require.Eventually(t, func() bool { return r.room.Waiting() == 1 }, 30*time.Second, 5*time.Millisecond,
		"the new session waits for room")
	close(hold)
	require.NoError(t, <-done)
	require.NoError(t, <-done)
	got := <-d
	require.NoError(t, got.err, "a session that became idle made room")
	assert.Positive(t, got.res.WaitedForRoom, "the result says how long it waited")
	assert.Len(t, sessionKeys(r), 2)
}

// TestMaxSessionsBusyWhenTheWaitCannotServe: with every session in a call,
// a new session is refused at once when its call allows no wait, or when
// the calls' measured time foresees a wait longer than it allows; and
// after the whole wait when no session became idle within it.
func TestMaxSessionsBusyWhenTheWaitCannotServe(t *testing.T) {
	requireChromium(t)
	r := newRouter(t, nil, &testlog.Buffer{}, WithMaxSessions(1))
	ctx := testCtx(t)
	hold := make(chan struct{})
	running := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := r.Exec(ctx, "a", "1", func(context.Context, *Call) error {
			close(running)
			<-hold
			return nil
		})
		done <- err
	}()
	<-running
	defer func() { close(hold); require.NoError(t, <-done) }()
	var be *BusyError

	// No wait allowed: the run's budget takes all the caller's time.
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := r.Exec(short, "b", "1", func(context.Context, *Call) error { return nil }, RunTimeout(5*time.Second))
	require.ErrorAs(t, err, &be)
	assert.Equal(t, 1, be.Sessions)
	assert.Zero(t, be.Waited, "refused at once")

	// Calls measured an hour long: a minute's wait cannot serve.
	r.room.SetMean(time.Hour)
	_, err = evalOne(ctx, r, "c")
	require.ErrorAs(t, err, &be)
	assert.Zero(t, be.Waited, "refused at once")
	assert.Equal(t, time.Hour, be.Estimate)
	assert.Contains(t, err.Error(), "WithMaxSessions")

	// Nothing measured: it waits its whole allowance, then is refused.
	r.room.SetMean(0)
	waitCtx, cancelWait := context.WithTimeout(ctx, 700*time.Millisecond)
	defer cancelWait()
	_, err = r.Exec(waitCtx, "e", "1", func(context.Context, *Call) error { return nil }, RunTimeout(400*time.Millisecond))
	require.ErrorAs(t, err, &be)
	assert.Positive(t, be.Waited, "it waited for room")
	assert.Zero(t, be.Estimate)
	assert.Equal(t, []string{"a"}, sessionKeys(r), "the held session stays")
}

// TestMaxSessionsBurstIsServedWithinTheWait: more new sessions at once than
// the cap, with short calls, are all served within their wait: each waits
// for one to become idle and ends it. (150 MCP clients at --max-sessions
// 50 scaled down.)
func TestMaxSessionsBurstIsServedWithinTheWait(t *testing.T) {
	requireChromium(t)
	const limit, clients = 2, 8
	r := newRouter(t, nil, &testlog.Buffer{}, WithMaxSessions(limit))
	ctx := testCtx(t)
	var wg sync.WaitGroup
	var busy, waited atomic.Int32
	errs := make(chan error, clients)
	for i := range clients {
		wg.Go(func() {
			res, err := evalOne(ctx, r, fmt.Sprint("k", i))
			switch {
			case errors.Is(err, ErrBusy):
				busy.Add(1)
			case err != nil:
				errs <- err
			case res.WaitedForRoom > 0:
				waited.Add(1)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.Zero(t, busy.Load(), "every client is served within its wait")
	assert.Positive(t, waited.Load(), "some waited for room")
	assert.LessOrEqual(t, len(sessionKeys(r)), limit)
	t.Logf("%d clients at cap %d: %d waited for room, %d busy", clients, limit, waited.Load(), busy.Load())
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
	assert.EqualValues(t, 2, probe.value(t, itel.MetricEvictions, "reason", sessions.EvictMaxMemory))
}
