package download

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCleanName: a name a page suggests becomes one safe path element:
// no separator, no control character, not hidden, bounded, never empty.
func TestCleanName(t *testing.T) {
	assert.Equal(t, "_.._etc_passwd", CleanName("/../etc/passwd", ""))
	assert.Equal(t, "a_b_c.txt", CleanName(`a\b:c.txt`, ""))
	assert.Equal(t, "bashrc", CleanName("..bashrc", ""))
	assert.Equal(t, "report.pdf", CleanName("re\x00port\u200b.pdf", ""))
	assert.Equal(t, "data.csv", CleanName("", "http://x.test/files/data.csv?token=1#f"))
	assert.Equal(t, "download", CleanName("  ", ""))
	long := CleanName(strings.Repeat("é", 200)+".zip", "")
	assert.LessOrEqual(t, len(long), maxFileName)
	assert.True(t, strings.HasSuffix(long, ".zip"), long)
}

// TestReserveNeverReplaces: a second file of the same name gets a number,
// and the first stays as it was.
func TestReserveNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	first, err := Reserve(dir, "a.txt")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(first, []byte("one"), 0o644))
	second, err := Reserve(dir, "a.txt")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "a (2).txt"), second)
	got, err := os.ReadFile(first)
	require.NoError(t, err)
	assert.Equal(t, "one", string(got))
}
