package agent_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hybroute/hybroute/agent"
	"github.com/hybroute/hybroute/internal/agenttest"
	"github.com/hybroute/hybroute/route"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// downloadSite serves a page of download links on 127.0.0.1:
//
//	/file        a CSV sent as an attachment named "re port.csv"
//	/sneaky      an attachment whose suggested name climbs out of the directory
//	/big         an attachment larger than the tests' bound (200,000 bytes)
//	/to-meta     a redirect to a cloud metadata address
//	/to-private  a redirect to the site's loopback address (private for a cloud browser)
func downloadSite(t *testing.T) (*httptest.Server, string) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/file":
			w.Header().Set("Content-Disposition", `attachment; filename="re port.csv"`)
			w.Header().Set("Content-Type", "text/csv")
			fmt.Fprint(w, "a,b\n1,2\n")
		case "/sneaky":
			w.Header().Set("Content-Disposition", `attachment; filename="../../.bashrc"`)
			fmt.Fprint(w, "echo hi\n")
		case "/big":
			w.Header().Set("Content-Disposition", `attachment; filename="big.bin"`)
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(make([]byte, 200000))
		case "/to-meta":
			http.Redirect(w, r, "http://169.254.169.254/latest/file.csv", http.StatusFound)
		case "/to-private":
			http.Redirect(w, r, "http://127.0.0.1:"+r.Host[strings.LastIndexByte(r.Host, ':')+1:]+"/file", http.StatusFound)
		default:
			agenttest.ServePage(w, "files", nil)
		}
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return srv, port
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".hybroute-partial-") {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out
}

func clickLink(t *testing.T, ts *agent.Toolset, s, name string) agent.Result {
	t.Helper()
	snap := mustOK(t, callTool(t, ts, s, "browser_snapshot", nil))
	ref := refOf(`link "`+name+`"`, snap.Text)
	require.NotEmpty(t, ref, snap.Text)
	return callTool(t, ts, s, "browser_click", map[string]string{"ref": ref})
}

// TestDownloadsOnTheLocalBrowser: a click and a navigation that start a
// download keep the session; the file is saved in the download directory
// under its cleaned name and reported; a file past the bound is not kept;
// a download that redirects to a metadata address is refused.
func TestDownloadsOnTheLocalBrowser(t *testing.T) {
	_, port := downloadSite(t)
	base := "http://127.0.0.1:" + port
	dir := t.TempDir()
	r := agenttest.NewRouter(t, nil)
	ts := newToolset(t, r, agent.WithDownloadDir(dir), agent.WithMaxDownloadBytes(100000))
	const s = "dl"
	mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": base + "/"}))

	click := mustOK(t, clickLink(t, ts, s, "Report"))
	assert.Contains(t, click.Text, `saved "re port.csv" (8 bytes, text/csv`)
	assert.Contains(t, click.Text, filepath.Join(dir, "re port.csv"))
	assert.Equal(t, "Files", click.Where.Title, "the page stays")
	data, err := os.ReadFile(filepath.Join(dir, "re port.csv"))
	require.NoError(t, err)
	assert.Equal(t, "a,b\n1,2\n", string(data))

	nav := mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": base + "/file"}))
	assert.Contains(t, nav.Text, `saved "re port (2).csv"`, "a second file never replaces the first")
	assert.Equal(t, "Files", nav.Where.Title)

	sneaky := mustOK(t, clickLink(t, ts, s, "Sneaky"))
	assert.Contains(t, sneaky.Text, "saved ")
	big := mustOK(t, clickLink(t, ts, s, "Big"))
	assert.Contains(t, big.Text, `"big.bin" too big`)

	meta := clickLink(t, ts, s, "Meta")
	assert.True(t, meta.IsError, meta.Text)
	assert.Contains(t, meta.Text, "blocked: the page tried to load http://169.254.169.254/latest/file.csv")

	assert.Equal(t, []string{"_.._.bashrc", "re port (2).csv", "re port.csv"}, dirNames(t, dir), "nothing else is written, nothing outside")
	_, err = os.Stat(filepath.Join(filepath.Dir(dir), ".bashrc"))
	assert.ErrorIs(t, err, os.ErrNotExist)

	list := mustOK(t, callTool(t, ts, s, "browser_downloads", nil))
	assert.Contains(t, list.Text, `saved "re port.csv"`)
	assert.Contains(t, list.Text, `saved "re port (2).csv"`)
	assert.Contains(t, list.Text, `"big.bin" too big`)

	// The session goes on as before (the refused page left the tab blank).
	mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": base + "/"}))
	snap := mustOK(t, callTool(t, ts, s, "browser_snapshot", nil))
	assert.Contains(t, snap.Text, `heading "Files"`)

	pdf := mustOK(t, callTool(t, ts, s, "browser_pdf_save", map[string]any{"filename": "../files"}))
	assert.Contains(t, pdf.Text, "Saved the page as PDF: "+filepath.Join(dir, "_files.pdf"))
	head, err := os.ReadFile(filepath.Join(dir, "_files.pdf"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(head), "%PDF-"), "a PDF")

	// Closing the session removes its staging directory.
	mustOK(t, callTool(t, ts, s, "browser_close", nil))
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		assert.False(t, strings.HasPrefix(e.Name(), ".hybroute-partial-"), e.Name())
	}
}

// TestDownloadsWithoutADirectory: downloads are refused, the result says
// why, and the session goes on; browser_pdf_save is an error.
func TestDownloadsWithoutADirectory(t *testing.T) {
	_, port := downloadSite(t)
	r := agenttest.NewRouter(t, nil)
	ts := newToolset(t, r)
	const s = "no-dir"
	mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": "http://127.0.0.1:" + port + "/"}))
	click := mustOK(t, clickLink(t, ts, s, "Report"))
	t.Log(click.Text)
	assert.Contains(t, click.Text, `"re port.csv" refused`)
	assert.Contains(t, click.Text, "no download directory")
	assert.Contains(t, click.Text, "the page stayed as it was")
	assert.NotContains(t, click.Text, "take a new snapshot")
	nav := mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": "http://127.0.0.1:" + port + "/file"}))
	assert.Contains(t, nav.Text, "no download directory")
	mustOK(t, callTool(t, ts, s, "browser_snapshot", nil))
	pdf := callTool(t, ts, s, "browser_pdf_save", nil)
	assert.True(t, pdf.IsError)
	assert.Contains(t, pdf.Text, "browser_pdf_save is off on this server: the operator set no download directory")
}

// TestDownloadsOnTheCloud: the cloud browser's disk is the provider's, so
// its downloads are refused and the result says so; a download that
// redirects to a private address is refused by the guard; a PDF is
// printed over CDP and written here.
func TestDownloadsOnTheCloud(t *testing.T) {
	_, port := downloadSite(t)
	dir := t.TempDir()
	cloud := agenttest.NewCloud(t)
	r := agenttest.NewRouter(t, cloud.Provider)
	ts := newToolset(t, r, agent.WithDownloadDir(dir))
	const s = "cloud-dl"
	nav := mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": "http://" + agenttest.PublicHost + ":" + port + "/"}))
	require.Equal(t, route.Cloud, nav.Where.Route)

	click := mustOK(t, clickLink(t, ts, s, "Report"))
	assert.Equal(t, route.Cloud, click.Where.Route)
	t.Log(click.Text)
	assert.Contains(t, click.Text, `"re port.csv" refused`)
	assert.Contains(t, click.Text, "the cloud browser")

	priv := clickLink(t, ts, s, "Private")
	assert.True(t, priv.IsError, priv.Text)
	assert.Contains(t, priv.Text, "blocked: the page tried to load http://127.0.0.1:"+port+"/file")

	mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": "http://" + agenttest.PublicHost + ":" + port + "/"}))
	pdf := mustOK(t, callTool(t, ts, s, "browser_pdf_save", nil))
	assert.Equal(t, route.Cloud, pdf.Where.Route)
	assert.Contains(t, pdf.Text, filepath.Join(dir, "Files.pdf"))
	assert.Equal(t, []string{"Files.pdf"}, dirNames(t, dir))
}
