package hybroute

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// holdRoutes: /hold answers nothing until its client goes away, and
// counts the requests it holds open; /busy is a page that loads one of
// them as an image, so its load never ends.
func holdRoutes(open, arrived *atomic.Int32) func(mux *http.ServeMux, _ *site) {
	return func(mux *http.ServeMux, _ *site) {
		mux.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) {
			open.Add(1)
			arrived.Add(1)
			defer open.Add(-1)
			w.Header().Set("Content-Type", "image/png")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done() // the client's connection closed
		})
		mux.HandleFunc("/busy", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte(`<!doctype html><title>busy</title><img src="/hold?img">`))
		})
	}
}

// TestAHangUpQuietsThePage: a call whose caller goes away (a client that
// hung up) stops what it set going in the page: the load that never
// ends, the request a script made and the script that spins. No request
// of the page stays open past a second, and the session's next call runs
// on the same, quiet page.
func TestAHangUpQuietsThePage(t *testing.T) {
	requireChromium(t)
	var open, arrived atomic.Int32
	s := newSite(t, holdRoutes(&open, &arrived))
	r := newRouter(t, nil, nil)
	ctx := testCtx(t)

	// hangUp runs call with a context it cancels once n requests of the
	// page have reached /hold in all, and returns the call's error.
	hangUp := func(n int32, call func(ctx context.Context) error) error {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- call(cctx) }()
		require.Eventually(t, func() bool { return arrived.Load() >= n }, 30*time.Second, 5*time.Millisecond, "the page's request arrives")
		cancel()
		return <-done
	}
	quiet := func(what string) {
		t.Helper()
		assert.Eventually(t, func() bool { return open.Load() == 0 }, time.Second, 5*time.Millisecond,
			"%s: %d requests of the page still open a second after the hang-up", what, open.Load())
	}

	// A navigation whose page never finishes loading.
	err := hangUp(1, func(ctx context.Context) error {
		_, err := r.Navigate(ctx, "q", s.URL+"/busy", nil)
		return err
	})
	require.ErrorIs(t, err, context.Canceled)
	quiet("the load")
	var state string
	res, err := r.Exec(ctx, "q", "", func(ctx context.Context, _ *Call) (err error) {
		state, err = evalString(ctx, `document.readyState + " " + location.pathname`)
		return err
	})
	require.NoError(t, err)
	assert.False(t, res.TabReplaced)
	assert.Equal(t, "complete /busy", state, "the page stays, its load stopped")

	// A script that makes a request and then spins.
	err = hangUp(2, func(ctx context.Context) error {
		_, err := r.Exec(ctx, "q", "", func(ctx context.Context, _ *Call) error {
			_, err := evalString(ctx, `fetch("/hold?fetch"); for (;;) {}`)
			return err
		})
		return err
	})
	require.ErrorIs(t, err, context.Canceled)
	quiet("the fetch")
	res, err = r.Exec(ctx, "q", "", func(ctx context.Context, _ *Call) (err error) {
		state, err = evalString(ctx, `document.readyState + " " + location.pathname`)
		return err
	})
	require.NoError(t, err, "the script no longer spins")
	assert.False(t, res.TabReplaced, "the tab answered: it was not taken for wedged")
	assert.Equal(t, "complete /busy", state)
}
