package hybroute

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/hybroute/hybroute/internal/testlog"
)

// TestReleaseDuringANavigationSaysReleased releases a session at random
// moments of a navigation to a slow page, on two sessions side by side:
// the call either ran or failed with ErrReleased, never with the browser's
// word for the browser context or target the release closed (the toolset
// fuzzer met "Failed to find browser context" this way).
func TestReleaseDuringANavigationSaysReleased(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	s := newSite(t, func(mux *http.ServeMux, _ *site) {
		mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
			ms, _ := strconv.Atoi(r.URL.Query().Get("ms"))
			select {
			case <-time.After(time.Duration(ms) * time.Millisecond):
			case <-r.Context().Done():
			}
			servePage(w, "revenue", r.URL.Path)
		})
	})
	r := newRouter(t, nil, &testlog.Buffer{})
	rounds := 10
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			key := fmt.Sprintf("rel%d", g)
			for i := range rounds {
				// Warm: the session exists before the navigation it is
				// released under, as in the fuzzer's sequence.
				_, err := r.Exec(testCtx(t), key, "", nil)
				if err != nil && !errors.Is(err, ErrReleased) {
					t.Errorf("round %d: warm call: %v", i, err)
				}
				done := make(chan error, 1)
				go func() {
					// With a run budget of its own, as the toolset gives
					// every call: the run's context ends before the
					// release is told.
					_, err := r.Navigate(testCtx(t), key, s.url("127.0.0.1", fmt.Sprintf("/slow?ms=%d", 100+i*13%400)), nil, RunTimeout(30*time.Second))
					done <- err
				}()
				// Not a timing assertion: the release lands somewhere in
				// the call, wherever that is on this machine.
				time.Sleep(time.Duration(i*7%120) * time.Millisecond)
				assert.NoError(t, r.Release(testCtx(t), key))
				if err := <-done; err != nil && !errors.Is(err, ErrReleased) {
					t.Errorf("round %d: a navigation the release cut short: %v", i, err)
				}
			}
		})
	}
	wg.Wait()
}
