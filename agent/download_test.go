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
	"sync/atomic"
	"testing"
	"time"

	"github.com/hybroute/hybroute/hybroutetest"

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
	hybroutetest.Parallel(t)
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

	// Closing the session removes its staging directory and the files it
	// downloaded; the PDF the model asked for stays.
	mustOK(t, callTool(t, ts, s, "browser_close", nil))
	require.NoError(t, ts.Close()) // waits for the files being moved
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		assert.False(t, strings.HasPrefix(e.Name(), ".hybroute-partial-"), e.Name())
	}
	assert.Equal(t, []string{"_files.pdf"}, dirNames(t, dir))
}

// TestDownloadSprayIsCutOff: a page whose timer starts a 1 MiB download
// every 300 ms, with no tool call, from its own frame (a link it clicks)
// or from frames it adds, is cut off at the session's rate; the next
// result says so, the directory holds no more than the bound, and the
// files go when the session is closed.
func TestDownloadSprayIsCutOff(t *testing.T) {
	var served atomic.Int32
	endlessGone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/endless" {
			// A download that never ends, until the browser cancels it.
			w.Header().Set("Content-Disposition", `attachment; filename="endless.bin"`)
			w.Header().Set("Content-Type", "application/octet-stream")
			chunk := make([]byte, 64<<10)
			for {
				if _, err := w.Write(chunk); err != nil {
					close(endlessGone)
					return
				}
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					close(endlessGone)
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}
		if r.URL.Path == "/blob" {
			served.Add(1)
			w.Header().Set("Content-Disposition", `attachment; filename="blob.bin"`)
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(make([]byte, 1<<20))
			return
		}
		start := `const a = document.createElement("a"); a.href = "/blob?n=" + n++; a.download = "blob.bin"; document.body.append(a); a.click(); a.remove();`
		switch r.URL.Query().Get("via") {
		case "frame":
			start = `const f = document.createElement("iframe"); f.src = "/blob?n=" + n++; document.body.append(f);`
		case "endless":
			start = `if (!n++) { const f = document.createElement("iframe"); f.src = "/endless"; document.body.append(f); }`
		case "popup":
			start = `if (!n++) { window.open("/endless"); }`
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><title>Spray</title><h1>Spray</h1><script>
let n = 0;
setInterval(() => { `+start+` }, 300);
</script>`)
	}))
	t.Cleanup(srv.Close)
	r := agenttest.NewRouter(t, nil)
	for _, via := range []string{"link", "frame"} {
		served.Store(0)
		dir := t.TempDir()
		ts := newToolset(t, r, agent.WithDownloadDir(dir), agent.WithDownloadLimits(agent.DownloadLimits{PerMinute: 2}))
		s := "spray-" + via
		mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": srv.URL + "/?via=" + via}))
		// The page goes on asking; the browser refuses from the third on.
		require.Eventually(t, func() bool { return served.Load() >= 5 }, 30*time.Second, 50*time.Millisecond)

		snap := mustOK(t, callTool(t, ts, s, "browser_snapshot", nil))
		assert.Contains(t, snap.Text, "Refused: downloads are cut off for this session: the page started 3 downloads within a minute, more than the 2 a session may", via)
		assert.LessOrEqual(t, len(dirNames(t, dir)), 2, "no more files than the bound: %s", via)
		again := mustOK(t, callTool(t, ts, s, "browser_snapshot", nil))
		assert.NotContains(t, again.Text, "Refused: downloads are cut off", "told once: %s", via)
		list := mustOK(t, callTool(t, ts, s, "browser_downloads", nil))
		assert.Contains(t, list.Text, "downloads are cut off for this session", via)

		mustOK(t, callTool(t, ts, s, "browser_close", nil))
		require.NoError(t, ts.Close())
		assert.Empty(t, dirNames(t, dir), "the session's files go with it: %s", via)
	}

	// A frame's download that never ends is bounded as it goes, with no
	// call running: cancelled past the bound of one file.
	ts := newToolset(t, r, agent.WithDownloadDir(t.TempDir()), agent.WithMaxDownloadBytes(300000))
	mustOK(t, callTool(t, ts, "endless", "browser_navigate", map[string]string{"url": srv.URL + "/?via=endless"}))
	select {
	case <-endlessGone:
	case <-time.After(30 * time.Second):
		t.Fatal("the endless download was never cancelled")
	}
	list := mustOK(t, callTool(t, ts, "endless", "browser_downloads", nil))
	assert.Contains(t, list.Text, `"endless.bin" too big`)

	// So is one in a popup the page opened.
	endlessGone = make(chan struct{})
	mustOK(t, callTool(t, ts, "popup", "browser_navigate", map[string]string{"url": srv.URL + "/?via=popup"}))
	select {
	case <-endlessGone:
	case <-time.After(30 * time.Second):
		t.Fatal("the popup's endless download was never cancelled")
	}
}

// TestDownloadsWithoutADirectory: downloads are refused, the result says
// why, and the session goes on; browser_pdf_save is an error.
func TestDownloadsWithoutADirectory(t *testing.T) {
	hybroutetest.Parallel(t)
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
	hybroutetest.Parallel(t)
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
