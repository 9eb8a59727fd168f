package sessions

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestReleasedSinceTellsAReleaseOfTheKeyDuringACall(t *testing.T) {
	c := New[int]()
	c.M["a"] = 1
	since := c.Releases()
	assert.False(t, c.ReleasedSince("a", since), "nothing was released yet")

	c.Take("b", "b::local")
	assert.False(t, c.ReleasedSince("a", since), "another key's release is not this call's")
	assert.True(t, c.ReleasedSince("b::local", since))

	c.Take("a")
	assert.True(t, c.ReleasedSince("a", since), "released after the call started")
	assert.False(t, c.ReleasedSince("a", c.Releases()), "a call that starts after the release was not cut by it")
}

func TestReleasedSinceStaysBounded(t *testing.T) {
	c := New[int]()
	since := c.Releases()
	for i := range 3 * maxTakenKept {
		c.Take(fmt.Sprintf("k%d", i), fmt.Sprintf("k%d::local", i))
	}
	assert.LessOrEqual(t, len(c.takenAt), maxTakenKept+2)
	last := fmt.Sprintf("k%d", 3*maxTakenKept-1)
	assert.True(t, c.ReleasedSince(last, since), "the newest releases are remembered")
}

// TestHeldTakesOnlyALiveSession: Held holds the cached session of a key
// when it is live and the router open, and nothing otherwise.
func TestHeldTakesOnlyALiveSession(t *testing.T) {
	var mu sync.Mutex
	closed, holds := false, 0
	c := New[int]()
	l := &Life[int]{Mu: &mu, Closed: func() bool { return closed }, Reap: func() {},
		Live: func(e int) bool { return e > 0 }, Hold: func(int) { holds++ }}
	c.M["live"], c.M["dead"] = 1, -1
	e, ok := c.Held(l, "live")
	assert.True(t, ok)
	assert.Equal(t, 1, e)
	assert.Equal(t, 1, holds)
	_, ok = c.Held(l, "dead")
	assert.False(t, ok, "a dead session is Acquire's to drop")
	_, ok = c.Held(l, "none")
	assert.False(t, ok)
	closed = true
	_, ok = c.Held(l, "live")
	assert.False(t, ok, "a closed router holds nothing")
	assert.Equal(t, 1, holds)
}
