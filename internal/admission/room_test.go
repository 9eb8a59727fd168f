package admission

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var errNoRoom = errors.New("no room")

func noRoom(b Busy) error { return errNoRoom }

// terms are a call's terms with wait left for room.
func terms(t *testing.T, wait time.Duration) Terms {
	ctx, cancel := context.WithTimeout(context.Background(), wait+busyMargin)
	t.Cleanup(cancel)
	return Terms{Caller: ctx}
}

func TestRoomServesWhenASessionIsFree(t *testing.T) {
	var r Room
	var free atomic.Bool
	done := make(chan error, 1)
	go func() {
		_, err := r.Wait(context.Background(), terms(t, time.Minute), 1, func() (bool, time.Duration) { return free.Load(), 0 }, noRoom)
		done <- err
	}()
	require.Eventually(t, func() bool { return r.Waiting() == 1 }, 10*time.Second, time.Millisecond)
	r.Free() // a change that gives no room: it waits on
	require.Eventually(t, func() bool { return r.Waiting() == 1 }, 10*time.Second, time.Millisecond)
	free.Store(true)
	r.Free()
	require.NoError(t, <-done)
	assert.Zero(t, r.Waiting())
}

func TestRoomRefusesAtOnceWhatItCannotServe(t *testing.T) {
	var r Room
	never := func() (bool, time.Duration) { return false, 0 }
	var got Busy
	busy := func(b Busy) error { got = b; return errNoRoom }

	// No wait allowed.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := r.Wait(context.Background(), Terms{Caller: ctx, Run: time.Minute}, 1, never, busy)
	require.ErrorIs(t, err, errNoRoom)
	assert.Zero(t, w)

	// Calls measured longer than the wait allowed.
	r.Held(time.Hour)
	w, err = r.Wait(context.Background(), terms(t, time.Minute), 1, never, busy)
	require.ErrorIs(t, err, errNoRoom)
	assert.Zero(t, w)
	assert.Equal(t, time.Hour, got.Estimate)

	// WaitForTurn waits anyway, up to its allowance.
	tm := terms(t, 50*time.Millisecond)
	tm.Wait = true
	w, err = r.Wait(context.Background(), tm, 1, never, busy)
	require.ErrorIs(t, err, errNoRoom)
	assert.Positive(t, w)
	assert.Zero(t, got.Estimate, "it waited its whole allowance")
}

func TestRoomCallerGoneEndsTheWait(t *testing.T) {
	var r Room
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := r.Wait(context.Background(), Terms{Caller: ctx}, 1, func() (bool, time.Duration) { return false, 0 }, noRoom)
		done <- err
	}()
	require.Eventually(t, func() bool { return r.Waiting() == 1 }, 10*time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	assert.Zero(t, r.Waiting())
}

// An idle session too young to end is asked about again when it is old
// enough, with nothing freed meanwhile.
func TestRoomAsksAgainWhenToldTo(t *testing.T) {
	var r Room
	var asked atomic.Int32
	_, err := r.Wait(context.Background(), terms(t, time.Minute), 1, func() (bool, time.Duration) {
		return asked.Add(1) == 3, time.Millisecond
	}, noRoom)
	require.NoError(t, err)
	assert.EqualValues(t, 3, asked.Load())
}
