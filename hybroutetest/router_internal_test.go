package hybroutetest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The leftover check sees the Router's own browser: while it runs, its
// processes and its temporary profile are found by the mark; after Close
// they are gone, which is what the check waits for.
//
// It runs alone: the mark it looks for is the number of the Router it
// made last, which a Router made beside it would change.
func TestLeftoversFindTheRoutersBrowser(t *testing.T) {
	site := NewSite(t, nil)
	r := NewRouter(t, nil)
	mark := fmt.Sprintf("%d-%d", os.Getpid(), routers.Load())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := r.Navigate(ctx, "s", site.URL("/"), nil)
	require.NoError(t, err)

	var l leftovers
	l.note(mark)
	require.NotEmpty(t, l.pids, "the local Chromium carries the mark")
	require.Len(t, l.profiles, 1, "its temporary profile is found")
	for _, pid := range l.pids {
		assert.True(t, running(pid))
	}
	require.NoError(t, r.Close())
	assert.Eventually(t, func() bool {
		for _, pid := range l.pids {
			if running(pid) {
				return false
			}
		}
		_, err := os.Stat(l.profiles[0])
		return os.IsNotExist(err)
	}, leftoverWait, 50*time.Millisecond, "Close ends them all")
}

// recordTB is t with its errors and cleanups kept, so a test can run the
// cleanups itself and read what they reported.
type recordTB struct {
	testing.TB
	errs     []string
	cleanups []func()
}

func (r *recordTB) Helper()          {}
func (r *recordTB) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recordTB) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recordTB) finish() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// A goroutine started during the test and still running when the Router
// has closed fails the test, named.
func TestLeftoverGoroutineFailsTheTest(t *testing.T) {
	tb := &recordTB{TB: t}
	r := NewRouter(tb, nil)
	stop := make(chan struct{})
	defer close(stop)
	go leftBehind(stop)
	require.NoError(t, r.Close())
	tb.finish()
	require.Len(t, tb.errs, 1)
	assert.Contains(t, tb.errs[0], "goroutines left after the Router closed")
	assert.Contains(t, tb.errs[0], "leftBehind")
}

func leftBehind(stop chan struct{}) { <-stop }
