// Package toolfuzztest is what the toolset fuzzer runs on, in process and over
// MCP: the fuzz site, a local-only Router watched for leaks, and a toolset
// with every tool on.
package toolfuzztest

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent"
	"github.com/hybroute/hybroute/internal/agenttest"
	"github.com/hybroute/hybroute/internal/testenv"
	"github.com/hybroute/hybroute/internal/toolfuzz"
)

// World is what the toolset fuzzer (internal/toolfuzz) runs on: the
// fuzz site, a local-only Router whose dialogs wait for the model, watched
// for leaks, and a toolset over it with every directory set, so that every
// tool works.
type World struct {
	Site    *httptest.Server
	Router  *hybroute.Router
	Watch   *toolfuzz.Watch
	Toolset *agent.Toolset

	t          *testing.T
	goroutines int // before the Router started
	load       string

	mu         sync.Mutex
	violations []string
}

// New starts the world. End ends it.
func New(t *testing.T) *World {
	t.Helper()
	testenv.RequireChromium(t)
	w := &World{t: t, Site: agenttest.NewFuzzSite(t), load: toolfuzz.Load()}
	w.goroutines = runtime.NumGoroutine()
	opts := append(agenttest.RouterOptions(t, nil),
		hybroute.WithDialogPolicy(hybroute.DialogPolicy{Hold: true}),
		// Traffic off loopback is refused and counted: a break of the run,
		// reported with its seed, rather than a failure with none.
		hybroute.WithEgressDialer(agenttest.LoopbackDial(func(addr string) {
			w.mu.Lock()
			w.violations = append(w.violations, addr)
			w.mu.Unlock()
		})))
	r, err := hybroute.New(nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	w.Router, w.Watch = r, toolfuzz.NewWatch(r)
	uploads := t.TempDir()
	must(t, os.WriteFile(filepath.Join(uploads, "a.txt"), []byte("hello"), 0o600))
	outside := filepath.Join(t.TempDir(), "secret.txt")
	must(t, os.WriteFile(outside, []byte("secret"), 0o600))
	must(t, os.Symlink(outside, filepath.Join(uploads, "link.txt")))
	w.Toolset = agent.New(w.Watch,
		agent.WithCallTimeout(15*time.Second), agent.WithQueueWait(15*time.Second),
		agent.WithUploadDir(uploads), agent.WithDownloadDir(t.TempDir()),
		agent.WithStateDir(t.TempDir()), agent.WithSnapshotDir(t.TempDir()))
	return w
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Config is a run of calls calls from seed over the world's site.
func (w *World) Config(seed uint64, calls int, sessions ...string) toolfuzz.Config {
	return toolfuzz.Config{
		Seed: seed, Calls: calls, Site: w.Site.URL, Sessions: sessions,
		Check:    func(ctx context.Context) error { return w.Watch.Check(ctx, 10*time.Second) },
		Progress: w.t.Logf,
		Violations: func() []string {
			w.mu.Lock()
			defer w.mu.Unlock()
			v := w.violations
			w.violations = nil
			return v
		},
	}
}

// End ends the world after a run and adds to rep what it finds then: with
// every session released (release does it, for the sessions the world
// does not know of), a tab or browser context left; with the toolset and
// the Router closed, a goroutine left. It reports the run to t.
func (w *World) End(t *testing.T, name string, rep *toolfuzz.Report, release func(ctx context.Context)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	release(ctx)
	for _, k := range w.Watch.Keys() {
		if err := w.Toolset.Release(ctx, k); err != nil {
			rep.Breaks = append(rep.Breaks, toolfuzz.Break{Step: -1, Call: "release " + k, Invariant: "no error outside the documented set", Detail: err.Error()})
		}
	}
	if err := w.Watch.Check(ctx, 10*time.Second); err != nil {
		rep.Breaks = append(rep.Breaks, toolfuzz.Break{Step: -1, Call: "(every session released)", Invariant: "no leaked tab or browser context", Detail: err.Error()})
	}
	if err := w.Toolset.Close(); err != nil {
		t.Errorf("closing the toolset: %v", err)
	}
	if err := w.Router.Close(); err != nil {
		t.Errorf("closing the router: %v", err)
	}
	if err := toolfuzz.Goroutines(w.goroutines, 20*time.Second); err != nil {
		rep.Breaks = append(rep.Breaks, toolfuzz.Break{Step: -1, Call: "(toolset and router closed)", Invariant: "no leaked goroutine", Detail: err.Error()})
	}
	toolfuzz.Finish(t, name, rep, w.load)
}
