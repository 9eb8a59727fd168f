package hybroute

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/admission"
	itel "github.com/hybroute/hybroute/internal/telemetry"
	"github.com/hybroute/hybroute/internal/testlog"
)

// waitQueued waits until q has n openings waiting.
func waitQueued(t *testing.T, q *admission.Queue, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return q.Queued() == n }, 10*time.Second, time.Millisecond)
}

// TestTabQueueServesInArrivalOrder: openings that wait get their turn
// first come, first served.
func TestTabQueueServesInArrivalOrder(t *testing.T) {
	q := newTabQueue(1)
	_, first, err := q.Wait(context.Background(), admission.Terms{})
	require.NoError(t, err)
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			_, done, err := q.Wait(context.Background(), admission.Terms{})
			if !assert.NoError(t, err) {
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			done(time.Millisecond)
		})
		waitQueued(t, q, i+1) // the next one arrives after this one queued
	}
	first(time.Millisecond)
	wg.Wait()
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5}, order)
}

// TestTabQueueRefusesWhatItCannotServeInTime: a call whose foreseen wait
// is longer than its budget allows is refused at once with ErrBusy, not
// left to time out in the queue; one that chose to wait waits; and a
// queue that learns openings are slow refuses the waiting calls it can no
// longer serve in time.
func TestTabQueueRefusesWhatItCannotServeInTime(t *testing.T) {
	q := newTabQueue(1)
	q.SetMean(time.Minute) // one opening is slow
	_, hold, err := q.Wait(context.Background(), admission.Terms{})
	require.NoError(t, err)

	caller, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	terms := admission.Terms{Caller: caller, Run: 90 * time.Second} // 30 s left for the wait
	waited, _, err := q.Wait(context.Background(), terms)
	require.ErrorIs(t, err, ErrBusy)
	var be *BusyError
	require.ErrorAs(t, err, &be)
	assert.Zero(t, waited, "refused at once")
	assert.Equal(t, time.Minute, be.Estimate)
	assert.Contains(t, err.Error(), "queued ahead")
	assert.Zero(t, q.Queued(), "a refused call does not hold a place")

	// By choice, the same call waits its turn.
	got := make(chan error, 1)
	go func() {
		_, done, err := q.Wait(context.Background(), admission.Terms{Caller: caller, Run: 90 * time.Second, Wait: true})
		if err == nil {
			done(0)
		}
		got <- err
	}()
	waitQueued(t, q, 1)

	// A call that queued while openings looked fast is told as soon as an
	// opening shows they are not.
	q.SetMean(time.Millisecond)
	refused := make(chan error, 1)
	go func() {
		_, done, err := q.Wait(context.Background(), terms)
		if err == nil {
			done(0)
		}
		refused <- err
	}()
	waitQueued(t, q, 2)
	hold(10 * time.Minute) // the mean becomes minutes; the slot passes to the first in line
	err = <-refused
	require.ErrorIs(t, err, ErrBusy)
	require.ErrorAs(t, err, &be)
	assert.NotZero(t, be.Estimate, "refused on the queue's foresight, not after waiting its budget out")
	require.NoError(t, <-got, "the call that chose to wait got its turn")
}

// TestTabQueueCallerGoneLeavesTheQueue: a waiting opening whose caller
// went away leaves the queue without taking a turn.
func TestTabQueueCallerGoneLeavesTheQueue(t *testing.T) {
	q := newTabQueue(1)
	_, hold, err := q.Wait(context.Background(), admission.Terms{})
	require.NoError(t, err)
	caller, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		_, _, err := q.Wait(context.Background(), admission.Terms{Caller: caller})
		got <- err
	}()
	waitQueued(t, q, 1)
	cancel()
	require.ErrorIs(t, <-got, context.Canceled)
	assert.Zero(t, q.Queued())
	hold(0)
	_, done, err := q.Wait(context.Background(), admission.Terms{})
	require.NoError(t, err, "the slot is free again")
	done(0)
}

// TestBurstOfSessionsSucceedsOrIsBusy: many new local sessions at once,
// each with a short budget for its wait and a long one for its run: each
// either runs or is refused with ErrBusy; none fails on a deadline, which
// is what a wait that counted against the call's page time gave.
func TestBurstOfSessionsSucceedsOrIsBusy(t *testing.T) {
	requireChromium(t)
	probe, popts := newTelemetryProbe()
	r := newRouter(t, nil, &testlog.Buffer{}, popts...)
	ctx := testCtx(t)
	require.NoError(t, r.Warm(ctx))
	const n = 16
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			// 1 s for the wait, 30 s for the run.
			cctx, cancel := context.WithTimeout(ctx, 31*time.Second)
			defer cancel()
			_, errs[i] = r.Exec(cctx, "burst"+strconv.Itoa(i), "1", func(ctx context.Context, call *Call) error {
				_, err := chromedp.Run(ctx, chromedp.Evaluate[int]("1"))
				return err
			}, RunTimeout(30*time.Second))
		})
	}
	wg.Wait()
	var ok, busy int
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, ErrBusy):
			busy++
			assert.NotErrorIs(t, err, context.DeadlineExceeded, "session %d: a busy answer is not a timeout", i)
		default:
			t.Errorf("session %d: neither ran nor was refused as busy: %v", i, err)
		}
	}
	t.Logf("%d ran, %d were refused as busy", ok, busy)
	assert.Positive(t, ok)
	assert.EqualValues(t, busy, probe.value(t, itel.MetricTabQueueWait, "outcome", "busy"), "each busy answer's wait is recorded as such")
}
