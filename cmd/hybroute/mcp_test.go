package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hybroute/hybroute/hybroutetest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/internal/agenttest"
	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/testenv"
	"github.com/hybroute/hybroute/internal/testlog"
	"github.com/hybroute/hybroute/mcpserver"
	"github.com/hybroute/hybroute/mcpserver/mcptest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if built {
		if bin, err := buildBinary(); err == nil {
			_ = os.RemoveAll(filepath.Dir(bin))
		}
	}
	os.Exit(code)
}

// built is set once buildBinary ran, so TestMain knows to remove its output.
var built bool

// buildBinary builds the command with the test hooks (loopback-only
// egress, a static resolver) once per test binary.
var buildBinary = sync.OnceValues(func() (string, error) {
	built = true
	dir, err := os.MkdirTemp("", "hybroute-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "hybroute")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "hybroutetest", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", &buildError{out: string(out), err: err}
	}
	return bin, nil
})

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

// startBinary runs "hybroute mcp args..." over stdio and connects the SDK's
// client to it.
func startBinary(t *testing.T, envv []string, args ...string) (*mcptest.Client, *testlog.Buffer) {
	t.Helper()
	testenv.RequireChromium(t)
	bin, err := buildBinary()
	require.NoError(t, err)
	cmd := exec.Command(bin, append([]string{"mcp"}, args...)...)
	cmd.Env = append(os.Environ(), envv...)
	stderr := &testlog.Buffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "v0"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	require.NoError(t, err, "stderr: %s", stderr)
	t.Cleanup(func() {
		_ = cs.Close()
		assert.NotContains(t, stderr.String(), "TEST EGRESS VIOLATION", "the local browser reached beyond loopback")
	})
	return &mcptest.Client{T: t, CS: cs}, stderr
}

func TestMCPOverStdioBinary(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewSite(t)
	c, stderr := startBinary(t, nil, "--provider", "none")
	mcptest.Exercise(t, c, site.Port)
	_, text := c.OK("browser_close", nil)
	assert.Contains(t, text, "Closed")
	require.NoError(t, c.CS.Close())
	assert.Contains(t, stderr.String(), "hybroute mcp: no cloud provider: every call runs on the local Chromium")
}

func TestMCPOverStdioBinaryReportsTheFallback(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewSite(t)
	// No cloud browser is needed: every create answers 429.
	api := cloudtest.NewServer(t, cloudtest.Browserbase, "ws://127.0.0.1:9/devtools/browser/none",
		cloudtest.WithAPIKey("bb_stdio_test_key_0123456789"), cloudtest.WithProjectID("proj-stdio"))
	api.OnCreate(cloudtest.RateLimited("17"))
	c, stderr := startBinary(t, []string{"BROWSERBASE_API_KEY=bb_stdio_test_key_0123456789", "BROWSERBASE_PROJECT_ID=proj-stdio"},
		"--provider", "browserbase", "--provider-url", api.URL)
	res, text := c.OK("browser_navigate", map[string]any{"url": site.URL(agenttest.PublicHost, "/")})
	assert.Contains(t, text, "fallback from cloud")
	assert.Contains(t, text, `Page: "Corner Shop"`)
	assert.Equal(t, true, res.Meta[mcpserver.MetaWhere].(map[string]any)["fallback_from_cloud"])
	assert.EqualValues(t, 1, api.Creates())
	require.NoError(t, c.CS.Close())
	logs := stderr.String()
	assert.Contains(t, logs, "falling back to local Chromium")
	assert.NotContains(t, logs, "bb_stdio_test_key_0123456789", "the API key never reaches the logs")
}

// TestMCPMaxResultBytesFlag: --max-result-bytes sets where browser_exec's
// result is cut.
func TestMCPMaxResultBytesFlag(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewSite(t)
	c, _ := startBinary(t, nil, "--provider", "none", "--max-result-bytes", "64")
	c.OK("browser_navigate", map[string]any{"url": site.URL("127.0.0.1", "/page2")})
	_, text := c.OK("browser_exec", map[string]any{"code": `"x".repeat(1000)`})
	assert.Contains(t, text, `Result: "`+strings.Repeat("x", 63)+` [result cut at 64 of 1002 bytes;`)
}

func TestMCPInputToolsOverStdioBinary(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewInputSite(t)
	c, _ := startBinary(t, nil, "--provider", "none", "--upload-dir", mcptest.FilesToUpload(t), "--dialogs", "model")
	mcptest.ExerciseInput(t, c, site.URL)
}

// TestMCPToolFlagsAreChecked: a bad --dialogs or --upload-dir stops the
// server at start, with what is wrong.
func TestMCPToolFlagsAreChecked(t *testing.T) {
	hybroutetest.Parallel(t)
	file := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--dialogs", "maybe"}, `--dialogs "maybe": want dismiss, accept or model`},
		{[]string{"--upload-dir", filepath.Join(t.TempDir(), "none")}, "--upload-dir: stat"},
		{[]string{"--upload-dir", file}, "is not a directory"},
	} {
		code, _, stderr := runCmd(t, nil, "", append([]string{"mcp", "--provider", "none"}, tc.args...)...)
		assert.Equal(t, exitFailure, code, tc.args)
		assert.Contains(t, stderr, tc.want, tc.args)
	}
	for in, want := range map[string]hybroute.DialogPolicy{"": {}, "dismiss": {}, "Accept": {Accept: true}, "model": {Hold: true}} {
		got, err := dialogsFlag(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
}
