package browsertab

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A call's context ends only after its caller's: one its deadline ended
// always finds the caller's error set, and reads as the caller's deadline.
// The tab's end ends the call too, and a call's end leaves the tab alone.
func TestBindEndsAfterTheCaller(t *testing.T) {
	t.Parallel()
	for i := range 200 {
		tab, endTab := context.WithCancel(context.Background())
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%5)*time.Millisecond)
		cctx, stop := Bind(tab, ctx)
		dl, ok := cctx.Deadline()
		want, _ := ctx.Deadline()
		require.True(t, ok)
		require.Equal(t, want, dl)
		select {
		case <-cctx.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the call outlived its caller's deadline by 10 s")
		}
		require.ErrorIs(t, ctx.Err(), context.DeadlineExceeded, "the call ended before its caller did (round %d)", i)
		require.ErrorIs(t, cctx.Err(), context.DeadlineExceeded)
		require.ErrorIs(t, context.Cause(cctx), context.DeadlineExceeded)
		stop()
		require.ErrorIs(t, cctx.Err(), context.DeadlineExceeded, "an ended call's error does not change")
		require.NoError(t, tab.Err(), "a call's end must not end the tab")
		cancel()
		endTab()
	}

	tab, endTab := context.WithCancel(context.Background())
	cctx, stop := Bind(tab, context.Background())
	defer stop()
	_, ok := cctx.Deadline()
	assert.False(t, ok)
	endTab()
	<-cctx.Done()
	assert.ErrorIs(t, cctx.Err(), context.Canceled, "the tab's end ends the call")

	// Ended by its own cancel before the caller's deadline: Canceled, and
	// it stays so after the deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	cctx, stop = Bind(context.Background(), ctx)
	child, cancelChild := context.WithTimeout(cctx, time.Hour)
	defer cancelChild()
	stop()
	<-ctx.Done()
	assert.ErrorIs(t, cctx.Err(), context.Canceled)
	assert.ErrorIs(t, child.Err(), context.Canceled)

	// A context derived from the call ends with the caller's deadline too,
	// with it as its cause.
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	cctx, stop = Bind(context.Background(), ctx)
	defer stop()
	child, cancelChild = context.WithTimeout(cctx, time.Hour)
	defer cancelChild()
	select {
	case <-child.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a context derived from the call outlived the caller's deadline")
	}
	assert.ErrorIs(t, context.Cause(child), context.DeadlineExceeded)
}
