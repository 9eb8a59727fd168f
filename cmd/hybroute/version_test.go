package main

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVersion: the version printed is the module's when it was installed
// at a version, and the VCS revision when it was built from a checkout;
// "devel" only when the build recorded neither.
func TestVersion(t *testing.T) {
	vcs := func(rev, at, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "-buildmode", Value: "exe"}, {Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: at}, {Key: "vcs.modified", Value: modified}}
	}
	const rev = "6e0713663ab95a0a0accc99f5852c6ffdb959f67"
	for _, tc := range []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"go install @version", debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "v1.4.0"},
		{"go install @pseudo-version", debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261206074751-06cb246abcde"}}, "v0.0.0-20261206074751-06cb246abcde"},
		{"a checkout, clean", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, "2026-12-06T08:04:48Z", "false")},
			"devel (git 6e0713663ab9, 2026-12-06T08:04:48Z)"},
		{"a checkout with changes, its tag", debug.BuildInfo{Main: debug.Module{Version: "v1.4.1-0.20261206080448-6e0713663ab9+dirty"}, Settings: vcs(rev, "2026-12-06T08:04:48Z", "true")},
			"v1.4.1-0.20261206080448-6e0713663ab9+dirty (git 6e0713663ab9, 2026-12-06T08:04:48Z, modified)"},
		{"nothing recorded (-buildvcs=false)", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
	} {
		assert.Equal(t, tc.want, versionOf(&tc.bi), tc.name)
	}

	code, out, _ := runCmd(t, nil, "", "version")
	require.Equal(t, exitOK, code)
	assert.Equal(t, "hybroute "+version()+"\n", out)
	assert.NotContains(t, out, "(devel)")
}
