package netpolicy

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hybroute/hybroute/internal/metadata"
)

// TestVerdictMetadataBlocksAreTheTable: the blocks the address classifier
// tests fast are the table's, no more and no fewer.
func TestVerdictMetadataBlocksAreTheTable(t *testing.T) {
	t.Parallel()
	var prefixes []netip.Prefix
	for _, r := range v4Metadata {
		b := [4]byte{byte(r.base >> 24), byte(r.base >> 16), byte(r.base >> 8), byte(r.base)}
		prefixes = append(prefixes, netip.PrefixFrom(netip.AddrFrom4(b), int(r.bits)))
	}
	prefixes = append(prefixes, v6Metadata...)
	assert.ElementsMatch(t, metadata.Prefixes(), prefixes, "the verdict's metadata blocks are the table's")
}
