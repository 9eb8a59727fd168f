package netpolicy

import (
	"net/netip"

	"github.com/hybroute/hybroute/internal/metadata"
)

// MetadataEndpoint is one cloud metadata service that every route blocks,
// or one block of addresses that holds such services. Exactly one of Name
// and Prefix is set.
type MetadataEndpoint struct {
	// Who runs it, for the reader.
	Who string
	// Name is a host name that reaches the service without DNS, or
	// through a resolver that answers it only inside a cloud: lower-case,
	// without a trailing dot.
	Name string
	// Prefix is the block of addresses; a single address is a /32 or
	// /128.
	Prefix netip.Prefix
	// Known are the well-known single addresses inside a Prefix wider
	// than one address.
	Known []netip.Addr
}

// Metadata returns the metadata table: every endpoint [ClassifyAddr] and
// [ClassifyName] call [ClassMetadata], and that a guard's patterns are
// derived from. The slice and its Known slices are copies: the table
// itself cannot be changed.
func Metadata() []MetadataEndpoint {
	t := metadata.Table() // copies already
	out := make([]MetadataEndpoint, len(t))
	for i, e := range t {
		out[i] = MetadataEndpoint(e)
	}
	return out
}
