package browsertab

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A page that opens dialogs in a loop is reported by its first ones and a
// count, once.
func TestDialogsAreBounded(t *testing.T) {
	var d Dialogs
	for range maxDialogsKept + 5 {
		d.Add(Dialog{Type: "alert"})
	}
	got := d.Take()
	require.Len(t, got, maxDialogsKept+1)
	assert.Equal(t, "dropped", got[maxDialogsKept].Type)
	assert.Contains(t, got[maxDialogsKept].Message, "5 more dialogs")
	assert.Empty(t, d.Take(), "taken dialogs are forgotten")
}

// A message is cut on a rune boundary, within its bound, with its real length.
func TestCutMessage(t *testing.T) {
	assert.Equal(t, "short", CutMessage("short", 64))
	long := strings.Repeat("é", 100) // 200 bytes
	cut := CutMessage(long, 64)
	assert.LessOrEqual(t, len(cut), 64)
	assert.True(t, utf8.ValidString(cut))
	assert.True(t, strings.HasSuffix(cut, "[200 bytes]"), cut)
}
