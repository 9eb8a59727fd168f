package admission

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLeastRecentSkipsBusy(t *testing.T) {
	type s struct {
		name string
		last int64
		busy bool
	}
	all := []s{{"a", 3, false}, {"b", 1, true}, {"c", 2, false}}
	idle := func(x s) (int64, bool) { return x.last, !x.busy }
	v, ok := LeastRecent(slices.Values(all), idle)
	assert.True(t, ok)
	assert.Equal(t, "c", v.name, "the oldest idle one, not the older busy one")
	_, ok = LeastRecent(slices.Values([]s{{"b", 1, true}}), idle)
	assert.False(t, ok)
}

func TestMemoryShed(t *testing.T) {
	shed, per := MemoryShed(100, 200, 4, true)
	assert.Equal(t, 0, shed, "under the budget with the new one's share")
	assert.EqualValues(t, 25, per)
	shed, _ = MemoryShed(100, 110, 4, true)
	assert.Equal(t, 1, shed, "one share over")
	shed, _ = MemoryShed(400, 100, 4, false)
	assert.Equal(t, 3, shed, "back under the budget")
	shed, _ = MemoryShed(100, 50, 0, false)
	assert.Equal(t, 1, shed, "one at least")
}

func TestEvictedTakenOnce(t *testing.T) {
	var e Evicted
	assert.False(t, e.Take("k"))
	e.Mark("k")
	assert.True(t, e.Take("k"))
	assert.False(t, e.Take("k"))
}
