// Package teardown is the end of one session: one ordered list of steps,
// run once, stage by stage.
package teardown

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// ReleaseTimeout bounds one release: the provider's API call, a tab's
// close.
const ReleaseTimeout = 10 * time.Second

// A session ends by one ordered list of steps, whichever part of the
// router added each one (the session's maker, the fallback, the fleet,
// telemetry) and in whatever order they were added: the stage of a step,
// not the order of its adding, says when it runs.

// Stage is when a step of a session's end runs: stage by stage, and in
// the order they were added within one.
type Stage int

const (
	// Count: the session stops counting as open, first, so a gauge
	// never reports a session that is ending.
	Count Stage = iota
	// Tab: what the tab holds is saved (a profile) and the tab closes,
	// while the browser is still there.
	Tab
	// Provider: the provider's session is given back, once nothing
	// drives it.
	Provider
	// Slot: the fleet's concurrency slot is freed last, once the
	// provider session it stood for is gone.
	Slot
)

// step is one step of a session's end.
type step struct {
	stage Stage
	run   func(context.Context) error
}

// Steps is the end of one session: its steps run once, whoever asks and
// however often. A caller that asks while they run waits for them. Its zero
// value has no steps.
type Steps struct {
	mu    sync.Mutex
	steps []step
	done  bool
	once  sync.Once
	err   error
}

// Add puts a step into the session's end. A step added once the end has
// run runs at once, so nothing a late part made is left behind.
func (t *Steps) Add(stage Stage, run func(context.Context) error) {
	t.mu.Lock()
	if !t.done {
		t.steps = append(t.steps, step{stage: stage, run: run})
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	_ = run(context.Background())
}

// Run runs every step, stage by stage, each whatever the ones before it
// returned, and joins their errors. Later calls return the same error.
func (t *Steps) Run(ctx context.Context) error {
	t.once.Do(func() {
		t.mu.Lock()
		t.done = true
		steps := slices.Clone(t.steps)
		t.mu.Unlock()
		slices.SortStableFunc(steps, func(a, b step) int { return cmp.Compare(a.stage, b.stage) })
		errs := make([]error, 0, len(steps))
		for _, s := range steps {
			errs = append(errs, s.run(ctx))
		}
		t.err = errors.Join(errs...)
	})
	return t.err
}
