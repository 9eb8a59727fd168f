// Package metadata names the cloud metadata services that hybroute blocks
// on every route. The URL verdicts, the in-browser guard and the scanner of
// URL literals all read this one list, so that they cannot disagree.
//
// The metadata addresses (169.254.0.0/16, 100.100.100.200, …) are decided
// by the address classifier of the root package; this package holds the
// names that reach such a service without DNS, or through a resolver that
// answers them only inside a cloud.
package metadata

import "strings"

// names are the host names of metadata services, lower-case, without a
// trailing dot: GCP's (metadata.google.internal, metadata.goog, and the bare
// metadata its resolvers answer) and AWS's instance-data.
var names = [...]string{"metadata.google.internal", "metadata.goog", "metadata", "instance-data"}

// Names returns the host names of the metadata services, lower-case, without
// a trailing dot. The slice is a copy.
func Names() []string { return append([]string(nil), names[:]...) }

// IsName reports whether host names a metadata service: one of Names in any
// case, with or without trailing dots. It does not allocate.
func IsName(host string) bool {
	h := strings.TrimRight(host, ".")
	for _, n := range names {
		if strings.EqualFold(h, n) {
			return true
		}
	}
	return false
}
