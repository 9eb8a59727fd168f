package download

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRedTeam33NamesStayInTheDirectory: names a page may suggest
// (Content-Disposition, a download attribute) or a URL may give land in
// the directory, as a file, never hidden, never over another file.
func TestRedTeam33NamesStayInTheDirectory(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, "link.txt")))
	names := []string{
		"../../x", `..\..\x`, "/etc/passwd", "..", ".", "...", " .. ", "./.bashrc",
		"a/../../b", "%2e%2e%2fx", "..%2F..%2Fx", "x\x00y", "x\ny", "\u202egnp.exe",
		"\uff0e\uff0e\uff0fx", "\u2024\u2024/x", "C:\\Windows\\x", "CON", "link.txt",
		".hybroute-partial-abc", strings.Repeat("a", 5000) + ".txt", strings.Repeat("é", 300),
		"\u200b", "\ufeff.bashrc",
	}
	for _, n := range names {
		for _, u := range []string{"", "http://h/dir/" + n + "?q=1"} {
			c := CleanName(n, u)
			assert.NotContains(t, c, "/", "%q", n)
			assert.False(t, strings.HasPrefix(c, "."), "hidden: %q -> %q", n, c)
			p, err := Reserve(dir, c)
			require.NoError(t, err, "%q", n)
			assert.Equal(t, filepath.Clean(dir), filepath.Dir(p), "%q", n)
			fi, err := os.Lstat(p)
			require.NoError(t, err)
			assert.True(t, fi.Mode().IsRegular(), "%q", n)
		}
	}
	target, err := os.Readlink(filepath.Join(dir, "link.txt"))
	require.NoError(t, err)
	assert.Equal(t, "/etc/passwd", target, "the link in the way is left alone")
}
