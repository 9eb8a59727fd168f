package hybroute

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hybroute/hybroute/netpolicy"
)

// TestRedTeam33LibraryEmptyAllowList: an allow list given to the library
// with no pattern (WithAllowedHosts(hosts...) with hosts empty, from an
// embedder's config that filtered its empty entries) is no list at all,
// which allows every host: the command fails closed, the library does not.
func TestRedTeam33LibraryEmptyAllowList(t *testing.T) {
	t.Parallel()
	var hosts []string
	r, err := New(nil, WithAllowedHosts(hosts...))
	if err == nil {
		t.Cleanup(func() { _ = r.Close() })
	}
	assert.ErrorIs(t, err, netpolicy.ErrHostRule, "an empty allow list is an error")
}
