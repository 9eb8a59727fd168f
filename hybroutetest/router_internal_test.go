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
