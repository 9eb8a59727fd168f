package hybroute

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/floor"
	"github.com/hybroute/hybroute/netpolicy"
)

// TestWSPatternsOfTheBlockList: the guard's WebSocket rules name every
// blocked host and wildcard (with any run of trailing dots, which the
// matcher tells apart) and single address, in the block list's order; a
// wider prefix and the allow list cannot be written as such a rule.
func TestWSPatternsOfTheBlockList(t *testing.T) {
	t.Parallel()
	rules, err := netpolicy.ParseHostRules([]string{"allowed.test"}, []string{"Bad.test", "*.evil.test", "10.1.2.3", "[::1]", "10.0.0.0/8"})
	require.NoError(t, err)
	assert.Equal(t, []string{"ws{s}?://bad.test{.}*:*/*", "ws{s}?://*.evil.test{.}*:*/*", "ws{s}?://10.1.2.3:*/*", "ws{s}?://[::1]:*/*"}, floor.BlockedWebSockets(rules))
	assert.Nil(t, floor.BlockedWebSockets(nil))
}
