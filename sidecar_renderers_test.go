package hybroute

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sc "github.com/hybroute/hybroute/internal/sidecar"
)

// TestSessionsStartFewRenderers counts the renderer processes the
// local Chromium starts while sessions come and go one after another. Each
// session is a browser context of its own, and a renderer serves one
// context only: a browser that keeps a spare renderer warm for the context
// that navigated last throws nearly every spare away. The count is polled, so a renderer that
// lives under the poll's period may be missed: the test can pass wrongly
// only by a few, never fail wrongly.
func TestSessionsStartFewRenderers(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	s := newSite(t)
	r := newRouter(t, nil, nil)
	ctx := testCtx(t)
	require.NoError(t, r.Warm(ctx))
	browser := currentProc(t, r.side).PID()
	seen := map[int]bool{}
	webUI := map[int]bool{} // renderers of Chrome's own UI pages
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			for _, pid := range renderersOf(browser) {
				if !seen[pid] {
					cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
					webUI[pid] = strings.Contains(string(cmd), "--top-chrome-webui")
				}
				seen[pid] = true
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	const sessions = 6
	for i := range sessions {
		key := fmt.Sprint("one-renderer-", i)
		_, err := r.Navigate(ctx, key, s.url("127.0.0.1", fmt.Sprintf("/r%d", i)), nil)
		require.NoError(t, err)
		require.NoError(t, r.Release(ctx, key))
	}
	time.Sleep(time.Second) // the spare tab made after the last session
	close(stop)
	<-done
	// About one per session (its tab's renderer, which its first
	// navigation keeps here), a few more for the first tab and the spare
	// made after the last session; the bound leaves room for a swap now
	// and then. With the browser's own spare renderer on, four per
	// session were seen, and with Chrome's omnibox popup built per
	// browser context in a renderer of its own, three.
	t.Logf("%d renderers for %d sessions", len(seen), sessions)
	assert.LessOrEqual(t, len(seen), 3*sessions/2+3,
		"renderers started for %d sessions one after another", sessions)
	for pid, ui := range webUI {
		assert.False(t, ui, "renderer %d serves a page of Chrome's own UI (--top-chrome-webui)", pid)
	}
	assert.GreaterOrEqual(t, len(seen), sessions, "the poll saw each session's renderer")
}

// renderersOf lists the renderer processes under the browser process pid.
func renderersOf(browser int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(cmd), "--type=renderer") {
			continue
		}
		if descendsFrom(pid, browser) {
			out = append(out, pid)
		}
	}
	return out
}

// descendsFrom reports whether pid is under ancestor in the process tree.
func descendsFrom(pid, ancestor int) bool {
	for range 8 {
		var ok bool
		if pid, ok = sc.ParentOf(pid); !ok || pid <= 1 {
			return false
		}
		if pid == ancestor {
			return true
		}
	}
	return false
}
