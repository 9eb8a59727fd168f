package profiles

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestProfileNamesStayInTheDirectory: whatever a key holds, its profile
// is one plain child of the directory, and different keys never share one.
func TestProfileNamesStayInTheDirectory(t *testing.T) {
	t.Parallel()
	keys := []string{"", ".", "..", "../../etc/passwd", "/abs/path", `a\b`, "a/b", "a_b", "alice", "Alice",
		"alice::local", strings.Repeat("x", 500), "ü→☃", "a\x00b", "con"}
	seen := map[string]string{}
	for _, k := range keys {
		n := Name(k)
		assert.NotContains(t, n, "/", "%q", k)
		assert.NotContains(t, n, `\`, "%q", k)
		assert.NotContains(t, n, ".", "%q", k)
		assert.LessOrEqual(t, len(n), prefixLen+25, "%q", k)
		assert.Equal(t, n, filepath.Base(filepath.Join("/profiles", n)), "%q", k)
		if other, ok := seen[n]; ok {
			t.Errorf("keys %q and %q share the profile %s", k, other, n)
		}
		seen[n] = k
	}
}
