package telemetry

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hybroute/hybroute/store"
)

// Store is a router's shared store.Store decorated with its telemetry, as
// [Provider] is its provider: every operation is a span of its own and
// every failure is counted by operation in one place, so the fleet's logic
// and the Store implementations (redisstore, a user's own) know nothing of
// telemetry. The in-process store.Memory of a router without a shared store
// is not decorated: it cannot fail and is not a dependency to watch.
type Store struct {
	store.Store
	Metrics *Metrics
	Tracer  trace.Tracer
}

// call runs one store operation inside a span and counts it when it
// failed: the fleet then falls back to in-process state for it.
func (s Store) call(ctx context.Context, op string, do func(ctx context.Context) error) error {
	ctx, span := s.Tracer.Start(ctx, "hybroute.store."+op, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("hybroute.provider", s.Metrics.provider)))
	err := do(ctx)
	if err != nil {
		span.SetStatus(codes.Error, storeStatus(err))
		s.Metrics.StoreFailed(ctx, op)
	}
	span.End()
	return err
}

// storeStatus is a failed operation's status in its span: a bounded kind,
// never the store's own text, which can name its address or carry what it
// read back.
func storeStatus(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "deadline_exceeded"
	}
	return "error"
}

func (s Store) Window(ctx context.Context, provider string) (until time.Time, reason string, err error) {
	err = s.call(ctx, "window", func(ctx context.Context) (err error) {
		until, reason, err = s.Store.Window(ctx, provider)
		return err
	})
	return until, reason, err
}

func (s Store) OpenWindow(ctx context.Context, provider string, until time.Time, reason string) error {
	return s.call(ctx, "open_window", func(ctx context.Context) error {
		return s.Store.OpenWindow(ctx, provider, until, reason)
	})
}

func (s Store) CloseWindow(ctx context.Context, provider string) error {
	return s.call(ctx, "close_window", func(ctx context.Context) error {
		return s.Store.CloseWindow(ctx, provider)
	})
}

func (s Store) TryProbe(ctx context.Context, provider string, ttl time.Duration) (got bool, err error) {
	err = s.call(ctx, "try_probe", func(ctx context.Context) (err error) {
		got, err = s.Store.TryProbe(ctx, provider, ttl)
		return err
	})
	return got, err
}

func (s Store) DoneProbe(ctx context.Context, provider string) error {
	return s.call(ctx, "done_probe", func(ctx context.Context) error {
		return s.Store.DoneProbe(ctx, provider)
	})
}

func (s Store) AcquireSlot(ctx context.Context, provider, holder string, limit int, ttl time.Duration) (got bool, err error) {
	err = s.call(ctx, "acquire_slot", func(ctx context.Context) (err error) {
		got, err = s.Store.AcquireSlot(ctx, provider, holder, limit, ttl)
		return err
	})
	return got, err
}

func (s Store) RenewSlot(ctx context.Context, provider, holder string, ttl time.Duration) (had bool, err error) {
	err = s.call(ctx, "renew_slot", func(ctx context.Context) (err error) {
		had, err = s.Store.RenewSlot(ctx, provider, holder, ttl)
		return err
	})
	return had, err
}

func (s Store) ReleaseSlot(ctx context.Context, provider, holder string) error {
	return s.call(ctx, "release_slot", func(ctx context.Context) error {
		return s.Store.ReleaseSlot(ctx, provider, holder)
	})
}

func (s Store) Epoch(ctx context.Context, provider, fresh string) (epoch string, err error) {
	err = s.call(ctx, "epoch", func(ctx context.Context) (err error) {
		epoch, err = s.Store.Epoch(ctx, provider, fresh)
		return err
	})
	return epoch, err
}
