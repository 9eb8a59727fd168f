package hybroute

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hybroute/hybroute/internal/browsertab"
)

// The stage of a step, not the order it was added in, says when it runs;
// every step runs once, whatever the others return, and a caller that asks
// while the steps run waits for them.
func TestTeardownRunsByStageOnce(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var order []string
	step := func(name string, err error) func(context.Context) error {
		return func(context.Context) error {
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			return err
		}
	}
	errTab := errors.New("tab close failed")
	errProvider := errors.New("provider release failed")
	var td teardown
	td.add(endSlot, step("slot", nil))
	td.add(endTab, step("profile", nil))
	td.add(endProvider, step("provider", errProvider))
	td.add(endTab, step("tab", errTab))
	td.add(endCount, step("count", nil))

	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = td.run(context.Background()) })
	}
	wg.Wait()
	assert.Equal(t, []string{"count", "profile", "tab", "provider", "slot"}, order)
	for _, err := range errs {
		assert.ErrorIs(t, err, errTab)
		assert.ErrorIs(t, err, errProvider)
	}

	// A step added once the end has run runs at once.
	td.add(endSlot, step("late", nil))
	assert.Equal(t, []string{"count", "profile", "tab", "provider", "slot", "late"}, order)
	assert.ErrorIs(t, td.run(context.Background()), errTab, "a second run runs nothing again")
	assert.Len(t, order, 6)
}

// drop ends a session as every end does: it is marked released, so the
// calls still on it fail with ErrReleased, and its steps run once however
// often it is ended after.
func TestDropMarksTheSessionReleased(t *testing.T) {
	t.Parallel()
	r := newRouter(t, nil, nil)
	e := &entry{key: "s", route: RouteCloud, h: browsertab.NewHandle(fakeTab{})}
	ends := 0
	e.ending.add(endProvider, func(context.Context) error { ends++; return nil })
	r.mu.Lock()
	r.sess.m[e.key] = e
	r.mu.Unlock()

	r.drop(e)
	assert.True(t, e.released.Load())
	r.mu.Lock()
	_, kept := r.sess.m[e.key]
	r.mu.Unlock()
	assert.False(t, kept)
	assert.NoError(t, e.end())
	assert.Equal(t, 1, ends)
}
