package fleet

import (
	"context"
	"time"

	"github.com/hybroute/hybroute/store"
)

// Health is the provider's window and probe on the fleet's store, guarded
// as every store call is: a [store.Health], which internal/health keeps
// its window and probe in. A window is written to
// the router's own state as well, so that an outage of the store does not
// forget the windows this router opened.
type Health struct{ f *Fleet }

var _ store.Health = Health{}

// Health is the fleet's window and probe.
func (f *Fleet) Health() Health { return Health{f} }

// Window reads the provider's window; with the store away, this router's own.
func (h Health) Window(ctx context.Context, provider string) (until time.Time, reason string, err error) {
	if !h.f.call(ctx, "window", func(ctx context.Context, s store.Store) (err error) {
		until, reason, err = s.Window(ctx, provider)
		return err
	}) {
		return h.f.local.Window(ctx, provider)
	}
	return until, reason, nil
}

// OpenWindow opens the window in the store and in this router's own state.
func (h Health) OpenWindow(ctx context.Context, provider string, until time.Time, reason string) error {
	if !h.f.own {
		h.f.call(ctx, "open_window", func(ctx context.Context, s store.Store) error {
			return s.OpenWindow(ctx, provider, until, reason)
		})
	}
	return h.f.local.OpenWindow(ctx, provider, until, reason)
}

// CloseWindow closes the window in the store and in this router's own state.
func (h Health) CloseWindow(ctx context.Context, provider string) error {
	if !h.f.own {
		h.f.call(ctx, "close_window", func(ctx context.Context, s store.Store) error {
			return s.CloseWindow(ctx, provider)
		})
	}
	return h.f.local.CloseWindow(ctx, provider)
}

// TryProbe claims the probe in the store; with the store away, in this
// router's own state.
func (h Health) TryProbe(ctx context.Context, provider string, ttl time.Duration) (ok bool, err error) {
	if !h.f.call(ctx, "try_probe", func(ctx context.Context, s store.Store) (err error) {
		ok, err = s.TryProbe(ctx, provider, ttl)
		return err
	}) {
		return h.f.local.TryProbe(ctx, provider, ttl)
	}
	return ok, nil
}

// DoneProbe gives the claim back in the store and in this router's own state.
func (h Health) DoneProbe(ctx context.Context, provider string) error {
	if !h.f.own {
		h.f.call(ctx, "done_probe", func(ctx context.Context, s store.Store) error {
			return s.DoneProbe(ctx, provider)
		})
	}
	return h.f.local.DoneProbe(ctx, provider)
}
