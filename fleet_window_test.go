package hybroute

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/provider"
	"github.com/hybroute/hybroute/store"
)

// Two routers in one process on one store share the provider's window and
// its probe: a provider that answers 429 is asked once for both, however
// many new keys each of them opens, and no call fails.
func TestFleetSharedWindowOneCreate(t *testing.T) {
	rows := []struct {
		name  string
		store func(t *testing.T) store.Store
	}{
		{"memory", func(*testing.T) store.Store { return &store.Memory{} }},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			// A loaded machine answers slowly: a store call cut short would
			// send its router to its own in-process window.
			opts := []Option{WithStore(row.store(t)), WithStoreTimeout(20 * time.Second)}
			w, _ := outageWorld(t, opts...)
			other := &countingProvider{Provider: provider.NewBrowserbase(testAPIKey, "proj-1", provider.WithBaseURL(w.api.URL))}
			r2 := newRouter(t, other, w.logs, append([]Option{WithLocalTimeout(5 * time.Minute)}, opts...)...)
			const retryAfter = 120 // longer than the test: one window
			rl := cloudtest.RateLimited(strconv.Itoa(retryAfter))
			w.api.AlwaysOnCreate(&rl)

			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			var (
				mu   sync.Mutex
				errs []error
				wg   sync.WaitGroup
			)
			for i, r := range []*Router{w.r, r2, w.r, r2, w.r, r2} {
				wg.Go(func() {
					res, err := r.Navigate(ctx, "k"+strconv.Itoa(i), w.site.url(publicHost, "/p"+strconv.Itoa(i)), nil)
					if err == nil && !res.FallbackFromCloud {
						err = errors.New("a new key ran on the cloud while the provider answers 429")
					}
					if err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			t.Logf("%s: 6 new keys on 2 routers: %d failed, %d provider creates, %d warning lines",
				row.name, len(errs), w.api.Creates(), w.logs.Count(fallbackLine))
			require.Empty(t, errs, "every call runs, on the local floor")
			assert.Equal(t, int64(1), w.api.Creates(), "one create for both routers: the window and the probe are the store's")
			assert.Equal(t, 1, w.logs.Count(fallbackLine), "one warning: only the router that asked saw the failure")
		})
	}
}
