package testlog

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestBufferCountsConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fmt.Fprintf(&b, "line %d\n", i)
		}()
	}
	wg.Wait()
	assert.Equal(t, 8, b.Count("line "))
	assert.Contains(t, b.String(), "line 7\n")
}

func TestBufferKeepsAtMostMax(t *testing.T) {
	b := Buffer{Max: 4}
	n, err := b.Write([]byte("abcdef"))
	assert.NoError(t, err)
	assert.Equal(t, 6, n)
	_, _ = b.Write([]byte("gh"))
	assert.Equal(t, "abcdef", b.String(), "the write that crosses Max is kept whole; later ones are dropped")
}
