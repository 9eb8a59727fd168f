package agent_test

import (
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/agent"
	"github.com/hybroute/hybroute/internal/agenttest"
)

// Red team of issue 33, item 4: downloads a session's page starts where
// the tracker may not see them as they begin.

// endlessSite serves pages that start a download that never ends
// (/endless, no Content-Length) from places the tracker learns of late
// or never, and counts what it wrote per variant.
type endlessSite struct {
	srv     *httptest.Server
	mu      sync.Mutex
	written map[string]*atomic.Int64
	gone    map[string]chan struct{}
}

func newEndlessSite(t *testing.T) *endlessSite {
	s := &endlessSite{written: map[string]*atomic.Int64{}, gone: map[string]chan struct{}{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := r.URL.Query().Get("v")
		html := func(body string) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<!doctype html><title>"+v+"</title><h1>"+v+"</h1>"+body)
		}
		public := s.srv.URL[:len("http://")] + agenttest.PublicHost + s.srv.URL[len("http://127.0.0.1"):]
		switch r.URL.Path {
		case "/endless":
			n, gone := s.counter(v)
			w.Header().Set("Content-Disposition", `attachment; filename="endless.bin"`)
			w.Header().Set("Content-Type", "application/octet-stream")
			chunk := make([]byte, 64<<10) // 3.2 MB/s: a progress report (every 0.5 s) is under 2 MB
			defer close(gone)
			for {
				if _, err := w.Write(chunk); err != nil {
					return
				}
				n.Add(int64(len(chunk)))
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		case "/popupframe": // a popup whose frame downloads
			html(`<script>window.open("/framed?v=` + v + `")</script>`)
		case "/framed":
			html(`<iframe src="/endless?v=` + v + `"></iframe>`)
		case "/oopif": // a frame of another site (its own process) whose frame downloads
			html(`<iframe src="` + public + `/framed?v=` + v + `"></iframe>`)
		case "/oopifpopup": // a frame of another site that opens a popup that downloads
			html(`<iframe src="` + public + `/opener?v=` + v + `"></iframe>`)
		case "/opener":
			html(`<script>window.open("/endless?v=` + v + `")</script>`)
		case "/direct": // the tab itself: the baseline, seen as it begins
			html(`<script>setTimeout(() => { location.href = "/endless?v=` + v + `" }, 100)</script>`)
		case "/framedframe": // a frame in a frame, same site
			html(`<iframe src="/framed?v=` + v + `"></iframe>`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *endlessSite) counter(v string) (*atomic.Int64, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written[v] == nil {
		s.written[v] = &atomic.Int64{}
		s.gone[v] = make(chan struct{})
	}
	return s.written[v], s.gone[v]
}

// diskBytes is what the files under dir (the staging directory included)
// take.
func diskBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// TestRedTeam33EndlessDownloadHeld: a download with no end, started by
// the tab, by a frame inside a frame of the tab, or by a popup a frame of
// another site opened, is cut off as it runs, with no call running, within
// a progress report (every 0.5 s) of the bound, and stops when the
// session ends.
func TestRedTeam33EndlessDownloadHeld(t *testing.T) {
	site := newEndlessSite(t)
	r := agenttest.NewRouter(t, nil)
	for _, v := range []string{"direct", "framedframe", "oopifpopup"} {
		t.Run(v, func(t *testing.T) { endlessFrom(t, r, site, v) })
	}
}

// TestRedTeam33EndlessDownloadFromUnseenFrames: the same download started
// by a frame inside a popup, or by a frame inside a frame of another site
// (its own process), is not the session's until the browser wrote it,
// which an endless download never is: it is bounded by nothing, neither
// the file's bound nor the session's, and fills the disk at the speed of
// the link with no call running.
func TestRedTeam33EndlessDownloadFromUnseenFrames(t *testing.T) {
	site := newEndlessSite(t)
	r := agenttest.NewRouter(t, nil)
	for _, v := range []string{"popupframe", "oopif"} {
		t.Run(v, func(t *testing.T) { endlessFrom(t, r, site, v) })
	}
}

func endlessFrom(t *testing.T, r agent.Router, site *endlessSite, v string) {
	const perFile, perSession = 300000, 600000
	const far = 20 * perSession // well past any bound and any socket buffer
	{
		dir := t.TempDir()
		ts := agent.New(r, agent.WithDownloadDir(dir), agent.WithMaxDownloadBytes(perFile),
			agent.WithDownloadLimits(agent.DownloadLimits{Bytes: perSession}))
		mustOK(t, callTool(t, ts, "endless-"+v, "browser_navigate", map[string]string{"url": site.srv.URL + "/" + v + "?v=" + v}))
		n, gone := site.counter(v)
		// Wait until the download was cut off, or until it wrote far past
		// every bound.
		require.Eventually(t, func() bool {
			select {
			case <-gone:
				return n.Load() > 0
			default:
				return diskBytes(dir) > far
			}
		}, 60*time.Second, 20*time.Millisecond, v)
		disk := diskBytes(dir)
		t.Logf("%s: the server wrote %d bytes, %d on disk", v, n.Load(), disk)
		assert.LessOrEqual(t, disk, int64(far), "held if cut off: %s wrote %d bytes to the disk (bounds %d a file, %d a session)", v, disk, perFile, perSession)
		// Once the session ended (browser_close: Release), nothing of it
		// writes on.
		mustOK(t, callTool(t, ts, "endless-"+v, "browser_close", nil))
		select {
		case <-gone:
		case <-time.After(20 * time.Second):
			t.Errorf("%s: the download goes on after browser_close (%d bytes written)", v, n.Load())
		}
		require.NoError(t, ts.Close())
		assert.Empty(t, strings.Join(dirNames(t, dir), ","), "%s: files left after the session", v)
	}
}

// secretSite serves a page whose requests and link carry a token the
// tools must not show: S3CR3Tq9 in access_token, token and a fragment.
func secretSite(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<!doctype html><title>Secrets</title><h1>Secrets</h1>
<a href="/reset?access_token=S3CR3Tq9">Reset</a>
<img src="/pix.png?token=S3CR3Tq9" alt="pix">
<iframe src="/frame?token=S3CR3Tq9" title="f"></iframe>
<script>
fetch("/api?access_token=S3CR3Tq9").then(r => r.text()).then(() => { document.body.dataset.done = "1"; });
fetch("http://169.254.169.254/latest/?token=S3CR3Tq9").catch(() => {});
fetch("/nope?token=S3CR3Tq9");
</script>`)
		case "/throw":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<!doctype html><title>Throw</title><h1>Throw</h1>
<script src="/app.js?token=S3CR3Tq9"></script>
<script>new WebSocket("ws://127.0.0.1:1/?token=S3CR3Tq9");</script>`)
		case "/app.js":
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, `function boom() { console.error(new Error("boom")); throw new Error("thrown"); }
setTimeout(boom, 10);`)
		case "/land":
			http.Redirect(w, r, "/cb?code=S3CR3Tq9#access_token=S3CR3Tq9", http.StatusFound)
		case "/cb", "/frame":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<!doctype html><title>Callback</title><p>done</p>`)
		case "/api":
			fmt.Fprint(w, "ok")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestRedTeam33NoToolShowsTheToken: no tool but browser_exec tells the
// model the token of a URL the page requested or links to, nor confirms a
// guess of it: the network list and its filter, the snapshot and its
// find, the console, the status, the tabs, a wait, a navigation's result.
func TestRedTeam33NoToolShowsTheToken(t *testing.T) {
	base := secretSite(t)
	r := agenttest.NewRouter(t, nil)
	ts := newToolset(t, r)
	const s = "secrets"
	nav := mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": base + "/"}))
	assert.NotContains(t, nav.Text, "S3CR3T")
	all := requestsUntil(t, ts, s, "/api?access_token=REDACTED", "refused by the guard", "/nope")
	assert.NotContains(t, all.Text, "S3CR3T")
	for _, guess := range []string{"S3CR3T", "token=S", "q9", "=S3", "3CR"} {
		res := mustOK(t, callTool(t, ts, s, "browser_network_requests", map[string]any{"filter": guess}))
		assert.Contains(t, res.Text, "0 matching", guess)
		snap := mustOK(t, callTool(t, ts, s, "browser_snapshot", map[string]any{"find": guess}))
		assert.NotContains(t, snap.Text, "Reset", "find %q", guess)
		assert.Contains(t, snap.Text, "nothing in the page contains", "find %q", guess)
	}
	for _, tool := range []struct {
		name string
		args any
	}{
		{"browser_console", nil},
		{"browser_status", nil},
		{"browser_tabs", map[string]string{"action": "list"}},
		{"browser_snapshot", nil},
		{"browser_downloads", nil},
	} {
		res := callTool(t, ts, s, tool.name, tool.args)
		assert.NotContains(t, res.Text, "S3CR3T", tool.name)
	}
	wait := mustOK(t, callTool(t, ts, s, "browser_wait_for", map[string]any{"text": "S3CR3Tq9", "time": 0.2}))
	assert.Contains(t, wait.Text, "did not appear", "a wait reads the page's text only")
	land := callTool(t, ts, s, "browser_navigate", map[string]string{"url": base + "/land"})
	assert.NotContains(t, land.Text, "S3CR3T", "the landing")
	tabs := mustOK(t, callTool(t, ts, s, "browser_tabs", map[string]string{"action": "new", "url": base + "/cb?code=S3CR3Tq9"}))
	assert.NotContains(t, tabs.Text, "S3CR3T", "a new tab")
	status := callTool(t, ts, s, "browser_status", nil)
	assert.NotContains(t, status.Text, "S3CR3T", "status after the landing")
}

// TestRedTeam33ExecReadsTheToken: browser_exec runs the model's script in
// the page, which reads every URL the page requested, unredacted. While
// it is a tool, redacting URLs elsewhere hides them from the model's
// eyes, not from the model: an observation for the lead, by design.
func TestRedTeam33ExecReadsTheToken(t *testing.T) {
	t.Skip("known limit (docs/security.md): a script can re-encode a URL so that no redaction finds it; TestExecResultRedactsURLs holds the written-out case")
	base := secretSite(t)
	r := agenttest.NewRouter(t, nil)
	ts := newToolset(t, r)
	mustOK(t, callTool(t, ts, "exec", "browser_navigate", map[string]string{"url": base + "/"}))
	res := callTool(t, ts, "exec", "browser_exec", map[string]string{"code": `performance.getEntriesByType("resource").map(e => e.name).join(" ").split("").join(" ")`})
	assert.NotContains(t, strings.ReplaceAll(res.Text, " ", ""), "S3CR3Tq9")
}

// TestExecResultRedactsURLs: browser_exec's result shows the URLs the
// page requested as the network list does, with their credentials
// redacted, when the script returns them written out.
func TestExecResultRedactsURLs(t *testing.T) {
	base := secretSite(t)
	r := agenttest.NewRouter(t, nil)
	ts := newToolset(t, r)
	mustOK(t, callTool(t, ts, "exec", "browser_navigate", map[string]string{"url": base + "/"}))
	res := mustOK(t, callTool(t, ts, "exec", "browser_exec", map[string]string{"code": `performance.getEntriesByType("resource").map(e => e.name)`}))
	assert.Contains(t, res.Text, "/pix.png?token=REDACTED")
	assert.NotContains(t, res.Text, "S3CR3T")
	res = callTool(t, ts, "exec", "browser_exec", map[string]string{"code": `throw new Error(location.origin + "/api?access_token=S3CR3Tq9")`})
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text, "access_token=REDACTED")
	assert.NotContains(t, res.Text, "S3CR3T")
}

// TestRedTeam33ManySmallFiles: a burst of tiny downloads (data: and blob:
// URLs with a download attribute, Content-Disposition files from a frame
// inside a popup) leaves no more files than the session's bound, with no
// call running.
func TestRedTeam33ManySmallFiles(t *testing.T) {
	var served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/f":
			served.Add(1)
			w.Header().Set("Content-Disposition", `attachment; filename="f.txt"`)
			fmt.Fprint(w, "x")
			return
		case "/pop":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<!doctype html><title>pop</title><body><script>
for (let i = 0; i < 12; i++) { const f = document.createElement("iframe"); f.src = "/f?n=" + i; document.body.append(f); }
</script>`)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		burst := `for (let i = 0; i < 12; i++) { const a = document.createElement("a"); a.href = "data:text/plain,x" + i; a.download = "d" + i + ".txt"; document.body.append(a); a.click(); }
for (let i = 0; i < 12; i++) { const a = document.createElement("a"); a.href = URL.createObjectURL(new Blob(["y" + i])); a.download = "b" + i + ".txt"; document.body.append(a); a.click(); }`
		if r.URL.Query().Get("via") == "popup" {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<!doctype html><title>Burst</title><script>window.open("/pop")</script>`)
			return
		}
		fmt.Fprint(w, `<!doctype html><title>Burst</title><h1>Burst</h1><script>setTimeout(() => { `+burst+` }, 200)</script>`)
	}))
	t.Cleanup(srv.Close)
	r := agenttest.NewRouter(t, nil)
	for _, via := range []string{"link", "popup"} {
		dir := t.TempDir()
		ts := agent.New(r, agent.WithDownloadDir(dir), agent.WithDownloadLimits(agent.DownloadLimits{Files: 3, PerMinute: 100}))
		s := "burst-" + via
		mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": srv.URL + "/?via=" + via}))
		var list agent.Result
		ok := assert.Eventually(t, func() bool {
			list = mustOK(t, callTool(t, ts, s, "browser_downloads", nil))
			return strings.Contains(list.Text, "downloads are cut off for this session")
		}, 30*time.Second, 100*time.Millisecond, via)
		require.True(t, ok, "%s: served %d, files %v, list %s", via, served.Load(), dirNames(t, dir), list.Text)
		// Files the browser was still writing when cut off go as they end.
		require.Eventually(t, func() bool { return len(dirNames(t, dir)) <= 3 }, 10*time.Second, 50*time.Millisecond,
			"%s: at most 3 files: %v", via, dirNames(t, dir))
		mustOK(t, callTool(t, ts, s, "browser_close", nil))
		require.NoError(t, ts.Close())
		assert.Empty(t, dirNames(t, dir), via)
	}
}

// TestRedTeam33NothingLeftAfterClose: downloads in flight when the
// session ends (a page that starts one every 20 ms, files of 256 KiB)
// leave nothing in the directory, the staging directory included, once
// browser_close answered and the toolset closed. Broke in 2 of 3 rounds
// (twice in two runs): a .hybroute-partial-* directory with up to 1.5 MiB
// in it stays, never removed, as if the browser wrote into it after End
// removed it and before Release ended the browser context.
func TestRedTeam33NothingLeftAfterClose(t *testing.T) {
	var served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/f" {
			served.Add(1)
			w.Header().Set("Content-Disposition", `attachment; filename="f.bin"`)
			w.Write(make([]byte, 256<<10))
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><title>Race</title><body><script>
let n = 0;
setInterval(() => { const a = document.createElement("a"); a.href = "/f?n=" + n++; a.download = "f.bin"; document.body.append(a); a.click(); a.remove(); }, 20);
</script>`)
	}))
	t.Cleanup(srv.Close)
	r := agenttest.NewRouter(t, nil)
	for i := range 3 {
		dir := t.TempDir()
		ts := agent.New(r, agent.WithDownloadDir(dir), agent.WithDownloadLimits(agent.DownloadLimits{Files: 1000, PerMinute: 1000, Bytes: 1 << 30}))
		s := fmt.Sprintf("race-%d", i)
		served.Store(0)
		mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": srv.URL + "/"}))
		require.Eventually(t, func() bool { return served.Load() >= 5 }, 30*time.Second, 10*time.Millisecond)
		mustOK(t, callTool(t, ts, s, "browser_close", nil))
		require.NoError(t, ts.Close())
		ents, err := os.ReadDir(dir)
		require.NoError(t, err)
		var left []string
		for _, e := range ents {
			left = append(left, e.Name())
		}
		assert.Empty(t, left, "left after the session ended (%d served, %d bytes under the directory)", served.Load(), diskBytes(dir))
	}
}

// TestRedTeam33ConsoleShowsNoScriptToken: what Chromium writes into a
// console message itself (an error's stack names the script's URL, a
// WebSocket that failed names its URL) carries no token the network list
// hides. Broke: both show S3CR3Tq9 in the message's text, while the
// message's source URL on the same line reads token=REDACTED.
func TestRedTeam33ConsoleShowsNoScriptToken(t *testing.T) {
	base := secretSite(t)
	r := agenttest.NewRouter(t, nil)
	ts := newToolset(t, r)
	mustOK(t, callTool(t, ts, "console", "browser_navigate", map[string]string{"url": base + "/throw"}))
	var got string
	require.Eventually(t, func() bool {
		got += mustOK(t, callTool(t, ts, "console", "browser_console", nil)).Text
		return strings.Contains(got, "thrown")
	}, 30*time.Second, 100*time.Millisecond)
	t.Log(got)
	assert.NotContains(t, got, "S3CR3T")
}
