package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/chromium"
)

// TestMCPReportsAMissingBrowserAtStart: a local browser that is missing
// or no program is reported when the server starts, with the fix (the
// flag, the variable, the package to install): with no cloud provider the
// server does not start; with one it starts, warned.
func TestMCPReportsAMissingBrowserAtStart(t *testing.T) {
	notExec := filepath.Join(t.TempDir(), "chromium")
	require.NoError(t, os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644))
	fixes := []string{"--chromium PATH", "CHROMIUM=PATH", chromium.Install()}

	code, _, stderr := runCmd(t, map[string]string{"CHROMIUM": notExec}, "", "mcp", "--provider", "none")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "hybroute mcp: no local browser, and no cloud provider, so no call could run: $CHROMIUM=\""+notExec+"\": "+notExec+" is not executable")
	for _, fix := range fixes {
		assert.Contains(t, stderr, fix)
	}

	code, _, stderr = runCmd(t, nil, "", "mcp", "--provider", "none", "--chromium", notExec)
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, `--chromium "`+notExec+`": `+notExec+" is not executable")

	// Nothing named and nothing found: where it looked.
	empty := t.TempDir()
	code, _, stderr = runCmd(t, map[string]string{"PATH": empty, "HOME": empty}, "", "mcp", "--provider", "none")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "no Chromium or Chrome found (looked on PATH for chromium-headless-shell,")
	for _, fix := range fixes {
		assert.Contains(t, stderr, fix)
	}

	// With a cloud provider the server starts (and ends with its empty
	// stdin), warned.
	_, _, stderr = runCmd(t, map[string]string{"CHROMIUM": notExec, "BROWSERBASE_API_KEY": "bb_test_key", "BROWSERBASE_PROJECT_ID": "p"}, "",
		"mcp", "--provider", "browserbase", "--provider-url", "http://127.0.0.1:9")
	assert.Contains(t, stderr, "hybroute mcp: WARNING: no local browser: private addresses, and the fallback when the cloud provider fails, will not work")
	assert.Contains(t, stderr, "hybroute mcp: cloud provider browserbase", "and it started")

	// A browser found is named.
	exe := filepath.Join(t.TempDir(), "chromium")
	require.NoError(t, os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755))
	_, _, stderr = runCmd(t, map[string]string{"CHROMIUM": exe}, "", "mcp", "--provider", "none")
	assert.Contains(t, stderr, "hybroute mcp: local browser: "+exe+"\n")

	// Every call goes to --cdp-url: no local browser is needed.
	_, _, stderr = runCmd(t, map[string]string{"CHROMIUM": notExec}, "", "mcp", "--cdp-url", "ws://127.0.0.1:9/devtools/browser/x")
	assert.NotContains(t, stderr, "no local browser")
}
