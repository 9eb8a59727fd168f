package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/hybroutetest"
)

// TestMCPSecretsFlag: hybroute mcp --secrets loads the file, takes a
// value from the environment, and browser_type_secret types it over MCP:
// the site gets it, the client and the server's log never do. A file
// others may read stops the server at start.
func TestMCPSecretsFlag(t *testing.T) {
	hybroutetest.Parallel(t)
	const value = "mcp-s3cret pass/é"
	var mu sync.Mutex
	var posted string
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.Method == http.MethodPost {
			_ = r.ParseForm()
			mu.Lock()
			posted = r.PostForm.Get("pw")
			mu.Unlock()
			fmt.Fprintf(w, `<!doctype html><title>Welcome</title><p>Signed in with %s</p>`, r.PostForm.Get("pw"))
			return
		}
		fmt.Fprint(w, `<!doctype html><title>Sign in</title><form method="post"><label>Password <input type="password" name="pw"></label></form>`)
	}))
	t.Cleanup(site.Close)
	file := filepath.Join(t.TempDir(), "secrets.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"site": {"env": "HYB_SITE_PW", "origins": ["`+site.URL+`"]}}`), 0o600))

	c, stderr := startBinary(t, []string{"HYB_SITE_PW=" + value}, "--provider", "none", "--secrets", file, "-v")
	c.OK("browser_navigate", map[string]any{"url": site.URL + "/"})
	_, snap := c.OK("browser_snapshot", nil)
	ref := regexp.MustCompile(`textbox "Password" \[ref=(e\d+)\]`).FindStringSubmatch(snap)
	require.NotNil(t, ref, snap)
	_, text := c.OK("browser_type_secret", map[string]any{"ref": ref[1], "name": "site", "submit": true})
	assert.Contains(t, text, `Typed the secret "site"`)
	assert.NotContains(t, text, "s3cret")
	_, snap = c.OK("browser_snapshot", nil)
	assert.Contains(t, snap, "Signed in with REDACTED", "what the site echoes is scrubbed")
	assert.NotContains(t, snap, "s3cret")
	mu.Lock()
	assert.Equal(t, value, posted, "the site got the secret as typed")
	mu.Unlock()
	require.NoError(t, c.CS.Close())
	assert.NotContains(t, stderr.String(), "s3cret")

	require.NoError(t, os.Chmod(file, 0o644))
	code, _, errText := runCmd(t, map[string]string{"HYB_SITE_PW": value}, "", "mcp", "--provider", "none", "--secrets", file)
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errText, "--secrets: secrets: the file is open to others than its owner (chmod 600 it)")
}
