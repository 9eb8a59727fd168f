package netpolicy_test

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/netpolicy"
)

// TestMetadataIsTheTableReadOnly: every endpoint of the table the package
// shows is metadata to the classifier, and what a caller does to its copy
// does not reach the table.
func TestMetadataIsTheTableReadOnly(t *testing.T) {
	t.Parallel()
	table := netpolicy.Metadata()
	require.NotEmpty(t, table)
	for _, e := range table {
		require.NotEmpty(t, e.Who)
		require.True(t, (e.Name != "") != e.Prefix.IsValid(), "exactly one of Name and Prefix: %+v", e)
		if e.Name != "" {
			c, ok := netpolicy.ClassifyName(e.Name)
			assert.True(t, ok, e.Name)
			assert.Equal(t, netpolicy.ClassMetadata, c, e.Name)
			continue
		}
		assert.Equal(t, netpolicy.ClassMetadata, netpolicy.ClassifyAddr(e.Prefix.Addr()), e.Prefix)
		for _, a := range e.Known {
			assert.True(t, e.Prefix.Contains(a), "%v outside %v", a, e.Prefix)
			assert.Equal(t, netpolicy.ClassMetadata, netpolicy.ClassifyAddr(a), a)
		}
	}
	for _, want := range []string{"169.254.169.254", "fd00:a9fe:a9fe::1", "fd00:ec2::254"} {
		assert.Equal(t, netpolicy.ClassMetadata, netpolicy.ClassifyAddr(netip.MustParseAddr(want)), want)
	}

	// Writing to the copy changes nothing.
	var known int
	for i := range table {
		if len(table[i].Known) > 0 {
			known = i
		}
		table[i].Name, table[i].Prefix = "changed.example", netip.Prefix{}
	}
	require.NotEmpty(t, table[known].Known)
	table[known].Known[0] = netip.MustParseAddr("8.8.8.8")
	again := netpolicy.Metadata()
	assert.NotEqual(t, table, again)
	for _, e := range again {
		assert.NotEqual(t, "changed.example", e.Name)
		for _, a := range e.Known {
			assert.NotEqual(t, netip.MustParseAddr("8.8.8.8"), a)
		}
	}
	c, ok := netpolicy.ClassifyName("changed.example")
	assert.False(t, ok, "%v", c)
}
