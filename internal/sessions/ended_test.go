package sessions

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestEndedBounded proves an Ended keeps the last ended session of the
// most recent keys only, one per key.
func TestEndedBounded(t *testing.T) {
	var es Ended[string]
	for i := range MaxEnded + 10 {
		es.Put("k"+strconv.Itoa(i), "id"+strconv.Itoa(i))
	}
	es.Put("k20", "again")
	assert.Len(t, es.m, MaxEnded)
	assert.Len(t, es.order, MaxEnded)
	assert.Empty(t, es.Get("k0"), "the oldest is forgotten")
	assert.Equal(t, "again", es.Get("k20"), "a key's last session")
	assert.Equal(t, "k20", es.order[len(es.order)-1])
}
