package remotetab

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSingleConnectionDialsOnce proves the allocator of a single-connection
// session refuses a second dial without a packet sent.
func TestSingleConnectionDialsOnce(t *testing.T) {
	calls := 0
	dial := func(context.Context) (int, error) { calls++; return calls, nil }
	once := DialOnce(true, dial)
	_, err := once(context.Background())
	require.NoError(t, err)
	_, err = once(context.Background())
	assert.ErrorIs(t, err, ErrSecondConnection)
	assert.Equal(t, 1, calls)
	many := DialOnce(false, dial)
	for range 2 {
		_, err = many(context.Background())
		require.NoError(t, err)
	}
	assert.Equal(t, 3, calls)
}
