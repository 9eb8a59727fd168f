package metadata

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func TestIsName(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"metadata.google.internal":   true,
		"METADATA.Google.Internal.":  true,
		"metadata.goog":              true,
		"metadata":                   true,
		"metadata..":                 true,
		"instance-data":              true,
		"metadata.google.internal.x": false,
		"x.metadata":                 false,
		"metadata-service":           false,
		"":                           false,
	} {
		if got := IsName(host); got != want {
			t.Errorf("IsName(%q) = %v, want %v", host, got, want)
		}
	}
	for _, n := range Names() {
		if !IsName(n) {
			t.Errorf("IsName(%q) is false for a listed name", n)
		}
	}
	Names()[0] = "changed"
	if !IsName("metadata.google.internal") {
		t.Error("Names handed out the list itself")
	}
}

func TestIsNameAllocatesNothing(t *testing.T) {
	// Not parallel: AllocsPerRun counts the allocations of every goroutine.
	if n := testing.AllocsPerRun(100, func() { IsName("Metadata.Google.Internal.") }); n != 0 {
		t.Errorf("IsName allocates %v times", n)
	}
}

// TestTableIsWellFormed: each entry is a name or a block, never both; a
// block is written masked; Known addresses lie inside a wider block; names
// are written the way IsName compares them.
func TestTableIsWellFormed(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, e := range Table() {
		if (e.Name == "") == !e.Prefix.IsValid() {
			t.Errorf("%+v: want exactly one of Name and Prefix", e)
			continue
		}
		if e.Name != "" {
			if e.Name != strings.ToLower(strings.TrimRight(e.Name, ".")) {
				t.Errorf("name %q is not lower-case without a trailing dot", e.Name)
			}
			if seen[e.Name] {
				t.Errorf("name %q twice", e.Name)
			}
			seen[e.Name] = true
			continue
		}
		if e.Prefix != e.Prefix.Masked() {
			t.Errorf("%v is not masked", e.Prefix)
		}
		if e.Prefix.Addr().Is4In6() {
			t.Errorf("%v: write IPv4 blocks as IPv4", e.Prefix)
		}
		if e.Prefix.IsSingleIP() && len(e.Known) > 0 {
			t.Errorf("%v is one address and lists Known addresses", e.Prefix)
		}
		for _, a := range e.Known {
			if !e.Prefix.Contains(a) {
				t.Errorf("known %v is outside %v", a, e.Prefix)
			}
		}
	}
}

func TestAddrsAndHosts(t *testing.T) {
	t.Parallel()
	var hosts []string
	for _, a := range Addrs() {
		hosts = append(hosts, Host(a))
	}
	for _, want := range []string{"169.254.169.254", "169.254.170.2", "100.100.100.200", "[fd00:ec2::254]", "[fd00:a9fe:a9fe::1]", "[fe80::a9fe:a9fe]"} {
		if !slices.Contains(hosts, want) {
			t.Errorf("Addrs lacks %s: %v", want, hosts)
		}
	}
	if slices.Contains(hosts, "169.254.0.0") || slices.Contains(hosts, "[fd00:ec2::]") {
		t.Errorf("a block's base is not a single endpoint: %v", hosts)
	}
	Table()[0].Known[0] = netip.MustParseAddr("1.2.3.4")
	if !slices.Contains(Addrs(), netip.MustParseAddr("169.254.169.254")) {
		t.Error("Table handed out the table itself")
	}
}
