package main

import (
	"bytes"
	"fmt"
	"image/jpeg"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybroute/hybroute/hybroutetest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/mcpserver/mcptest"
)

// TestMCPFilesNetworkAndScreenshots: over stdio, with --download-dir, a
// click that starts a download saves the file and says so, the page's
// requests list the guard's refusal, a screenshot is a scaled JPEG, and
// the page is saved as a PDF in the directory; with --record-dir,
// browser_close writes the session's record.
func TestMCPFilesNetworkAndScreenshots(t *testing.T) {
	hybroutetest.Parallel(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/file":
			w.Header().Set("Content-Disposition", `attachment; filename="data.csv"`)
			w.Header().Set("Content-Type", "text/csv")
			fmt.Fprint(w, "x\n1\n")
		default:
			fmt.Fprint(w, `<!doctype html><title>Files</title><a href="/file">Get data</a>
<script>fetch("http://169.254.169.254/latest/").catch(() => {})</script>`)
		}
	}))
	t.Cleanup(srv.Close)
	dir, recDir := t.TempDir(), t.TempDir()
	c, _ := startBinary(t, nil, "--provider", "none", "--download-dir", dir, "--record-dir", recDir)

	c.OK("browser_navigate", map[string]any{"url": srv.URL + "/"})
	_, snap := c.OK("browser_snapshot", nil)
	_, text := c.OK("browser_click", map[string]any{"ref": mcptest.RefIn(t, snap, `link "Get data"`)})
	assert.Contains(t, text, `saved "data.csv" (4 bytes, text/csv`)
	data, err := os.ReadFile(filepath.Join(dir, "data.csv"))
	require.NoError(t, err)
	assert.Equal(t, "x\n1\n", string(data))
	_, text = c.OK("browser_downloads", nil)
	assert.Contains(t, text, `saved "data.csv"`)

	_, text = c.OK("browser_network_requests", nil)
	assert.Contains(t, text, "http://169.254.169.254/latest/ (fetch): refused by the guard (metadata): it targets a cloud metadata endpoint")

	res, _ := c.OK("browser_screenshot", map[string]any{"format": "jpeg", "quality": 50, "max_width": 320})
	var img *mcp.ImageContent
	for _, ct := range res.Content {
		if i, ok := ct.(*mcp.ImageContent); ok {
			img = i
		}
	}
	require.NotNil(t, img)
	assert.Equal(t, "image/jpeg", img.MIMEType)
	decoded, err := jpeg.Decode(bytes.NewReader(img.Data))
	require.NoError(t, err)
	assert.Equal(t, [2]int{320, 180}, [2]int{decoded.Bounds().Dx(), decoded.Bounds().Dy()})

	_, text = c.OK("browser_pdf_save", map[string]any{"filename": "page"})
	assert.Contains(t, text, filepath.Join(dir, "page.pdf"))
	pdf, err := os.ReadFile(filepath.Join(dir, "page.pdf"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(pdf), "%PDF-"))

	bad := c.Call("browser_screenshot", map[string]any{"format": "gif"})
	assert.True(t, bad.IsError)

	// --record-dir: browser_close writes the session's record.
	c.OK("browser_close", nil)
	recs, err := filepath.Glob(filepath.Join(recDir, "hybroute-*.html"))
	require.NoError(t, err)
	assert.Len(t, recs, 1, "one record of the session")
}

// TestMCPDownloadDirMustExist: a --download-dir that is not a directory
// stops the server at start.
func TestMCPDownloadDirMustExist(t *testing.T) {
	hybroutetest.Parallel(t)
	code, _, stderr := runCmd(t, nil, "", "mcp", "--provider", "none", "--download-dir", filepath.Join(t.TempDir(), "missing"))
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "--download-dir")
}

// TestMCPDownloadBoundFlags: the session's download bounds and the keeping
// of its files are flags (and so config file keys).
func TestMCPDownloadBoundFlags(t *testing.T) {
	c := writeConfig(t, "c.yaml", "max-downloads-per-minute: 3\nkeep-downloads: true\n")
	code, out, errOut := runCmd(t, nil, "", "mcp", "--config", c, "--max-session-downloads", "5", "--print-config")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, `max-downloads-per-minute: "3"`)
	assert.Contains(t, out, `max-session-downloads: "5"`)
	assert.Contains(t, out, `max-session-download-bytes: "104857600"`)
	assert.Contains(t, out, `keep-downloads: "true"`)
}
