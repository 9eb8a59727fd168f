package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"testing"

	"github.com/hybroute/hybroute/agent"
	"github.com/hybroute/hybroute/internal/toolfuzz"
	"github.com/hybroute/hybroute/internal/toolfuzztest"
)

// inProcess is the toolset as an agent loop in Go calls it.
type inProcess struct{ ts *agent.Toolset }

func (p inProcess) Call(ctx context.Context, session, tool string, args json.RawMessage) (out toolfuzz.Outcome, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &toolfuzz.PanicError{Value: v, Stack: string(debug.Stack())}
		}
	}()
	res, err := p.ts.Call(ctx, session, tool, args)
	return toolfuzz.Outcome{Text: res.Text, IsError: res.IsError}, err
}

func (p inProcess) Release(ctx context.Context, session string) error {
	return p.ts.Release(ctx, session)
}

// TestToolsetFuzz drives the toolset through a random sequence of the
// calls models get wrong, on two sessions, and checks the invariants of
// toolfuzz.Run after every call. A short run by default; `make
// fuzz-toolset` runs a long one (HYBROUTE_FUZZ_CALLS), and
// HYBROUTE_FUZZ_SEED replays a run.
func TestToolsetFuzz(t *testing.T) {
	seed, calls := toolfuzz.SeedFromEnv(100)
	// On stderr, so that a crash of the test binary still shows it.
	fmt.Fprintf(os.Stderr, "TestToolsetFuzz: seed %d (HYBROUTE_FUZZ_SEED=%d replays it), %d calls\n", seed, seed, calls)
	w := toolfuzztest.New(t)
	rep := toolfuzz.Run(t.Context(), w.Config(seed, calls, "fz-a", "fz-b"), inProcess{w.Toolset})
	w.End(t, "in-process", rep, func(context.Context) {})
}
