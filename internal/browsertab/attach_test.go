package browsertab

import (
	"context"
	"errors"
	"testing"

	"github.com/chromedp/cdproto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A command that meets a tab between two documents is sent again until the
// swap is over; any other answer is the command's, at once.
func TestWhileAttachingRetriesOnlyTheSwap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	swap := &cdproto.Error{Code: -32000, Message: detachedPage}

	n := 0
	err := WhileAttaching(ctx, func() error {
		if n++; n < 3 {
			return swap
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 3, n, "sent until the page was attached")

	n = 0
	other := &cdproto.Error{Code: -32602, Message: "Invalid parameters"}
	err = WhileAttaching(ctx, func() error { n++; return other })
	assert.ErrorIs(t, err, other)
	assert.Equal(t, 1, n, "another error is not retried")

	n = 0
	err = WhileAttaching(ctx, func() error { n++; return swap })
	assert.True(t, errors.Is(err, swap))
	assert.Greater(t, n, 1, "a tab that stays detached is asked again, then reported (after attachWait), not waited on for good")

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	n = 0
	err = WhileAttaching(cctx, func() error { n++; return swap })
	assert.ErrorIs(t, err, swap)
	assert.Equal(t, 1, n, "a cancelled call does not wait")
}
