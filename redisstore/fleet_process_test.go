package redisstore_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/internal/agenttest"
	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/redistest"
	"github.com/hybroute/hybroute/internal/testenv"
	"github.com/hybroute/hybroute/provider"
	"github.com/hybroute/hybroute/redisstore"
)

// testAPIKey is the fake provider's key.
const testAPIKey = "bb_test_key_fleet_0123456789"

// child is the test binary run again as one test, so that a router lives
// in an OS process of its own. It reads lines on its stdin and writes
// lines on its stdout.
type child struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	exited chan struct{}

	mu   sync.Mutex
	out  []string      // the lines it wrote
	part bytes.Buffer  // the line being written
	more chan struct{} // a new line came (capacity 1)
	seen int           // lines await has gone past
}

// startChild runs the test named test in a new process, with env added to
// this one's. It is killed, if still running, when t ends.
func startChild(t *testing.T, test string, env ...string) *child {
	t.Helper()
	c := &child{t: t, name: test, exited: make(chan struct{}), more: make(chan struct{}, 1)}
	c.cmd = exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stdout, c.cmd.Stderr = c, os.Stderr
	// A Chromium the child leaves behind must not hold Wait on its pipes.
	c.cmd.WaitDelay = 10 * time.Second
	var err error
	c.stdin, err = c.cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, c.cmd.Start())
	go func() { _ = c.cmd.Wait(); close(c.exited) }()
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		<-c.exited
	})
	return c
}

// Write collects the child's stdout, line by line.
func (c *child) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.part.Write(p)
	for {
		i := bytes.IndexByte(c.part.Bytes(), '\n')
		if i < 0 {
			break
		}
		c.out = append(c.out, string(c.part.Next(i + 1)[:i]))
	}
	select {
	case c.more <- struct{}{}:
	default:
	}
	return len(p), nil
}

// await returns the next line starting with prefix, failing the test when
// the child exits first or none comes within d.
func (c *child) await(prefix string, d time.Duration) string {
	c.t.Helper()
	deadline := time.After(d)
	exited := false
	for {
		c.mu.Lock()
		for ; c.seen < len(c.out); c.seen++ {
			if line := c.out[c.seen]; strings.HasPrefix(line, prefix) {
				c.seen++
				c.mu.Unlock()
				return line
			}
		}
		c.mu.Unlock()
		if exited {
			c.t.Fatalf("the child %s exited before it wrote %q; it wrote:\n%s", c.name, prefix, c.lines())
		}
		select {
		case <-c.more:
		case <-c.exited:
			exited = true // Wait has copied its last lines: look once more
		case <-deadline:
			c.t.Fatalf("the child %s did not write %q within %v; it wrote:\n%s", c.name, prefix, d, c.lines())
		}
	}
}

// linesWith returns the lines the child wrote so far that start with prefix.
func (c *child) linesWith(prefix string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, l := range c.out {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// lines is everything the child wrote so far.
func (c *child) lines() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.out, "\n")
}

// send writes one line to the child's stdin.
func (c *child) send(line string) {
	c.t.Helper()
	_, err := io.WriteString(c.stdin, line+"\n")
	require.NoError(c.t, err, "writing to the child %s", c.name)
}

// wait waits for the child to exit, at most d.
func (c *child) wait(d time.Duration) {
	c.t.Helper()
	select {
	case <-c.exited:
	case <-time.After(d):
		c.t.Fatalf("the child %s did not exit within %v", c.name, d)
	}
}

// Routers in separate processes, on one redis-server, against one provider
// that answers every create with 429 and Retry-After: 2. The provider, in
// this process, counts the create calls of the whole fleet: one per
// window, each at least a window after the one before, and when a window
// ends exactly one of the routers asks again. Without the shared store
// every router asks on its own and two creates come within one window.
func TestFleetWindowAcrossProcesses(t *testing.T) {
	// Parallel: most of its time is its children starting up, and what it
	// asserts (creates a window apart) only grows surer on a busy machine.
	t.Parallel()
	if testing.Short() {
		t.Skip("skipping: re-runs the test binary as child routers (-short)")
	}
	testenv.RequireChromium(t)
	srv := redistest.Start(t)
	const (
		routers    = 3
		retryAfter = 2 * time.Second
		windows    = 3 // the first 429, then a probe at the end of two windows
	)
	site := agenttest.NewSite(t)
	// No create succeeds, so the browser behind the fake is never dialled.
	api := cloudtest.NewServer(t, cloudtest.Browserbase, "ws://127.0.0.1:1/devtools/browser/none",
		cloudtest.WithAPIKey(testAPIKey), cloudtest.WithProjectID("proj-1"))
	secs := strconv.Itoa(int(retryAfter / time.Second))
	rl := cloudtest.RateLimited(secs)
	api.AlwaysOnCreate(&rl)

	var kids []*child
	for range routers {
		kids = append(kids, startChild(t, "TestFleetWindowChild",
			"HYBROUTE_FLEET_WINDOW_REDIS="+srv.Addr, "HYBROUTE_FLEET_WINDOW_API="+api.URL,
			"HYBROUTE_FLEET_WINDOW_SITE="+site.URL(agenttest.PublicHost, "")))
	}
	// Each child starts its local Chromium before it says ready: the
	// routers then ask at once, not one after the other's start.
	for _, k := range kids {
		k.await("ready", 3*time.Minute)
	}
	for _, k := range kids {
		k.send("go")
	}
	deadline := time.After(2 * time.Minute)
	for api.Creates() < windows {
		select {
		case <-deadline:
			t.Fatalf("the fleet asked the provider %d times in 2 minutes, want %d: no probe at a window's end", api.Creates(), windows)
		case <-time.After(50 * time.Millisecond):
		}
	}
	var calls, local int
	for _, k := range kids {
		k.send("stop")
		line := k.await("result ", 3*time.Minute)
		var c, l int
		_, err := fmt.Sscanf(line, "result calls=%d local=%d", &c, &l)
		require.NoError(t, err, line)
		assert.Positive(t, c, "every router made calls during the windows")
		assert.Equal(t, c, l, "every call of %s ran on the local floor: %v", k.name, k.linesWith("error: "))
		calls, local = calls+c, local+l
		k.wait(time.Minute)
	}
	creates := api.CreateTimes()
	var gaps []time.Duration
	for i := 1; i < len(creates); i++ {
		gaps = append(gaps, creates[i].Sub(creates[i-1]).Round(time.Millisecond))
	}
	t.Logf("%d routers in %d processes, one redis-server: %d calls (%d local), %d provider creates in %v, Retry-After %v, gaps %v",
		routers, routers, calls, local, len(creates), creates[len(creates)-1].Sub(creates[0]).Round(time.Millisecond), retryAfter, gaps)
	require.GreaterOrEqual(t, len(creates), windows)
	for i := 1; i < len(creates); i++ {
		// A window opens when the 429 arrives, after the create did: the
		// next create comes a window after that, never sooner, whichever
		// process makes it.
		assert.GreaterOrEqual(t, creates[i].Sub(creates[i-1]), retryAfter,
			"create %d came %v after the one before: two routers asked in one window", i, creates[i].Sub(creates[i-1]))
	}
}

// TestFleetWindowChild is a child router of TestFleetWindowAcrossProcesses:
// on "go" its two workers open new keys (each released after its page) on
// the Redis store until "stop", then it writes what its calls did.
func TestFleetWindowChild(t *testing.T) {
	addr := os.Getenv("HYBROUTE_FLEET_WINDOW_REDIS")
	if addr == "" {
		t.Skip("a child router of TestFleetWindowAcrossProcesses")
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = c.Close() })
	p := provider.NewBrowserbase(testAPIKey, "proj-1", provider.WithBaseURL(os.Getenv("HYBROUTE_FLEET_WINDOW_API")))
	// A loaded machine answers slowly: a store call cut short would send
	// this router to its own window, and the floor must not run out of time.
	r := agenttest.NewRouter(t, p, hybroute.WithStore(redisstore.New(c)),
		hybroute.WithStoreTimeout(20*time.Second), hybroute.WithLocalTimeout(5*time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	require.NoError(t, r.Warm(ctx))
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	require.True(t, in.Scan(), "no go from the parent")
	stop := make(chan struct{})
	go func() { in.Scan(); close(stop) }() // "stop", or the parent gone

	site := os.Getenv("HYBROUTE_FLEET_WINDOW_SITE")
	var calls, local atomic.Int32
	var errs sync.Map
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-ctx.Done():
					return
				default:
				}
				key := "w" + strconv.Itoa(w) + "-" + strconv.Itoa(i)
				res, err := r.Navigate(ctx, key, site+"/"+key, nil)
				calls.Add(1)
				if err == nil && !res.FallbackFromCloud {
					err = errors.New("ran on the cloud while the provider answers 429")
				}
				if err != nil {
					errs.Store(key, err)
				} else {
					local.Add(1)
				}
				_ = r.Release(ctx, key)
			}
		})
	}
	wg.Wait()
	errs.Range(func(k, v any) bool {
		fmt.Printf("error: %s: %v\n", k, v)
		return true
	})
	fmt.Printf("result calls=%d local=%d\n", calls.Load(), local.Load())
}
