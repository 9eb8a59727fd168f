// Package toolfuzz drives the browser toolset the way models misuse it:
// long random sequences of tool calls with navigations that fail, refused
// URLs, stale refs, closed tabs, dialogs left open, back and forward through
// errors, calls racing a navigation on one session, calls cancelled and
// sessions released mid-call. After every call it checks the invariants of
// the toolset (Run); a seed reproduces a run's sequence of calls.
//
// It knows the toolset only through a Target, so that the same sequences run
// in process (the agent package's Toolset.Call) and over MCP (the SDK's
// client against the mcpserver package).
package toolfuzz

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Outcome is what a tool call answered.
type Outcome struct {
	Text    string
	IsError bool
}

// Target is the toolset under test.
type Target interface {
	// Call runs one tool call for session with the raw JSON arguments. Its
	// error is the toolset's own (the caller gave up, the toolset is
	// closed); a tool error is an Outcome with IsError set.
	Call(ctx context.Context, session, tool string, args json.RawMessage) (Outcome, error)
	// Release ends the session's browsers, as a client that goes away
	// does, while other calls of the session may be running.
	Release(ctx context.Context, session string) error
}

// PanicError is what a Target returns for a call that panicked.
type PanicError struct {
	Value any
	Stack string
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v\n%s", e.Value, e.Stack) }

// UnexpectedPrefixes begin the texts of tool errors that are outside the
// documented set: the toolset's catch-all for an error it has no words for
// (agent/errors.go, describe's last line), which passes on what the browser
// or the Router said, and the state tools' equivalents. A test in the agent
// package keeps the first in step with describe.
var UnexpectedPrefixes = []string{"the browser call failed: ", "saving the state failed: ", "loading the state failed: "}

// Config is one run.
type Config struct {
	Seed  uint64
	Calls int // tool calls to make; the probes after errors are not counted
	// Site is the base URL of agenttest.NewFuzzSite, http://127.0.0.1:port.
	Site string
	// Sessions are the session keys the calls go to (at least one).
	Sessions []string
	// Check looks for leaked tabs and browser contexts (Watch.Check); it
	// runs every CheckEvery steps, when no call runs, and at the end.
	Check      func(ctx context.Context) error
	CheckEvery int
	// CallTimeout bounds one call; a call that outlives it is a break
	// (default 90 s).
	CallTimeout time.Duration
	// Violations, when set, reports traffic the test's egress dialer
	// refused because it was not for loopback: each is a break.
	Violations func() []string
	// Progress, when set, hears how far a run is every 500 calls.
	Progress func(format string, args ...any)
}

// Break is an invariant a call broke.
type Break struct {
	Step      int
	Call      string
	Invariant string
	Detail    string
}

func (b Break) String() string {
	return fmt.Sprintf("step %d: %s: %s\n    call: %s", b.Step, b.Invariant, b.Detail, b.Call)
}

// Report is what a run did and found.
type Report struct {
	Seed          uint64
	Calls, Probes int
	ToolErrors    int // calls answered with a tool error from the documented set
	Cancelled     int // calls the run cancelled mid-way
	Releases      int // sessions released mid-call
	Checks        int // leak checks
	Breaks        []Break
	Wall          time.Duration
	ByTool        map[string]int
	TimeByTool    map[string]time.Duration
	// ProbeTime and CheckTime are the run's time in probes and leak checks.
	ProbeTime, CheckTime time.Duration
	log                  []string
}

// maxBreaks bounds the breaks a run records before it stops: one bug
// usually breaks many calls after it.
const maxBreaks = 20

// Log is the sequence of calls the run made, one line each, with what each
// answered (cut).
func (r *Report) Log() []string { return r.log }

// String is the summary of the run and its breaks.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %d calls (%d tool errors of the documented set, %d cancelled, %d releases mid-call), %d probes, %d leak checks, %d invariant breaks, %s (%.1f calls/s)",
		r.Seed, r.Calls, r.ToolErrors, r.Cancelled, r.Releases, r.Probes, r.Checks, len(r.Breaks), r.Wall.Round(time.Millisecond), float64(r.Calls)/r.Wall.Seconds())
	for _, br := range r.Breaks {
		b.WriteString("\n  " + br.String())
	}
	return b.String()
}

// ShortSeed is the seed of the short run of the normal tests: the same
// sequence every time, so that a run of the suite fails for a change, not
// for a new sequence. A long run (HYBROUTE_FUZZ_CALLS) takes a new seed.
const ShortSeed = 1

// SeedFromEnv is the seed of HYBROUTE_FUZZ_SEED, to replay a run; else a
// new one when HYBROUTE_FUZZ_CALLS asks for a long run, and ShortSeed for
// the short one. calls is HYBROUTE_FUZZ_CALLS, or def.
func SeedFromEnv(def int) (seed uint64, calls int) {
	seed, calls = ShortSeed, def
	if s := os.Getenv("HYBROUTE_FUZZ_CALLS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			seed, calls = rand.Uint64()%1_000_000_000, n
		}
	}
	if s := os.Getenv("HYBROUTE_FUZZ_SEED"); s != "" {
		if n, err := strconv.ParseUint(s, 10, 64); err == nil {
			seed = n
		}
	}
	return seed, calls
}

// call is one tool call of a step.
type call struct {
	session string
	tool    string
	args    json.RawMessage
	// refusal is a word the answer must contain, as a tool error: the
	// reason a URL of the call is refused for.
	refusal string
	delay   time.Duration // after the step starts
	// cancelAfter: the run cancels the call this long after it starts.
	cancelAfter time.Duration
}

func (c call) String() string {
	s := c.session + " " + c.tool + " " + cut(string(c.args), 300)
	if c.delay > 0 {
		s += fmt.Sprintf(" (after %s)", c.delay)
	}
	if c.cancelAfter > 0 {
		s += fmt.Sprintf(" (cancelled after %s)", c.cancelAfter)
	}
	return s
}

// step is calls that run at once, and a release of a session during them.
type step struct {
	calls        []call
	release      string // session to release, "" for none
	releaseAfter time.Duration
}

// sessionState is what the run knows of a session, as a model would: the
// refs of its last snapshot, every ref it ever saw, the tabs of the last
// list, whether a dialog may wait.
type sessionState struct {
	refs, seen, tabs []string
	dialog           bool
}

var (
	refRE = regexp.MustCompile(`\[ref=(e\d+)\]`)
	tabRE = regexp.MustCompile(`(?m)^- (t\d+)\b`)
)

// runner is one run.
type runner struct {
	cfg      Config
	t        Target
	rng      *rand.Rand
	rep      *Report
	sessions map[string]*sessionState
	step     int
}

// Run drives t through cfg.Calls calls and reports what broke.
//
// The invariants, checked after every call:
//   - no Go error but a cancelled call's context error, and no tool error
//     whose text is outside the documented set (UnexpectedPrefixes), or empty;
//   - no panic, and no call that outlives CallTimeout;
//   - a refused URL is answered with its reason (the word "metadata" for a
//     metadata address), and every "blocked:" line names one;
//   - the session is usable after every error: a probe (browser_exec of
//     1+1, after answering a waiting dialog or leaving a blocked page)
//     succeeds;
//   - no tab or browser context outlives what the Router lists (cfg.Check),
//     and no traffic leaves loopback (cfg.Violations).
func Run(ctx context.Context, cfg Config, t Target) *Report {
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 90 * time.Second
	}
	if cfg.CheckEvery <= 0 {
		cfg.CheckEvery = 25
	}
	r := &runner{
		cfg: cfg, t: t,
		rng:      rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		rep:      &Report{Seed: cfg.Seed, ByTool: map[string]int{}, TimeByTool: map[string]time.Duration{}},
		sessions: map[string]*sessionState{},
	}
	for _, s := range cfg.Sessions {
		r.sessions[s] = &sessionState{}
	}
	start := time.Now()
	reported := 0
	for r.rep.Calls < cfg.Calls && len(r.rep.Breaks) < maxBreaks && ctx.Err() == nil {
		r.step++
		st := r.next()
		r.runStep(ctx, st)
		if r.step%cfg.CheckEvery == 0 {
			r.check(ctx)
		}
		if cfg.Progress != nil && r.rep.Calls/500 > reported {
			reported = r.rep.Calls / 500
			cfg.Progress("%d calls in %s, %d breaks, load average %s", r.rep.Calls, time.Since(start).Round(time.Second), len(r.rep.Breaks), Load())
		}
	}
	r.check(ctx)
	r.rep.Wall = time.Since(start)
	return r.rep
}

func (r *runner) breakf(c string, invariant, format string, args ...any) {
	b := Break{Step: r.step, Call: c, Invariant: invariant, Detail: fmt.Sprintf(format, args...)}
	r.rep.Breaks = append(r.rep.Breaks, b)
	// A long run's report comes at its end; a break is told as it happens
	// so that whoever watches a run of an hour can start on it.
	if r.cfg.Progress != nil {
		r.cfg.Progress("break at #%d, %s: %s: %s", b.Step, b.Call, b.Invariant, cut(b.Detail, 400))
	}
}

func (r *runner) logf(format string, args ...any) {
	r.rep.log = append(r.rep.log, fmt.Sprintf("#%d ", r.step)+fmt.Sprintf(format, args...))
}

func (r *runner) check(ctx context.Context) {
	defer func(start time.Time) { r.rep.CheckTime += time.Since(start) }(time.Now())
	if r.cfg.Check != nil {
		r.rep.Checks++
		if err := r.cfg.Check(ctx); err != nil {
			r.breakf("(leak check)", "no leaked tab or browser context", "%v", err)
		}
	}
	if r.cfg.Violations != nil {
		if v := r.cfg.Violations(); len(v) > 0 {
			r.breakf("(egress)", "no traffic off loopback", "%v", v)
		}
	}
}

type answer struct {
	out       Outcome
	err       error
	took      time.Duration
	cancelled bool
}

// do runs one call with the run's deadline, and cancels it when the call
// says so.
func (r *runner) do(ctx context.Context, c call) (a answer) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
	defer cancel()
	if c.cancelAfter > 0 {
		timer := time.AfterFunc(c.cancelAfter, func() { cancel() })
		defer timer.Stop()
	}
	defer func() {
		if v := recover(); v != nil {
			a.err = &PanicError{Value: v}
		}
	}()
	start := time.Now()
	a.out, a.err = r.t.Call(ctx, c.session, c.tool, c.args)
	a.took = time.Since(start)
	a.cancelled = c.cancelAfter > 0 && a.took >= c.cancelAfter
	return a
}

func (r *runner) runStep(ctx context.Context, st step) {
	answers := make([]answer, len(st.calls))
	var wg sync.WaitGroup
	for i, c := range st.calls {
		wg.Go(func() {
			if c.delay > 0 {
				time.Sleep(c.delay)
			}
			answers[i] = r.do(ctx, c)
		})
	}
	var relErr error
	if st.release != "" {
		wg.Go(func() {
			time.Sleep(st.releaseAfter)
			rctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
			defer cancel()
			relErr = r.t.Release(rctx, st.release)
		})
	}
	wg.Wait()
	if st.release != "" {
		r.rep.Releases++
		r.logf("release %s after %s: %v", st.release, st.releaseAfter, relErr)
		if relErr != nil {
			r.breakf("release "+st.release, "no error outside the documented set", "Release: %v", relErr)
		}
		*r.sessions[st.release] = sessionState{}
	}
	probe := map[string]bool{}
	for i, c := range st.calls {
		a := answers[i]
		r.rep.Calls++
		r.rep.ByTool[c.tool]++
		r.rep.TimeByTool[c.tool] += a.took
		r.logf("%s -> %s", c, summary(a))
		if r.judge(c, a) {
			probe[c.session] = true
		}
		r.learn(c, a)
	}
	if st.release != "" {
		probe[st.release] = true
	}
	for _, s := range r.cfg.Sessions {
		if probe[s] {
			r.probe(ctx, s)
		}
	}
}

func summary(a answer) string {
	switch {
	case a.err != nil:
		return fmt.Sprintf("Go error after %s: %v", a.took.Round(time.Millisecond), a.err)
	case a.out.IsError:
		return fmt.Sprintf("tool error after %s: %s", a.took.Round(time.Millisecond), cut(a.out.Text, 200))
	}
	return fmt.Sprintf("ok after %s: %s", a.took.Round(time.Millisecond), cut(a.out.Text, 120))
}

func cut(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// reasonWords are what a refusal names its reason by.
var reasonWords = []string{"metadata", "private", "internal address", "credential", "not a URL", "resolve", "not allowed", "scheme"}

// judge checks the invariants of one answer, and says whether it was an
// error (which a probe follows).
func (r *runner) judge(c call, a answer) (failed bool) {
	var pe *PanicError
	switch {
	case errors.As(a.err, &pe):
		r.breakf(c.String(), "no panic", "%v", pe)
		return true
	case a.err != nil && c.cancelAfter > 0 && errors.Is(a.err, context.Canceled):
		r.rep.Cancelled++
		return true
	case errors.Is(a.err, ErrReleased):
		return true
	case errors.Is(a.err, context.DeadlineExceeded):
		r.breakf(c.String(), "no call outlives its deadline", "no answer within %s", r.cfg.CallTimeout)
		return true
	case a.err != nil:
		r.breakf(c.String(), "no error outside the documented set", "Go error: %v", a.err)
		return true
	}
	text := a.out.Text
	if c.refusal != "" && (!a.out.IsError || !strings.Contains(text, c.refusal)) {
		r.breakf(c.String(), "every refusal explained", "want a tool error naming %q, got (error %v) %s", c.refusal, a.out.IsError, cut(text, 400))
	}
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, "blocked:") && !containsAny(line, reasonWords) {
			r.breakf(c.String(), "every refusal explained", "a blocked line names no reason: %s", cut(line, 400))
		}
	}
	if !a.out.IsError {
		return false
	}
	if a.cancelled {
		r.rep.Cancelled++
	}
	switch {
	case strings.TrimSpace(text) == "":
		r.breakf(c.String(), "no error outside the documented set", "a tool error with no text")
	case hasUnexpectedPrefix(text):
		r.breakf(c.String(), "no error outside the documented set", "%s", cut(text, 600))
	default:
		r.rep.ToolErrors++
	}
	return true
}

func hasUnexpectedPrefix(text string) bool {
	for line := range strings.Lines(text) {
		for _, p := range UnexpectedPrefixes {
			if strings.HasPrefix(line, p) {
				return true
			}
		}
	}
	return false
}

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// learn keeps what a model would of an answer: refs, tabs, a dialog.
func (r *runner) learn(c call, a answer) {
	s := r.sessions[c.session]
	if a.err != nil {
		return
	}
	text := a.out.Text
	if strings.Contains(text, "waits for your answer") || strings.Contains(text, "dialog is open") {
		s.dialog = true
	}
	if c.tool == "browser_handle_dialog" && !a.out.IsError {
		s.dialog = false
	}
	if a.out.IsError {
		return
	}
	switch c.tool {
	case "browser_snapshot":
		s.refs = s.refs[:0]
		for _, m := range refRE.FindAllStringSubmatch(text, -1) {
			s.refs = append(s.refs, m[1])
			if !slices.Contains(s.seen, m[1]) && len(s.seen) < 500 {
				s.seen = append(s.seen, m[1])
			}
		}
	case "browser_tabs":
		if ids := tabRE.FindAllStringSubmatch(text, -1); len(ids) > 0 {
			s.tabs = s.tabs[:0]
			for _, m := range ids {
				s.tabs = append(s.tabs, m[1])
			}
		}
	case "browser_close":
		*s = sessionState{}
	}
}

// probe checks that session answers a cheap call after an error, as a
// model that reads the answers would get it to: it answers a dialog that
// waits, leaves a blocked page, and asks again after a page that moved
// under the call (a page that navigates itself). Four tries.
func (r *runner) probe(ctx context.Context, session string) {
	defer func(start time.Time) { r.rep.ProbeTime += time.Since(start) }(time.Now())
	exec := call{session: session, tool: "browser_exec", args: json.RawMessage(`{"code":"1+1"}`)}
	var a answer
	for attempt := 0; attempt < 4; attempt++ {
		r.rep.Probes++
		a = r.do(ctx, exec)
		r.logf("probe %s -> %s", exec, summary(a))
		if a.err == nil && !a.out.IsError && strings.Contains(a.out.Text, "2") {
			return
		}
		if a.err != nil {
			break
		}
		var fix call
		switch text := a.out.Text; {
		case strings.Contains(text, "dialog"):
			fix = call{session: session, tool: "browser_handle_dialog", args: json.RawMessage(`{"accept":true}`)}
		case strings.HasPrefix(text, "blocked:"):
			fix = call{session: session, tool: "browser_navigate", args: r.marshal(map[string]any{"url": r.cfg.Site + "/"})}
		default:
			time.Sleep(200 * time.Millisecond)
			continue
		}
		r.rep.Probes++
		fa := r.do(ctx, fix)
		r.logf("probe %s -> %s", fix, summary(fa))
		if fa.err == nil && fix.tool == "browser_handle_dialog" && !fa.out.IsError {
			r.sessions[session].dialog = false
		}
	}
	r.breakf(exec.String(), "the session usable after every error", "the probe answered %s", summary(a))
}

func (r *runner) marshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps of plain values are marshalled
	}
	return b
}
