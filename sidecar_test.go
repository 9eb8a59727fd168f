package hybroute

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/hybroute/hybroute/internal/browsertab"
	"github.com/hybroute/hybroute/internal/config"
	"github.com/hybroute/hybroute/internal/floor"
	"github.com/hybroute/hybroute/internal/procfs"
	sc "github.com/hybroute/hybroute/internal/sidecar"
	"github.com/hybroute/hybroute/internal/testenv"
	"github.com/hybroute/hybroute/netpolicy"
)

// requireChromium skips a browser test under -short, when no Chromium is
// installed, and on a browser below the supported range.
func requireChromium(tb testing.TB) {
	tb.Helper()
	testenv.RequireChromium(tb)
	requireSupported(tb)
}

// testConfig is the default configuration with opts, warnings logged to
// the test's output, a resolver that answers nothing (the sidecar tests
// load IP literals, and no test asks a real DNS server), and the egress
// dialer that dials loopback only.
func testConfig(tb testing.TB, opts ...Option) *config.Config {
	cfg := config.Default()
	cfg.Resolver = staticResolver{}
	cfg.EgressDialer = loopbackDialer(tb)
	cfg.Logger = slog.New(slog.NewTextHandler(tb.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	for _, o := range opts {
		o(&cfg)
	}
	return &cfg
}

// testPolicy is the policy of a router that classifies names with res:
// with no provider (private addresses allowed), or, with privateOK false,
// a strict one (a provider, auto-local off: private addresses refused).
func testPolicy(res netpolicy.Resolver, privateOK bool) *floor.Policy {
	cfg := config.Default()
	cfg.Resolver = res
	if privateOK {
		return newPolicy(&cfg, false, nil)
	}
	cfg.AutoLocal = false
	return newPolicy(&cfg, true, nil)
}

// testSidecar makes the sidecar of a router with no provider; the caller
// closes it.
func testSidecar(tb testing.TB, opts ...Option) *sc.Sidecar {
	cfg := testConfig(tb, opts...)
	return newSidecar(cfg, newPolicy(cfg, false, nil), nil)
}

// newTestSidecar makes a sidecar that is closed (and checked) when the test ends.
func newTestSidecar(tb testing.TB, opts ...Option) *sc.Sidecar {
	tb.Helper()
	s := testSidecar(tb, opts...)
	tb.Cleanup(func() { assert.NoError(tb, s.Close()) })
	return s
}

// testSite is the harness site with /echo, which puts the request's Cookie
// header in the title, so a test sees the browser's cookie jar from the
// server side.
func testSite(tb testing.TB) *site {
	return newSite(tb, func(mux *http.ServeMux, _ *site) {
		mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
			servePage(w, "cookie", r.Header.Get("Cookie"))
		})
	})
}

// testCtx bounds a test's calls: a minute, and no longer than the test.
func testCtx(tb testing.TB) context.Context { return testenv.Context(tb, time.Minute) }

// run runs one chromedp action on the tab, bounded by ctx.
func run[T any](ctx context.Context, tab *sc.Tab, a chromedp.Action[T]) (T, error) {
	c, cancel := browsertab.Bind(tab.Context(), ctx)
	defer cancel()
	v, err := chromedp.Run(c, a)
	return v, tab.WrapErr(err)
}

func navigate(t *testing.T, ctx context.Context, tab *sc.Tab, url string) {
	t.Helper()
	// The grant a router's call naming url would give the tab's session.
	g, _ := floor.GrantOf([]netpolicy.Verdict{testPolicy(staticResolver{}, true).Classify(ctx, url)})
	tab.Door().Set(g)
	_, err := run(ctx, tab, chromedp.Action[chromedp.Void](chromedp.Navigate(url)))
	require.NoError(t, err)
}

func title(t *testing.T, ctx context.Context, tab *sc.Tab) string {
	t.Helper()
	v, err := run(ctx, tab, chromedp.Title())
	require.NoError(t, err)
	return v
}

func eval[T any](t *testing.T, ctx context.Context, tab *sc.Tab, js string) T {
	t.Helper()
	v, err := run(ctx, tab, chromedp.Evaluate[T](js))
	require.NoError(t, err)
	return v
}

// currentProc returns the running process, for assertions.
func currentProc(t *testing.T, s *sc.Sidecar) *sc.Proc {
	t.Helper()
	p := s.Running()
	require.NotNil(t, p, "no Chromium is running")
	return p
}

// browserContexts lists the browser contexts that keys hold on the running
// Chromium: every created one (the default one is not listed) except the
// spare, after any spare being made is done. A pending refill is made
// first, so that its timer cannot make one while the contexts are listed.
func browserContexts(t *testing.T, ctx context.Context, s *sc.Sidecar) []cdp.BrowserContextID {
	t.Helper()
	spare := s.SettleSpare()
	res, err := cdp.Call(ctx, currentProc(t, s).Browser(), target.GetBrowserContexts, cdp.Empty{})
	require.NoError(t, err)
	return slices.DeleteFunc(res.BrowserContextIDs, func(id cdp.BrowserContextID) bool { return id == spare })
}

// pagesIn counts the page targets in one browser context.
func pagesIn(t *testing.T, ctx context.Context, s *sc.Sidecar, id cdp.BrowserContextID) int {
	t.Helper()
	res, err := cdp.Call(ctx, currentProc(t, s).Browser(), target.GetTargets, target.GetTargetsParams{})
	require.NoError(t, err)
	n := 0
	for _, info := range res.TargetInfos {
		if info.Type == "page" && info.BrowserContextID == id {
			n++
		}
	}
	return n
}

func cmdline(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// processGone reports that pid has exited: no such process, or one that
// is dead and waits to be reaped (a zombie). A browser's children that
// outlive it are handed to the machine's init, which in a container may
// never reap them.
func processGone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X')
}

func TestSidecarNavigatesAndReadsTitle(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	s := newTestSidecar(t)
	site := testSite(t)
	ctx := testCtx(t)

	assert.False(t, s.Alive(), "nothing starts before the first open")
	tab, err := s.Open(ctx, "sess::local")
	require.NoError(t, err)
	assert.True(t, s.Alive())

	navigate(t, ctx, tab, site.URL+"/")
	assert.Equal(t, "/", title(t, ctx, tab), "the page's title is its path")
	loc, err := run(ctx, tab, chromedp.Location())
	require.NoError(t, err)
	assert.Equal(t, site.URL+"/", loc)
}

// TestSidecarConcurrentOpensShareOneStart: opens that race on a cold
// sidecar share one Chromium start, and each gets a tab of its own, alone
// in a browser context of its own.
func TestSidecarConcurrentOpensShareOneStart(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	s := newTestSidecar(t)
	site := testSite(t)
	ctx := testCtx(t)

	tabs := make([]*sc.Tab, 8)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range tabs {
		wg.Go(func() {
			<-start
			tab, err := s.Open(ctx, "k"+strconv.Itoa(i))
			assert.NoError(t, err)
			tabs[i] = tab
		})
	}
	close(start)
	wg.Wait()
	require.NotContains(t, tabs, (*sc.Tab)(nil))
	assert.EqualValues(t, 1, s.Starts(), "Chromium is launched once")

	ids := browserContexts(t, ctx, s)
	assert.Len(t, ids, len(tabs), "one browser context per tab")
	seen := map[cdp.BrowserContextID]bool{}
	for _, tab := range tabs {
		assert.False(t, seen[tab.BrowserContextID()], "two tabs share a browser context")
		seen[tab.BrowserContextID()] = true
		assert.Contains(t, ids, tab.BrowserContextID())
		assert.Equal(t, 1, pagesIn(t, ctx, s, tab.BrowserContextID()), "a browser context holds one tab")
	}

	// Contexts share nothing: a cookie and storage set in one are not seen
	// by another.
	a, b := tabs[0], tabs[1]
	navigate(t, ctx, a, site.URL+"/")
	eval[bool](t, ctx, a, `document.cookie = "who=alice; path=/"; localStorage.setItem("who", "alice"); true`)
	navigate(t, ctx, b, site.URL+"/echo")
	assert.Equal(t, "cookie=", title(t, ctx, b), "b's requests carry no cookie of a")
	assert.Nil(t, eval[*string](t, ctx, b, `localStorage.getItem("who")`), "b sees no storage of a")
}

// TestSidecarTabCloseDisposesItsContext: closing a tab disposes of its
// browser context, cookies and all, and keeps Chromium warm.
func TestSidecarTabCloseDisposesItsContext(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	s := newTestSidecar(t)
	site := testSite(t)
	ctx := testCtx(t)

	a, err := s.Open(ctx, "A")
	require.NoError(t, err)
	navigate(t, ctx, a, site.URL+"/")
	eval[bool](t, ctx, a, `document.cookie = "who=alice; path=/"; true`)
	require.Len(t, browserContexts(t, ctx, s), 1)

	require.NoError(t, a.Close())
	assert.Empty(t, browserContexts(t, ctx, s), "close disposes of the tab's browser context")
	_, err = run(ctx, a, chromedp.Title())
	assert.Error(t, err, "a closed tab is unusable")
	require.NoError(t, a.Close(), "closing twice is harmless")

	a2, err := s.Open(ctx, "A")
	require.NoError(t, err)
	assert.NotEqual(t, a.BrowserContextID(), a2.BrowserContextID(), "the next open makes a new browser context")
	navigate(t, ctx, a2, site.URL+"/echo")
	assert.Equal(t, "cookie=", title(t, ctx, a2), "the new context has none of the old cookies")
	assert.True(t, s.Alive(), "closing a tab keeps Chromium warm")
	assert.EqualValues(t, 1, s.Starts())
}

// TestSidecarCloseKillsAStuckChild: a child of the browser that does not
// end with it (here frozen, as a wedged renderer or network service would
// be) is killed by close all the same. The headless shell starts its
// children without the profile argument, and once the browser is gone
// they belong to init: close has to know them from before.
func TestSidecarCloseKillsAStuckChild(t *testing.T) {
	t.Parallel() // the frozen process is its own sidecar's
	requireChromium(t)
	if runtime.GOOS != "linux" {
		t.Skip("the process tree is read from /proc")
	}
	site := testSite(t)
	ctx := testCtx(t)
	s := testSidecar(t)
	tab, err := s.Open(ctx, "stuck")
	require.NoError(t, err)
	navigate(t, ctx, tab, site.URL)
	proc := currentProc(t, s)
	tree := sc.ProcessesOf([]byte("--user-data-dir=" + proc.DataDir()))
	child := 0
	for _, p := range tree {
		// A child renames its command line into one space-separated string.
		if p != proc.PID() && strings.Contains(strings.Join(cmdline(p), " "), " --type=") {
			child = p
			break
		}
	}
	require.NotZero(t, child, "the browser runs children: %v", tree)
	require.NoError(t, syscall.Kill(child, syscall.SIGSTOP))
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })

	_ = s.Close() // a frozen child may fail the graceful close; what counts is what is left
	assert.True(t, processGone(proc.PID()), "the browser (pid %d) is gone", proc.PID())
	assert.True(t, processGone(child), "the frozen child (pid %d, %v) outlived close", child, cmdline(child))
}

func TestSidecarCloseLeavesNothing(t *testing.T) {
	// Not parallel: goleak sees every goroutine of the process.
	requireChromium(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	// Its own server, not newSite's, so that it is closed before goleak looks.
	site := httptest.NewServer(staticPage("bye"))
	defer site.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	s := testSidecar(t)
	for _, key := range []string{"a", "b", "c"} {
		tab, err := s.Open(ctx, key)
		require.NoError(t, err)
		navigate(t, ctx, tab, site.URL)
	}
	pid := currentProc(t, s).PID()
	require.NotZero(t, pid)
	var dataDirArg string
	for _, a := range cmdline(pid) {
		if strings.HasPrefix(a, "--user-data-dir=") {
			dataDirArg = a
		}
	}
	require.NotEmpty(t, dataDirArg, "Chromium runs with a temp user-data-dir")
	dataDir := strings.TrimPrefix(dataDirArg, "--user-data-dir=")
	require.DirExists(t, dataDir)
	// The browser and every process under it, taken while its pages are
	// open: after Close a headless shell's orphaned child carries no
	// --user-data-dir and has no parent to be found under, so only this
	// list can show that it outlived the browser.
	tree := sc.ProcessesOf([]byte(dataDirArg))
	require.Contains(t, tree, pid)
	require.Greater(t, len(tree), 1, "Chromium and its children run")
	if runtime.GOOS == "linux" {
		own := procfs.Bytes(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss:")
		assert.Greater(t, sc.MemoryWith([]byte(dataDirArg)), own, "the memory measure counts the children, not the browser process alone")
	}

	require.NoError(t, s.Close())
	assert.False(t, s.Alive())
	assert.True(t, processGone(pid), "the Chromium process %d is gone", pid)
	for _, p := range tree {
		assert.True(t, processGone(p), "a process of the browser (pid %d) outlived close", p)
	}
	assert.Empty(t, sc.ProcessesOf([]byte(dataDirArg)), "no child of Chromium is left")
	assert.NoDirExists(t, dataDir, "the temp user-data-dir is removed")
	require.NoError(t, s.Close(), "close twice is harmless")

	_, err := s.Open(ctx, "a")
	assert.ErrorIs(t, err, sc.ErrClosed)
	site.Close()
}

func TestSidecarBrowserDeath(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	s := newTestSidecar(t)
	site := testSite(t)
	ctx := testCtx(t)

	a, err := s.Open(ctx, "A")
	require.NoError(t, err)
	b, err := s.Open(ctx, "B")
	require.NoError(t, err)
	navigate(t, ctx, a, site.URL+"/")
	old := currentProc(t, s)
	require.NoError(t, syscall.Kill(old.PID(), syscall.SIGKILL))

	_, err = run(ctx, a, chromedp.Title())
	require.Error(t, err)
	require.Eventually(t, a.Dead, 30*time.Second, 10*time.Millisecond)
	assert.ErrorIs(t, a.WrapErr(err), ErrBrowserDead, "a call on a tab of a dead browser says so")
	assert.Contains(t, a.WrapErr(err).Error(), "died")
	assert.True(t, b.Dead(), "every tab of the process died with it")
	assert.False(t, s.Alive())
	assert.NoError(t, a.Close(), "closing a dead tab is harmless")

	a2, err := s.Open(ctx, "A")
	require.NoError(t, err, "the next open recovers")
	assert.True(t, s.Alive())
	assert.NotEqual(t, old.PID(), currentProc(t, s).PID(), "on a fresh Chromium")
	navigate(t, ctx, a2, site.URL+"/")
	assert.Equal(t, "/", title(t, ctx, a2))
	assert.EqualValues(t, 2, s.Starts())
	assert.Len(t, browserContexts(t, ctx, s), 1, "nothing of the dead process is left in the new one")
	assert.True(t, processGone(old.PID()))
}

func TestSidecarNoChromium(t *testing.T) {
	// Not parallel: it sets $PATH and $CHROMIUM.
	s := newTestSidecar(t, WithChromiumPath("/nonexistent"))
	_, err := s.Open(context.Background(), "k")
	require.ErrorIs(t, err, ErrNoChromium)
	assert.Contains(t, err.Error(), "apt-get install -y chromium")
	assert.Contains(t, err.Error(), "WithChromiumPath")
	assert.False(t, s.Alive())
	assert.EqualValues(t, 0, s.Starts())

	// Nothing on PATH, no $CHROMIUM, no cache: the same sentinel.
	t.Setenv("PATH", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	t.Setenv("PUPPETEER_CACHE_DIR", "")
	t.Setenv("PLAYWRIGHT_BROWSERS_PATH", "")
	t.Setenv("CHROMIUM", "")
	s2 := newTestSidecar(t)
	_, err = s2.Open(context.Background(), "k")
	require.ErrorIs(t, err, ErrNoChromium)
	assert.Contains(t, err.Error(), "apt-get install -y chromium")
	_, err = s2.Open(context.Background(), "k")
	require.ErrorIs(t, err, ErrNoChromium, "a failure does not poison the key: it is tried again")
}

func TestSidecarCancelledOpen(t *testing.T) {
	t.Parallel()
	// A ctx that is already done starts nothing.
	s := newTestSidecar(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Open(ctx, "k")
	require.ErrorIs(t, err, context.Canceled)
	assert.False(t, s.Alive())
	assert.EqualValues(t, 0, s.Starts())

	// A caller that gives up in the middle of the Chromium start does not
	// end it (other sessions may be waiting for it); close does, and kills
	// the half-started process. The "Chromium" here never answers on its
	// pipe, so the start cannot win the race.
	dir := t.TempDir()
	mark := filepath.Join(dir, "pid")
	fake := filepath.Join(dir, "fake-chromium")
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\necho $$ > "+mark+".tmp\nmv "+mark+".tmp "+mark+"\nexec sleep 600\n"), 0o755))
	s2 := newTestSidecar(t, WithChromiumPath(fake))
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := s2.Open(ctx, "k")
		errc <- err
	}()
	require.Eventually(t, func() bool { _, err := os.Stat(mark); return err == nil }, 30*time.Second, 5*time.Millisecond)
	b, err := os.ReadFile(mark)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	cancel()
	select {
	case err = <-errc:
	case <-time.After(10 * time.Second):
		t.Fatal("open did not return when its caller gave up")
	}
	require.ErrorIs(t, err, context.Canceled)
	assert.False(t, processGone(pid), "the start goes on without the caller that asked for it")
	short, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	_, err = s2.Open(short, "k2")
	require.ErrorIs(t, err, context.DeadlineExceeded, "a later open waits for the same start")
	assert.EqualValues(t, 1, s2.Starts(), "and launches nothing of its own")

	require.NoError(t, s2.Close())
	assert.True(t, processGone(pid), "close ends the start and kills the half-started process")
	assert.False(t, s2.Alive())
	_, err = s2.Open(context.Background(), "k")
	assert.ErrorIs(t, err, sc.ErrClosed)
}

func TestSidecarCancelledOpenOnWarmBrowser(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	s := newTestSidecar(t)
	ctx := testCtx(t)
	_, err := s.Open(ctx, "warm")
	require.NoError(t, err)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.Open(cctx, "new")
	require.ErrorIs(t, err, context.Canceled)
	assert.Len(t, browserContexts(t, ctx, s), 1, "no browser context is made for a cancelled open")

	// Cancel while the tab is being made: whatever the timing, open either
	// returns the tab (closed here) or an error with nothing left behind.
	for i := range 5 {
		key := fmt.Sprintf("racy%d", i)
		cctx, cancel := context.WithCancel(ctx)
		go func() { time.Sleep(time.Duration(i) * 5 * time.Millisecond); cancel() }()
		tab, err := s.Open(cctx, key)
		if err != nil {
			require.ErrorIs(t, err, context.Canceled)
		} else {
			require.NoError(t, tab.Close(), "tab %v", tab.BrowserContextID())
		}
		cancel()
		assert.Len(t, browserContexts(t, ctx, s), 1, "no half-made tab is left behind")
	}
}

func TestSidecarFlags(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	s := newTestSidecar(t, WithChromiumFlags(map[string]any{"user-agent": "hybroute-test/1"}))
	ctx := testCtx(t)
	tab, err := s.Open(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, "hybroute-test/1", eval[string](t, ctx, tab, `navigator.userAgent`))

	args := cmdline(currentProc(t, s).PID())
	for _, want := range []string{"--headless", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--no-first-run", "--disable-gpu", "--remote-debugging-pipe", "--site-per-process"} {
		assert.Contains(t, args, want)
	}
	if os.Geteuid() == 0 {
		assert.Contains(t, args, "--no-sandbox")
	} else {
		assert.NotContains(t, args, "--no-sandbox")
	}

	bad := newTestSidecar(t, WithChromiumFlags(map[string]any{"window-size": 3}))
	_, err = bad.Open(ctx, "k")
	assert.ErrorContains(t, err, "window-size")

	for _, f := range []string{"remote-debugging-port", "site-per-process", "disable-site-isolation-trials"} {
		managed := newTestSidecar(t, WithChromiumFlags(map[string]any{f: "9222"}))
		_, err = managed.Open(ctx, "k")
		assert.ErrorContains(t, err, "managed by the sidecar", f)
		assert.False(t, managed.Alive(), f)
	}
}

// TestSidecarConcurrentOpenClose hammers open/use/close of tabs from many
// goroutines; run it with -race.
func TestSidecarConcurrentOpenClose(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	s := newTestSidecar(t)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		kept []*sc.Tab
	)
	for g := range 6 {
		wg.Go(func() {
			for i := range 4 {
				tab, err := s.Open(testCtx(t), fmt.Sprintf("k%d-%d", g, i))
				if !assert.NoError(t, err) {
					continue
				}
				_, err = run(testCtx(t), tab, chromedp.Evaluate[int]("1+1"))
				assert.NoError(t, err)
				if i%4 == 3 {
					mu.Lock()
					kept = append(kept, tab)
					mu.Unlock()
					continue
				}
				assert.NoError(t, tab.Close())
			}
		})
	}
	wg.Wait()
	assert.EqualValues(t, 1, s.Starts())
	assert.Len(t, browserContexts(t, testCtx(t), s), len(kept), "exactly one browser context per open tab")
}
