package metadata

import "testing"

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
