package cdpconn

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestHostAllowed proves the allow list matches names and wildcards
// without matching the bare parent or a look-alike.
func TestHostAllowed(t *testing.T) {
	allowed := []string{"relay.example.test", "*.cdp.example.test"}
	for host, want := range map[string]bool{
		"relay.example.test":      true,
		"RELAY.example.test.":     true,
		"a.cdp.example.test":      true,
		"a.b.cdp.example.test":    true,
		"cdp.example.test":        false,
		"evilcdp.example.test":    false,
		"relay.example.test.evil": false,
	} {
		assert.Equal(t, want, hostAllowed(host, allowed), host)
	}
	assert.False(t, hostAllowed("x", []string{""}))
}
