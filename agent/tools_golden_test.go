package agent_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/hybroute/hybroute/hybroutetest"

	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/agent"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/tools.golden.json from the current tool list")

// TestToolListIsUnchanged pins the tool list as a model sees it (names,
// descriptions, schemas, order) byte for byte: a model's prompts and a
// client's cache key on it, so a change must be deliberate (go test -run
// TestToolListIsUnchanged -update rewrites the file).
func TestToolListIsUnchanged(t *testing.T) {
	hybroutetest.Parallel(t)
	// The schema is kept as its text: an indented RawMessage would hide
	// a change of its bytes.
	type tool struct{ Name, Description, InputSchema string }
	var tools []tool
	for _, x := range agent.Catalog() { // every tool, offered or not
		tools = append(tools, tool{x.Name, x.Description, string(x.InputSchema)})
	}
	got, err := json.MarshalIndent(tools, "", "\t")
	require.NoError(t, err)
	got = append(got, '\n')
	path := filepath.Join("testdata", "tools.golden.json")
	if *updateGolden {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
}
