package hybroutetest

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/internal/sidecar"
	"github.com/hybroute/hybroute/internal/testenv"
	"github.com/hybroute/hybroute/provider"
)

// parallel counts the tests under way that called [Parallel].
var parallel atomic.Int64

// Parallel is t.Parallel for a test that makes a Router with [NewRouter],
// or runs beside tests that do: while such a test runs, the leftover
// checks leave goroutines out (a check cannot tell another test's from its
// Router's). Processes and profile directories are still checked: those
// are each Router's own. Tests that call t.Parallel themselves instead
// make the goroutine check of the Routers beside them fail.
func Parallel(t *testing.T) {
	t.Parallel()
	// Counted once it runs: t.Parallel returns when the serial tests are
	// done and the parallel ones start.
	parallel.Add(1)
	t.Cleanup(func() { parallel.Add(-1) })
}

// routers numbers the Routers of the process, to mark each one's browser.
var routers atomic.Int64

// leftoverWait bounds how long the check waits for what Close ended to be
// gone (a killed Chromium's children exit after it).
const leftoverWait = 10 * time.Second

// NewRouter is a Router for a test: wired to cloud (nil: local only) and
// to a local sidecar Chromium, with the test's resolver ([Resolver]), its
// loopback-only egress dialer ([EgressDialer]) and the .test names mapped
// to loopback, so a [Site]'s pages are public hosts' on both routes. Its
// log goes to t.Log. opts come after those and win.
//
// The Router is closed when the test ends, and the test fails if Close
// fails or leaves anything behind: a process of its local Chromium, that
// Chromium's temporary profile directory, or a goroutine (unless a test
// that called [Parallel] runs beside it). The test is skipped, saying why,
// under -short and when no Chromium is installed.
func NewRouter(t testing.TB, cloud *Cloud, opts ...hybroute.Option) *hybroute.Router {
	t.Helper()
	testenv.RequireChromium(t)
	var goroutines []goleak.Option
	if parallel.Load() == 0 {
		goroutines = []goleak.Option{goleak.IgnoreCurrent(),
			// The test's servers end their connections when they close,
			// after the Router.
			goleak.IgnoreAnyFunction("net/http.(*conn).serve")}
	}
	mark := fmt.Sprintf("%d-%d", os.Getpid(), routers.Add(1))
	// Registered first, so it runs last: after Close, and after the
	// Router's processes were noted.
	var left leftovers
	t.Cleanup(func() { left.check(t, goroutines) })

	logs := &testLog{t: t}
	var (
		p  provider.Provider
		hc *http.Client
	)
	if cloud != nil {
		p, hc = cloud.provider()
	}
	base := []hybroute.Option{
		hybroute.WithResolver(Resolver()),
		hybroute.WithEgressDialer(EgressDialer(t)),
		hybroute.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))),
		hybroute.WithChromiumFlags(map[string]any{
			"user-agent":          LocalUserAgent,
			"host-resolver-rules": hostRules,
			// Chromium ignores a switch it does not know: this one names
			// the Router's browser among the machine's processes.
			markFlag: mark,
		}),
	}
	r, err := hybroute.New(p, append(base, opts...)...)
	if err != nil {
		t.Fatalf("hybroutetest: hybroute.New: %v", err)
	}
	t.Cleanup(func() {
		left.note(mark)
		if err := r.Close(); err != nil {
			t.Errorf("hybroutetest: closing the Router: %v", err)
		}
		if hc != nil {
			hc.CloseIdleConnections()
		}
		logs.stop()
	})
	return r
}

// markFlag is the switch that marks a NewRouter Router's local Chromium.
const markFlag = "hybroutetest-router"

// leftovers is what a Router's local Chromium had running when Close
// began: the check wants all of it gone.
type leftovers struct {
	pids     []int
	profiles []string // temporary profile directories
}

// note records the processes of the browser marked mark, and its
// temporary profile.
func (l *leftovers) note(mark string) {
	l.pids = sidecar.ProcessesOf([]byte("--" + markFlag + "=" + mark))
	for _, pid := range l.pids {
		cmd, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err != nil {
			continue
		}
		for arg := range bytes.SplitSeq(cmd, []byte{0}) {
			dir, ok := strings.CutPrefix(string(arg), "--user-data-dir=")
			// A profile the test gave (hybroute.WithProfileDir) is kept by
			// design; the sidecar's temporary ones are not.
			if ok && strings.HasPrefix(filepath.Base(dir), "hybroute-chromium-") {
				l.profiles = append(l.profiles, dir)
			}
		}
	}
}

// check fails t for what is still there after Close: processes, profile
// directories and, with options, goroutines.
func (l *leftovers) check(t testing.TB, goroutines []goleak.Option) {
	deadline := time.Now().Add(leftoverWait)
	var alive []int
	var dirs []string
	for {
		alive, dirs = alive[:0], dirs[:0]
		for _, pid := range l.pids {
			if running(pid) {
				alive = append(alive, pid)
			}
		}
		for _, d := range l.profiles {
			if _, err := os.Stat(d); err == nil {
				dirs = append(dirs, d)
			}
		}
		if len(alive)+len(dirs) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(alive) > 0 {
		t.Errorf("hybroutetest: the Router's local Chromium left %d processes running after Close: %v", len(alive), alive)
	}
	if len(dirs) > 0 {
		t.Errorf("hybroutetest: the Router's local Chromium left its profile directory after Close: %v", dirs)
	}
	if goroutines != nil && parallel.Load() == 0 {
		if err := goleak.Find(goroutines...); err != nil {
			t.Errorf("hybroutetest: goroutines left after the Router closed: %v", err)
		}
	}
}

// running reports a process that exists and is not a zombie.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	state := b[i+2]
	return state != 'Z' && state != 'X'
}

// testLog writes the Router's log to t.Log until the Router is closed:
// testing forbids logging after the test ends.
type testLog struct {
	t    testing.TB
	mu   sync.Mutex
	done bool
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

func (l *testLog) stop() {
	l.mu.Lock()
	l.done = true
	l.mu.Unlock()
}
