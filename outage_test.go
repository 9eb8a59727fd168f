package hybroute

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/hybroute/hybroute/internal/browsertab"
	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/config"
	"github.com/hybroute/hybroute/internal/floor"
	"github.com/hybroute/hybroute/internal/sessions"
	sc "github.com/hybroute/hybroute/internal/sidecar"
	"github.com/hybroute/hybroute/internal/teardown"
	"github.com/hybroute/hybroute/internal/testlog"
	"github.com/hybroute/hybroute/provider"
	"github.com/hybroute/hybroute/route"
)

// The load and fault suite of provider outages. The quick part runs with
// the package's tests; the long part (1,000 calls, 50 keys, 50 at once)
// runs under HYBROUTE_PROOF=1, which `make proof` sets. Each test prints
// its figures and asserts counts, never timings.

// proof reports whether the long suite runs, and scales a figure: the
// quick run uses quick, the proof run full.
func proof(quick, full int) int {
	if os.Getenv("HYBROUTE_PROOF") != "" {
		return full
	}
	return quick
}

// countingProvider records when each create call began.
type countingProvider struct {
	provider.Provider
	mu    sync.Mutex
	calls []time.Time
}

func (c *countingProvider) CreateSession(ctx context.Context, key string) (*provider.Session, error) {
	c.mu.Lock()
	c.calls = append(c.calls, time.Now())
	c.mu.Unlock()
	return c.Provider.CreateSession(ctx, key)
}

// CloseIdleConnections passes Close's call on to the wrapped client.
func (c *countingProvider) CloseIdleConnections() {
	if ic, ok := c.Provider.(idleCloser); ok {
		ic.CloseIdleConnections()
	}
}

func (c *countingProvider) times() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls)
}

// outageWorld is a world whose provider counts its create calls.
func outageWorld(t *testing.T, opts ...Option) (*world, *countingProvider) {
	t.Helper()
	requireChromium(t)
	w := &world{t: t, site: newSite(t), logs: &testlog.Buffer{}}
	w.cloud = cloudtest.LaunchChromium(t, "--user-agent="+cloudUA, "--host-resolver-rules="+hostRules)
	w.api = cloudtest.NewServer(t, cloudtest.Browserbase, w.cloud.WSURL, cloudtest.WithAPIKey(testAPIKey), cloudtest.WithProjectID("proj-1"))
	cp := &countingProvider{Provider: provider.NewBrowserbase(testAPIKey, "proj-1", provider.WithBaseURL(w.api.URL))}
	// The floor's budget is sized for a machine shared with many others:
	// the counts are what these tests assert, not how fast the floor is.
	w.r = newRouter(t, cp, w.logs, append([]Option{WithLocalTimeout(5 * time.Minute)}, opts...)...)
	return w, cp
}

// storm runs calls calls over keys keys, workers at once, each opening one
// page; every releaseEvery-th call of a worker releases its key after (0:
// never). It returns the errors.
func storm(t *testing.T, w *world, calls, keys, workers, releaseEvery int) []error {
	t.Helper()
	var (
		next atomic.Int64
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for g := range workers {
		wg.Go(func() {
			for n := 1; ; n++ {
				i := int(next.Add(1)) - 1
				if i >= calls {
					return
				}
				key := "key" + strconv.Itoa(g%keys) // a worker's own key: its releases fail no other call
				// A deadline of each call's own, generous for a loaded
				// machine: a slow call fails alone, not the rest of the run.
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				res, err := w.r.Navigate(ctx, key, w.site.url(publicHost, "/p"+strconv.Itoa(i)), nil)
				if err == nil && res.FallbackFromCloud && res.FallbackReason == "" {
					err = errors.New("a fallback without its reason")
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("call %d on %s: %w", i, key, err))
					mu.Unlock()
				}
				if releaseEvery > 0 && n%releaseEvery == 0 {
					_ = w.r.Release(ctx, key)
				}
				cancel()
			}
		})
	}
	waitGroup(t, &wg, 25*time.Minute, "the storm's calls still running")
	return errs
}

// The 1,000-call outage: a provider that answers every create with 429
// and a Retry-After. At most one create call per window, one probe when a
// window ends, no failed call, one warning for the whole outage.
func TestOutageOneProbePerWindow(t *testing.T) {
	const retryAfter = 2 * time.Second
	w, cp := outageWorld(t)
	secs := strconv.Itoa(int(retryAfter / time.Second))
	rl := cloudtest.RateLimited(secs)
	w.api.AlwaysOnCreate(&rl)
	calls, keys := proof(16, 1000), proof(4, 50)
	start := time.Now()
	errs := storm(t, w, calls, keys, keys, proof(2, 5))
	took := time.Since(start)
	creates := cp.times()
	t.Logf("outage: %d calls over %d keys in %v: %d failed, %d provider creates (%d windows of %v), %d warning lines",
		calls, keys, took.Round(time.Millisecond), len(errs), len(creates), int(took/retryAfter)+1, retryAfter, w.logs.Count(fallbackLine))
	assert.Empty(t, errs, "no call fails while the provider is down")
	require.NotEmpty(t, creates)
	for i := 1; i < len(creates); i++ {
		// A window opens when the 429 arrives, after the call began: the
		// next probe comes a window after that, never sooner.
		assert.GreaterOrEqual(t, creates[i].Sub(creates[i-1]), retryAfter,
			"create %d came %v after the one before: more than one per window", i, creates[i].Sub(creates[i-1]))
	}
	assert.LessOrEqual(t, len(creates), int(took/retryAfter)+1, "at most one create per window")
	assert.Equal(t, 1, w.logs.Count(fallbackLine), "one warning for the outage")
}

// The floor's own budget: with a short creation timeout and a provider
// that hangs, new keys all land on local Chromium: no call fails, and only
// the probe asks the provider.
func TestHangingProviderFailsNoCall(t *testing.T) {
	w, cp := outageWorld(t, WithCreateTimeout(4*time.Second))
	hang := cloudtest.Hang()
	w.api.AlwaysOnCreate(&hang)
	keys := proof(6, 50)
	errs := storm(t, w, keys, keys, keys, 0)
	t.Logf("hang: %d new keys: %d failed, %d provider creates", keys, len(errs), len(cp.times()))
	assert.Empty(t, errs)
	assert.Len(t, cp.times(), 1, "one probe; the others waited for it and went local")
}

// Every kind of provider failure is met by one probe: N new keys at once,
// one create call, no failed call, one log line.
func TestEveryFailureOneProbe(t *testing.T) {
	if os.Getenv("HYBROUTE_PROOF") == "" {
		t.Skip("the long suite: HYBROUTE_PROOF=1 (make proof)")
	}
	rows := []struct {
		name  string
		reply cloudtest.Reply
	}{
		{"429 with Retry-After", cloudtest.RateLimited("17")},
		{"429 without Retry-After", cloudtest.RateLimited("")},
		{"500", cloudtest.Status(http.StatusInternalServerError, "")},
		{"malformed", cloudtest.Malformed()},
		{"401", cloudtest.Status(http.StatusUnauthorized, "")},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			w, cp := outageWorld(t)
			withClock(w.r)
			w.api.AlwaysOnCreate(&row.reply)
			errs := storm(t, w, 40, 20, 20, 0)
			t.Logf("%s: 40 calls over 20 keys: %d failed, %d provider creates, %d log lines",
				row.name, len(errs), len(cp.times()), w.logs.Count(fallbackLine))
			assert.Empty(t, errs)
			assert.Len(t, cp.times(), 1)
			assert.Equal(t, 1, w.logs.Count(fallbackLine))
		})
	}
}

// cloudPages lists the page targets of the cloud Chromium through its
// DevTools HTTP endpoint.
func cloudPages(t *testing.T, c *cloudtest.Chromium) int {
	t.Helper()
	return len(cloudPageList(t, c))
}

// cloudPageList lists the pages on the cloud browser, as "id url".
func cloudPageList(t *testing.T, c *cloudtest.Chromium) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.HTTPURL+"/json/list", nil)
	require.NoError(t, err)
	// No keep-alive: the test's own connections must not look like the
	// router's leftovers.
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var targets []struct{ ID, Type, URL string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&targets))
	var pages []string
	for _, tg := range targets {
		if tg.Type == "page" {
			pages = append(pages, tg.ID+" "+tg.URL)
		}
	}
	return pages
}

// Releases every 20 ms while callers create sessions, then Close with calls
// in flight: every session the provider made is released through it, the
// cloud browser keeps no page of ours, and a call that lost its session
// says so with a sentinel.
func TestReleaseAndCloseDuringCreationLeakNothing(t *testing.T) {
	w, _ := outageWorld(t)
	baseline := cloudPages(t, w.cloud)
	contextsBefore := len(remoteContexts(t, w.cloud.WSURL))
	// Nothing of the router outlives Close; the test's own servers keep
	// their connections until the test ends.
	before := runtime.NumGoroutine()
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(), goleak.IgnoreAnyFunction("net/http.(*conn).serve"))
	callers := proof(6, 50)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var (
		mu    sync.Mutex
		errs  []error
		calls atomic.Int64
		wg    sync.WaitGroup
	)
	stop := make(chan struct{})
	for g := range callers {
		wg.Go(func() {
			key := "c" + strconv.Itoa(g)
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, err := w.r.Exec(ctx, key, "", func(ctx context.Context, call *Call) error {
					_, err := chromedp.Run(ctx, chromedp.Evaluate[int]("1+1"))
					return err
				})
				calls.Add(1)
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
				if errors.Is(err, ErrClosed) {
					return
				}
			}
		})
	}
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			_ = w.r.Release(ctx, "c"+strconv.Itoa(i%callers))
		}
	})
	// Close comes once the calls are under way, however slow the machine.
	for until := time.Now().Add(time.Duration(proof(4, 15)) * time.Second); time.Now().Before(until) ||
		calls.Load() < int64(2*callers) && time.Now().Before(until.Add(90*time.Second)); {
		time.Sleep(20 * time.Millisecond)
	}
	start := time.Now()
	require.NoError(t, w.r.Close())
	closeTook := time.Since(start)
	close(stop)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("callers still running a minute after Close")
	}

	deadline := time.Now().Add(20 * time.Second)
	for (cloudPages(t, w.cloud) > baseline || len(remoteContexts(t, w.cloud.WSURL)) > contextsBefore) &&
		time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	left := cloudPages(t, w.cloud) - baseline
	contextsLeft := len(remoteContexts(t, w.cloud.WSURL)) - contextsBefore
	t.Logf("release/close: %d callers, %d calls, %d failed, provider made %d sessions and ended %d, %d live, %d cloud pages and %d browser contexts left, Chromium left: %v, goroutines %d before and %d after, Close took %v",
		callers, calls.Load(), len(errs), w.api.Made(), w.api.Ended(), w.api.LiveCount(), left, contextsLeft, w.r.side.Alive(),
		before, runtime.NumGoroutine(), closeTook.Round(time.Millisecond))
	assert.LessOrEqual(t, contextsLeft, 0, "the cloud browser has no browser context of ours left")
	assert.False(t, w.r.side.Alive(), "no local Chromium outlives Close")
	assert.Equal(t, w.api.Made(), w.api.Ended(), "every session the provider made is released through it")
	assert.Zero(t, w.api.LiveCount())
	if !assert.LessOrEqual(t, left, 0, "the cloud browser has no page of ours left: %q", cloudPageList(t, w.cloud)) {
		for line := range strings.Lines(w.logs.String()) {
			if strings.Contains(line, "may stay open") {
				t.Log(line)
			}
		}
	}
	for _, err := range errs {
		if !errors.Is(err, ErrReleased) && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrBrowserDead) {
			t.Errorf("a call that lost its session must say why with a sentinel: %v", err)
		}
	}
}

// fakeTab is a tab with no browser under it, for the tests of the session
// cache that need none.
type fakeTab struct{}

func (fakeTab) Context() context.Context { return context.Background() }
func (fakeTab) Dead() bool               { return false }
func (fakeTab) WrapErr(err error) error  { return err }
func (fakeTab) Replace(context.Context) (func(), error) {
	return nil, errors.New("a fake tab cannot be replaced")
}
func (fakeTab) BrowserContextID() cdp.BrowserContextID { return "" }

// Close releases sessions side by side, and the provider's own HTTP client
// leaves no connection and no goroutine behind.
func TestCloseReleasesConcurrentlyAndLeavesNothing(t *testing.T) {
	api := cloudtest.NewServer(t, cloudtest.Browserbase, "ws://127.0.0.1:1/devtools/browser/none",
		cloudtest.WithAPIKey(testAPIKey), cloudtest.WithProjectID("proj-1"))
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	p := provider.NewBrowserbase(testAPIKey, "proj-1", provider.WithBaseURL(api.URL))
	r, err := New(p, WithResolver(testResolver), WithEgressDialer(loopbackDialer(t)))
	require.NoError(t, err)
	ctx := testCtx(t)
	const n = 100
	r.mu.Lock()
	for i := range n {
		key := "s" + strconv.Itoa(i)
		s, err := p.CreateSession(ctx, key)
		require.NoError(t, err)
		e := &entry{key: key, route: route.Cloud, h: browsertab.NewHandle(fakeTab{})}
		e.ending.Add(teardown.Provider, func(ctx context.Context) error { return p.ReleaseSession(ctx, s) })
		r.sess.M[key] = e
	}
	r.mu.Unlock()
	api.SetReleaseDelay(200 * time.Millisecond)
	start := time.Now()
	require.NoError(t, r.Close())
	t.Logf("close: %d sessions, releases at once at most %d, Close took %v",
		n, api.MaxConcurrentReleases(), time.Since(start).Round(time.Millisecond))
	assert.EqualValues(t, n, api.Ended(), "every session is released")
	assert.Greater(t, api.MaxConcurrentReleases(), int64(1), "Close releases side by side")
	assert.LessOrEqual(t, api.MaxConcurrentReleases(), int64(sessions.CloseParallel), "and bounded")
}

// SIGKILL of the local Chromium and of the cloud Chromium while calls run
// on both: every call in flight fails with ErrBrowserDead naming which
// browser died, and the next calls go on (a fresh local Chromium; the
// cloud's death opens a window and those keys fall back).
func TestBrowsersKilledUnderLoad(t *testing.T) {
	if os.Getenv("HYBROUTE_PROOF") == "" {
		t.Skip("the long suite: HYBROUTE_PROOF=1 (make proof)")
	}
	w, _ := outageWorld(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a loaded machine
	defer cancel()
	// Half the keys on the cloud, half on the local sidecar.
	keys := 10
	local := func(k int) bool { return k%2 == 1 }
	for k := range keys {
		u := w.site.url(publicHost, "/warm")
		if local(k) {
			u = w.site.url("127.0.0.1", "/warm")
		}
		res, err := w.r.Navigate(ctx, "k"+strconv.Itoa(k), u, nil)
		require.NoError(t, err)
		require.Equal(t, local(k), res.Route == route.Local, "key %d's route", k)
	}
	pid := currentProc(t, w.r.side).PID()
	// Every key runs a call that lasts until its browser dies.
	var started sync.WaitGroup
	errs := make([]error, keys)
	var calls sync.WaitGroup
	for k := range keys {
		started.Add(1)
		calls.Go(func() {
			_, errs[k] = w.r.Exec(ctx, "k"+strconv.Itoa(k), "", func(ctx context.Context, call *Call) error {
				started.Done()
				_, err := chromedp.Run(ctx, chromedp.Evaluate[int](`new Promise(r => setTimeout(() => r(1), 600000))`,
					chromedp.EvalAwaitPromise))
				return err
			})
		})
	}
	waitGroup(t, &started, 5*time.Minute, "the calls did not start")
	time.Sleep(500 * time.Millisecond) // the evaluations are in the browsers
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	w.cloud.Close()
	waitGroup(t, &calls, 5*time.Minute, "calls still running after their browsers were killed")
	var dead int
	for k, err := range errs {
		if !assert.ErrorIs(t, err, ErrBrowserDead, "key %d: a call that lost its browser says so", k) {
			continue
		}
		dead++
		if local(k) {
			assert.Contains(t, err.Error(), "the local Chromium died", "key %d", k)
			assert.Contains(t, err.Error(), "pid "+strconv.Itoa(pid), "key %d", k)
		} else {
			assert.Contains(t, err.Error(), "the cloud browser of Browserbase died", "key %d", k)
		}
	}
	// The next calls go on: local keys on a fresh Chromium, cloud keys on
	// the fallback (the provider still hands out the dead browser).
	var failedAfter, fellBack int
	for k := range keys {
		res, err := w.r.Exec(ctx, "k"+strconv.Itoa(k), "", func(ctx context.Context, call *Call) error {
			_, err := chromedp.Run(ctx, chromedp.Evaluate[int]("1+1"))
			return err
		})
		if err != nil {
			failedAfter++
			t.Logf("after: %v", err)
		}
		if res.FallbackFromCloud {
			fellBack++
		}
	}
	newPid := currentProc(t, w.r.side).PID()
	start := time.Now()
	require.NoError(t, w.r.Close())
	t.Logf("kill: %d keys (%d cloud, %d local), calls in flight: %d ErrBrowserDead of %d; next calls: %d failed, %d on the fallback; local Chromium %d then %d; %d local Chromium left after Close (%v); %d warning lines",
		keys, keys/2, keys/2, dead, keys, failedAfter, fellBack, pid, newPid, boolInt(w.r.side.Alive()),
		time.Since(start).Round(time.Millisecond), w.logs.Count(fallbackLine))
	assert.Zero(t, failedAfter, "the next calls go on")
	assert.Equal(t, keys/2, fellBack, "the cloud keys fell back")
	assert.NotEqual(t, pid, newPid, "a fresh local Chromium")
	assert.True(t, processGone(pid))
	assert.False(t, w.r.side.Alive())
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// waitGroup waits for wg, failing the test after d.
func waitGroup(t *testing.T, wg *sync.WaitGroup, d time.Duration, msg string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatal(msg)
	}
}

// A cancellation storm: callers that give up at random moments of their
// sessions' creation (a deadline, or a cancel) fail with their own
// context's error and nothing else; every session the provider made is
// released, the cloud browser keeps no page of ours, and no Chromium and
// no goroutine of the router outlives Close.
func TestCancellationStorm(t *testing.T) {
	if os.Getenv("HYBROUTE_PROOF") == "" {
		t.Skip("the long suite: HYBROUTE_PROOF=1 (make proof)")
	}
	w, _ := outageWorld(t)
	baseline := cloudPages(t, w.cloud)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(), goleak.IgnoreAnyFunction("net/http.(*conn).serve"))
	const callers, keys = 60, 20
	var wg sync.WaitGroup
	var mu sync.Mutex
	var wrong []error
	var ok, cancelled int
	for i := range callers {
		wg.Go(func() {
			after := time.Duration(i%12) * 400 * time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			if i%2 == 0 {
				ctx, cancel = context.WithTimeout(ctx, after) // a deadline
				defer cancel()
			} else {
				t := time.AfterFunc(after, cancel) // a caller that gives up
				defer t.Stop()
			}
			// A public and a private URL: cloud and local sessions both.
			host := publicHost
			if i%3 == 0 {
				host = "127.0.0.1"
			}
			_, err := w.r.Navigate(ctx, "s"+strconv.Itoa(i%keys), w.site.url(host, "/c"), nil)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
				cancelled++
			default:
				wrong = append(wrong, err)
			}
		})
	}
	waitGroup(t, &wg, 10*time.Minute, "callers still running")
	start := time.Now()
	require.NoError(t, w.r.Close())
	closeTook := time.Since(start)
	deadline := time.Now().Add(20 * time.Second)
	for cloudPages(t, w.cloud) > baseline && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	left := cloudPages(t, w.cloud) - baseline
	t.Logf("storm: %d callers over %d keys: %d ok, %d gave up, %d other errors; provider made %d sessions and ended %d; %d cloud pages left; local Chromium left: %v; Close took %v",
		callers, keys, ok, cancelled, len(wrong), w.api.Made(), w.api.Ended(), left, w.r.side.Alive(), closeTook.Round(time.Millisecond))
	for _, err := range wrong {
		t.Errorf("a caller that gave up hears its own context's error: %v", err)
	}
	assert.Equal(t, callers, ok+cancelled+len(wrong))
	assert.Equal(t, w.api.Made(), w.api.Ended(), "every session the provider made is released")
	if !assert.LessOrEqual(t, left, 0, "the cloud browser has no page of ours left: %q", cloudPageList(t, w.cloud)) {
		for line := range strings.Lines(w.logs.String()) {
			if strings.Contains(line, "may stay open") {
				t.Log(line)
			}
		}
	}
	assert.False(t, w.r.side.Alive())
}

// processesUnder lists the processes whose command line names a
// --user-data-dir inside dir, and their descendants: a headless shell
// passes the argument to none of its children.
func processesUnder(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	arg := []byte("--user-data-dir=" + dir + string(os.PathSeparator))
	children := map[int][]int{}
	var next []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if ppid, ok := sc.ParentOf(pid); ok {
			children[ppid] = append(children[ppid], pid)
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && bytes.Contains(b, arg) {
			next = append(next, pid)
		}
	}
	var pids []int
	for len(next) > 0 {
		pid := next[len(next)-1]
		next = next[:len(next)-1]
		if !slices.Contains(pids, pid) {
			pids = append(pids, pid)
			next = append(next, children[pid]...)
		}
	}
	return pids
}

// Close while the local Chromium is starting ends the start: the process
// it launched and its children are killed, its temp profile removed, and
// the open that started it fails with the sidecar's closed error.
func TestCloseDuringChromiumStartLeavesNothing(t *testing.T) {
	requireChromium(t)
	// Not parallel: the temp profiles go into a directory of the test's
	// own, where the leftovers are counted.
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for i, delay := range []time.Duration{0, 200 * time.Millisecond, 700 * time.Millisecond, 1500 * time.Millisecond} {
		s := testSidecar(t)
		errc := make(chan error, 1)
		go func() {
			_, err := s.Open(context.Background(), "k")
			errc <- err
		}()
		// Close once the process runs (and a moment later: a start has
		// several steps), however slow the machine.
		launched := 0 // as first seen: a process may come and go (a wrapper that execs)
		for until := time.Now().Add(time.Minute); time.Now().Before(until); time.Sleep(5 * time.Millisecond) {
			if launched = len(processesUnder(tmp)); launched > 0 {
				break
			}
		}
		// Every process of the start, taken until close returns: once the
		// browser is gone, a child of a headless shell that outlived it
		// carries no --user-data-dir and has no parent to be found under.
		seen := map[int]bool{}
		stopWatch, watched := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(watched)
			for {
				for _, p := range processesUnder(tmp) {
					seen[p] = true
				}
				select {
				case <-stopWatch:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		}()
		time.Sleep(delay)
		start := time.Now()
		require.NoError(t, s.Close())
		took := time.Since(start)
		close(stopWatch)
		<-watched
		var err error
		select {
		case err = <-errc:
		case <-time.After(time.Minute):
			t.Fatal("open still waiting a minute after close")
		}
		left := processesUnder(tmp)
		profiles, _ := filepath.Glob(filepath.Join(tmp, "hybroute-chromium-*"))
		t.Logf("close during start %d (%v after launch): %d processes at close, %d left, %d profiles left, open: %v, close took %v",
			i, delay, launched, len(left), len(profiles), err, took.Round(time.Millisecond))
		assert.Positive(t, launched, "the start had launched Chromium")
		assert.Empty(t, left, "no Chromium process outlives close")
		for p := range seen {
			// A killed Chromium's children exit a moment after it, later
			// still on a loaded machine.
			assert.Eventually(t, func() bool { return processGone(p) }, 10*time.Second, 50*time.Millisecond,
				"a process of the start (pid %d) outlived close", p)
		}
		assert.Empty(t, profiles, "no temp profile outlives close")
		if err != nil {
			assert.ErrorIs(t, err, sc.ErrClosed, "the open ended by close says so")
		}
		assert.False(t, s.Alive())
	}
}

// A connection cut short at any moment of its opening leaves no page on the
// remote browser. chromedp learns the tab's id only when Target.createTarget
// answers, so a connect that gives up before that must still find and close
// the page the browser makes a moment later.
func TestConnectCutShortLeavesNoPage(t *testing.T) {
	t.Parallel()
	cloud := cloudtest.LaunchChromium(t)
	cfg := config.Default()
	cfg.Resolver = testResolver
	pol := newPolicy(&cfg, false, nil)
	baseline := cloudPages(t, cloud)
	made, cut := 0, 0
	for i := range 40 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i)*4*time.Millisecond)
		rt, err := connectRemote(ctx, cloud.WSURL, "the test browser", floor.NewGuard(pol, nil, route.Cloud))
		cancel()
		if err != nil {
			require.ErrorIs(t, err, context.DeadlineExceeded)
			cut++
			continue
		}
		made++
		require.NoError(t, rt.Close(context.Background()))
	}
	// Chromium lists a closed page a moment longer.
	for deadline := time.Now().Add(20 * time.Second); cloudPages(t, cloud) > baseline && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("connects: %d cut short, %d made and closed", cut, made)
	assert.Equal(t, baseline, cloudPages(t, cloud), "pages left: %q", cloudPageList(t, cloud))
	assert.NotZero(t, cut, "no connect was cut short: the test proves nothing")
}
