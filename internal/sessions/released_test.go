package sessions

import (
	"fmt"
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
