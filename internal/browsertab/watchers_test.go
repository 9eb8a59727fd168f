package browsertab

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWatchersStartOnTheWaitGroup(t *testing.T) {
	var ran atomic.Int32
	w := Watchers{Guard: func() { ran.Add(1) }, Dialogs: func() { ran.Add(10) }}
	var wg sync.WaitGroup
	w.Start(&wg, false)
	wg.Wait()
	assert.EqualValues(t, 11, ran.Load(), "the wait group waited for both")
	w.Ended()
	assert.EqualValues(t, 22, ran.Load())
}
