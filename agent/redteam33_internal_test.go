package agent

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Red team of issue 33, item 6: browser_file_upload's answers for paths
// outside the upload directory, by spelling.

func uploadText(t *testing.T, dir, p string) string {
	t.Helper()
	_, err := uploadPaths(dir, []string{p})
	require.Error(t, err, p)
	return strings.ReplaceAll(err.Error(), strconv.Quote(p), "PATH")
}

// TestRedTeam33UploadSpellingsHeld: spellings that leave the directory by
// their text read the same whether the file is there or not.
func TestRedTeam33UploadSpellingsHeld(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "in.txt"), []byte("x"), 0o600))
	require.NoError(t, os.Symlink("loop", filepath.Join(dir, "loop")))
	for _, pair := range [][2]string{
		{"/etc/passwd/", "/nonexistent/"},
		{"/etc//passwd", "/etc//nonexistent"},
		{"/etc/./passwd", "/etc/./nonexistent"},
		{"in.txt/../../../../etc/passwd", "in.txt/../../../../etc/nonexistent"},
		{"nope/../../../../etc/passwd", "nope/../../../../etc/nonexistent"},
		{"./../../../../etc/passwd", "./../../../../etc/nonexistent"},
		{"../../../../etc/passwd/.", "../../../../etc/nonexistent/."},
		{"/ETC/PASSWD", "/ETC/NONEXISTENT"},
		{"loop/../../../../etc/passwd", "loop/../../../../etc/nonexistent"},
		{"/proc/self/root/etc/passwd", "/proc/self/root/etc/nonexistent"},
		{"../" + filepath.Base(dir) + "-x/../../etc/passwd", "../" + filepath.Base(dir) + "-x/../../etc/nonexistent"},
	} {
		assert.Equal(t, uploadText(t, dir, pair[0]), uploadText(t, dir, pair[1]), "%s and %s", pair[0], pair[1])
	}
	// Inside the directory, names that are no file read the same.
	assert.Equal(t, uploadText(t, dir, "~root/.ssh/id_rsa"), uploadText(t, dir, "%2e%2e/etc/passwd"))
	assert.Equal(t, uploadText(t, dir, "loop"), uploadText(t, dir, "missing"))
}

// TestRedTeam33UploadDirectoryLinkOracle: a link to a directory inside
// the upload directory (an operator's shortcut to a shared folder, or to
// /) makes every path under it a question the answer tells: "outside"
// when it exists, "no such file" when not. The known limits name a link
// that leads out, but not that one link to a directory opens the whole
// tree beneath it to probing (here /etc/shadow and ~/.ssh).
func TestRedTeam33UploadDirectoryLinkOracle(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Symlink("/", filepath.Join(dir, "share")))
	for _, pair := range [][2]string{
		{"share/etc/passwd", "share/etc/nonexistent"},
		{"share/root", "share/nonexistent"},
	} {
		assert.Equal(t, uploadText(t, dir, pair[0]), uploadText(t, dir, pair[1]), "%s and %s", pair[0], pair[1])
	}
}
