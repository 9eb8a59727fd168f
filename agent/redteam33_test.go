package agent_test

import (
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
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
	t.Skip("red team: broke, see report")
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
