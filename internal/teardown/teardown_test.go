package teardown

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
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
	var td Steps
	td.Add(Slot, step("slot", nil))
	td.Add(Tab, step("profile", nil))
	td.Add(Provider, step("provider", errProvider))
	td.Add(Tab, step("tab", errTab))
	td.Add(Count, step("count", nil))

	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = td.Run(context.Background()) })
	}
	wg.Wait()
	assert.Equal(t, []string{"count", "profile", "tab", "provider", "slot"}, order)
	for _, err := range errs {
		assert.ErrorIs(t, err, errTab)
		assert.ErrorIs(t, err, errProvider)
	}

	// A step added once the end has run runs at once.
	td.Add(Slot, step("late", nil))
	assert.Equal(t, []string{"count", "profile", "tab", "provider", "slot", "late"}, order)
	assert.ErrorIs(t, td.Run(context.Background()), errTab, "a second run runs nothing again")
	assert.Len(t, order, 6)
}
