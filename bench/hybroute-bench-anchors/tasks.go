package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The task suite (make bench-tasks): each task is a scripted agent, a
// fixed plan of steps over one of the loopback sites, and a question
// whose answers must appear in what the agent read. The plan is the same
// on every server; each step is said in the server's own tools
// (dialects), and the agent reads refs out of the server's own text with
// the server's matcher, as a model would. Where a step needs something
// the agent has not read yet (the ref of a button, the rows of the next
// page) it takes a snapshot first, and where the snapshot does not show
// it, it searches the page once with the server's find tool, if it has
// one: so an answer that carries the change saves the snapshot after it,
// and a snapshot that leaves something out costs the call that brings it.

// task is one task of the suite.
type task struct {
	name, question string
	// answers must all appear in the text the agent read.
	answers []string
	steps   []step
}

// step is one step of a task's plan.
type step func(a *agent) error

// agent runs one task on one server and keeps what it read.
type agent struct {
	ctx   context.Context
	cs    *mcp.ClientSession
	s     server
	d     dialect
	pause time.Duration
	// read is every text the tools answered in this task, oldest first;
	// fresh is the index in read of the first answer since the last action.
	read  []string
	fresh int
	calls []callRecord
}

// callRecord is one call of a task: its tool and the characters of its
// answer's text.
type callRecord struct {
	tool   string
	chars  int
	images int
}

// errStep ends a task: a step could not be done.
var errStep = errors.New("step failed")

// call runs one tool call; a tool error is read as any answer is, and
// returned as an error too.
func (a *agent) call(tc toolCall) (string, error) {
	time.Sleep(a.pause)
	cctx, cancel := context.WithTimeout(a.ctx, time.Minute)
	defer cancel()
	res, err := a.cs.CallTool(cctx, &mcp.CallToolParams{Name: tc.name, Arguments: tc.args})
	if err != nil {
		// read and calls stay in step: the nth text is the nth call's.
		a.read = append(a.read, "")
		a.calls = append(a.calls, callRecord{tool: tc.name})
		return "", fmt.Errorf("%s %s: %w", a.s.name, tc.name, err)
	}
	text, images := contentText(res.Content)
	a.read = append(a.read, text)
	a.calls = append(a.calls, callRecord{tool: tc.name, chars: charCount(text), images: images})
	if res.IsError {
		return text, fmt.Errorf("%w: %s %s: tool error: %.300s", errStep, a.s.name, tc.name, text)
	}
	return text, nil
}

// contentText is the text of an answer, what the model reads; images
// are counted, not read.
func contentText(content []mcp.Content) (string, int) {
	var b strings.Builder
	images := 0
	for _, c := range content {
		switch c := c.(type) {
		case *mcp.TextContent:
			b.WriteString(c.Text)
		case *mcp.ImageContent:
			images++
		}
	}
	return b.String(), images
}

// act runs an action: what it answers is the first fresh text.
func (a *agent) act(tc toolCall) (string, error) {
	a.fresh = len(a.read)
	return a.call(tc)
}

func (a *agent) seen(cue string, since int) bool {
	return slices.ContainsFunc(a.read[since:], func(t string) bool { return strings.Contains(t, cue) && !foundNothing(t) })
}

// foundNothing reports whether t is a find's answer that nothing matched:
// it quotes the text searched for, which is not having read it.
func foundNothing(t string) bool {
	return strings.Contains(t, "(nothing in the page contains ") || strings.Contains(t, "No matches found for ")
}

// ref finds an element's ref in what the agent read, newest first, taking
// a snapshot when it has read none.
// When what it read leaves the element out (a list the server folded, a
// snapshot cut short), it searches for the element's name with the
// server's find tool first, as a model told "N more like these" does.
func (a *agent) ref(role, name string) (string, error) {
	for try := range 3 {
		switch {
		case try == 1 && a.d.find != nil && len(a.read) > 0:
			if _, err := a.call(a.d.find(name)); err != nil {
				return "", err
			}
		case try > 0:
			if _, err := a.call(a.d.snapshot()); err != nil {
				return "", err
			}
		}
		for i := len(a.read) - 1; i >= 0; i-- {
			if r, err := a.s.ref(a.read[i], role, name); err == nil {
				return r, nil
			}
		}
	}
	return "", fmt.Errorf("%w: %s: no ref for %s %q in what was read", errStep, a.s.name, role, name)
}

// onRef runs an action on an element; where the server refuses the ref
// (a stale one), it takes a snapshot and tries once more, as a model does.
func (a *agent) onRef(role, name string, do func(ref string) error) error {
	r, err := a.ref(role, name)
	if err != nil {
		return err
	}
	if err = do(r); !errors.Is(err, errStep) {
		return err
	}
	if _, err := a.call(a.d.snapshot()); err != nil {
		return err
	}
	if r, err = a.ref(role, name); err != nil {
		return err
	}
	return do(r)
}

// The steps.

func navigate(path string) step {
	return func(a *agent) error {
		_, err := a.act(a.d.navigate(a.siteURL(path)))
		return err
	}
}

func snapshot() step {
	return func(a *agent) error {
		_, err := a.call(a.d.snapshot())
		return err
	}
}

func click(role, name string) step {
	return func(a *agent) error {
		return a.onRef(role, name, func(ref string) error {
			_, err := a.act(a.d.click(ref))
			return err
		})
	}
}

func fill(role, name, text string, submit bool) step {
	return func(a *agent) error {
		return a.onRef(role, name, func(ref string) error {
			a.fresh = len(a.read)
			for _, tc := range a.d.fill(ref, text, submit) {
				if _, err := a.call(tc); err != nil {
					return err
				}
			}
			return nil
		})
	}
}

func choose(role, name, value string) step {
	return func(a *agent) error {
		return a.onRef(role, name, func(ref string) error {
			_, err := a.act(a.d.choose(ref, value))
			return err
		})
	}
}

func press(key string) step {
	return func(a *agent) error {
		_, err := a.act(a.d.press(key))
		return err
	}
}

func waitFor(text string) step {
	return func(a *agent) error {
		_, err := a.act(a.d.waitFor(text))
		return err
	}
}

// look makes sure the agent has read cue since the last action: if the
// action's answer did not show it, a snapshot; if that does not either,
// the server's find. A cue still unseen is no failure of the step: the
// task's answers decide.
func look(cue string) step {
	return func(a *agent) error {
		if a.seen(cue, a.fresh) {
			return nil
		}
		if _, err := a.call(a.d.snapshot()); err != nil || a.seen(cue, a.fresh) || a.d.find == nil {
			return err
		}
		_, err := a.call(a.d.find(cue))
		return err
	}
}

// until runs the steps again and again until the agent has read cue,
// at most max times.
func until(cue string, max int, steps func(i int) []step) step {
	return func(a *agent) error {
		for i := 0; i < max && !a.seen(cue, 0); i++ {
			for _, st := range steps(i) {
				if err := st(a); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

// siteURL is a path on the tasks' first origin; tasksSites is set by
// runTasks before any task runs.
func (a *agent) siteURL(path string) string { return tasksSites.url(path) }

var tasksSites *sites

// taskResult is one task's run on one server.
type taskResult struct {
	calls   []callRecord
	texts   []string // what the agent read, in order
	chars   int      // the answers' text, plus the tool list once
	ok      bool
	missing []string
	err     error
	wall    time.Duration
}

func runTask(ctx context.Context, s server, cs *mcp.ClientSession, t task, toolList int, pause time.Duration) taskResult {
	a := &agent{ctx: ctx, cs: cs, s: s, d: dialects[s.name], pause: pause}
	start := time.Now()
	var err error
	for _, st := range t.steps {
		if err = st(a); err != nil {
			break
		}
	}
	r := taskResult{calls: a.calls, texts: a.read, err: err, wall: time.Since(start), chars: toolList}
	for _, c := range a.calls {
		r.chars += c.chars
	}
	all := strings.Join(a.read, "\n")
	for _, ans := range t.answers {
		if !strings.Contains(all, ans) {
			r.missing = append(r.missing, ans)
		}
	}
	r.ok = len(r.missing) == 0
	return r
}

// charCount counts characters (runes), what the tokens are estimated from.
func charCount(s string) int { return utf8.RuneCountInString(s) }

// tokens estimates the tokens of n characters: one token per four
// characters, rounded up. No tokenizer module that runs offline was at
// hand; four characters a token is the rule of thumb the model vendors
// give for English text, and it is the same rule for every server, so the
// ratios hold whatever the constant.
func tokens(chars int) int { return (chars + 3) / 4 }

// toolListChars is the size of a server's tool list as the model reads
// it: the tools' JSON (names, descriptions, input schemas).
func toolListChars(ctx context.Context, cs *mcp.ClientSession) (int, error) {
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		return 0, err
	}
	b, err := json.Marshal(res.Tools)
	if err != nil {
		return 0, err
	}
	return charCount(string(b)), nil
}

// onlyTasks narrows the suite to the tasks whose names contain it (-only,
// with -tasks).
var onlyTasks string

// textsDir is where -texts writes what the agent read.
var textsDir = flag.String("texts", "", "with -tasks: write every answer the agent read into this directory, a file per server and task")

// runTasks runs every task on every server in turn, rounds times, and
// prints the table of the last round.
func runTasks(servers []server, rounds int, pause time.Duration, verbose bool, out, log io.Writer) error {
	st, err := serveSites()
	if err != nil {
		return err
	}
	defer st.stop()
	tasksSites = st
	ctx := context.Background()
	load0 := loadAverage()
	sessions, closeAll, err := connect(ctx, servers, verbose, log)
	if err != nil {
		return err
	}
	defer closeAll()
	lists := make([]int, len(servers))
	for i, s := range servers {
		if lists[i], err = toolListChars(ctx, sessions[i]); err != nil {
			return fmt.Errorf("%s: tools/list: %w", s.name, err)
		}
		// The browser starts on the first call: a warm-up navigation, not
		// measured, so that the first task does not pay for it.
		a := &agent{ctx: ctx, cs: sessions[i], s: s, d: dialects[s.name]}
		if _, err := a.call(a.d.navigate(st.url("/form"))); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	tasks := slices.DeleteFunc(suite(), func(t task) bool { return !strings.Contains(t.name, onlyTasks) })
	results := make([][]taskResult, len(tasks))
	for round := range max(rounds, 1) {
		for ti, t := range tasks {
			results[ti] = make([]taskResult, len(servers))
			for i, s := range servers {
				r := runTask(ctx, s, sessions[i], t, lists[i], pause)
				results[ti][i] = r
				if r.err != nil || !r.ok {
					fmt.Fprintf(log, "%s, %s: missing %q; %v\n", s.name, t.name, r.missing, r.err)
				}
			}
		}
		fmt.Fprintf(log, "round %d/%d done\n", round+1, max(rounds, 1))
	}
	tasksTable(out, servers, tasks, results, lists, load0, loadAverage())
	if *textsDir != "" {
		if err := writeTexts(*textsDir, servers, tasks, results); err != nil {
			return err
		}
	}
	if verbose {
		for ti, t := range tasks {
			for i, s := range servers {
				r := results[ti][i]
				fmt.Fprintf(log, "==== %s, %s: %v\n", s.name, t.name, r.calls)
				if !r.ok {
					for _, text := range r.texts {
						fmt.Fprintf(log, "---\n%.3000s\n", text)
					}
				}
			}
		}
	}
	return nil
}

// writeTexts writes what the agent read, a file per server and task, each
// answer under its tool's name and size.
func writeTexts(dir string, servers []server, tasks []task, results [][]taskResult) error {
	for i, s := range servers {
		for ti, t := range tasks {
			var b strings.Builder
			r := results[ti][i]
			fmt.Fprintf(&b, "Question: %s\nAnswers: %q, found: %t\n", t.question, t.answers, r.ok)
			for ci, text := range r.texts {
				fmt.Fprintf(&b, "==== %s: %d characters\n%s\n", r.calls[ci].tool, r.calls[ci].chars, text)
			}
			name := fmt.Sprintf("%s/%02d %s.txt", s.name, ti+1, t.name)
			if err := os.MkdirAll(filepath.Join(dir, s.name), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// loadAverage is the machine's load, for the table's heading.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// tasksTable prints, per task and in total, each server's tokens,
// characters, calls, success and wall time, and hybroute's tokens over the
// best anchor's (the anchor with the fewest tokens on that task, among
// those that succeeded where any did); then the largest answers each
// server read per task, where the tokens go.
func tasksTable(w io.Writer, servers []server, tasks []task, results [][]taskResult, lists []int, load0, load1 string) {
	fmt.Fprintf(w, "\n%d tasks; load average %s at the start, %s at the end.\n", len(tasks), load0, load1)
	fmt.Fprint(w, "Characters are the text of every tool answer the agent read, plus the tool list once per task (")
	for i, s := range servers {
		if i > 0 {
			fmt.Fprint(w, ", ")
		}
		fmt.Fprintf(w, "%s %s", s.name, thousands(lists[i]))
	}
	fmt.Fprint(w, " characters); tokens are characters ÷ 4, rounded up. A cell: tokens (characters) · calls · success · wall time.\n\n")
	tableHead(w, "Task", servers, "hybroute ÷ best anchor")
	totals := make([]taskResult, len(servers))
	oks := make([]int, len(servers))
	for ti, t := range tasks {
		fmt.Fprintf(w, "| %s |", t.name)
		for i := range servers {
			r := results[ti][i]
			fmt.Fprintf(w, " %s |", cell(r.chars, len(r.calls), okMark(r), r.wall))
			totals[i].chars += r.chars
			totals[i].calls = append(totals[i].calls, r.calls...)
			totals[i].wall += r.wall
			if r.ok {
				oks[i]++
			}
		}
		fmt.Fprintf(w, " %s |\n", ratio(results[ti]))
	}
	fmt.Fprint(w, "| **total** |")
	for i := range servers {
		fmt.Fprintf(w, " **%s** |", cell(totals[i].chars, len(totals[i].calls), fmt.Sprintf("%d/%d", oks[i], len(tasks)), totals[i].wall))
	}
	fmt.Fprintf(w, " **%s** |\n", ratio(totals))
	// The same total without the tool lists: what the answers alone cost.
	fmt.Fprint(w, "| total of the answers alone |")
	answers := slices.Clone(totals)
	for i := range servers {
		answers[i].chars -= len(tasks) * lists[i]
		fmt.Fprintf(w, " %s (%s) |", thousands(tokens(answers[i].chars)), thousands(answers[i].chars))
	}
	fmt.Fprintf(w, " %s |\n", ratio(answers))

	fmt.Fprint(w, "\nThe largest answers per task (tool: characters):\n\n")
	tableHead(w, "Task", servers, "")
	for ti, t := range tasks {
		fmt.Fprintf(w, "| %s |", t.name)
		for i := range servers {
			fmt.Fprintf(w, " %s |", largest(results[ti][i].calls, 3))
		}
		fmt.Fprint(w, "\n")
	}
}

func cell(chars, calls int, ok string, wall time.Duration) string {
	return fmt.Sprintf("%s (%s) · %d · %s · %.1f s", thousands(tokens(chars)), thousands(chars), calls, ok, wall.Seconds())
}

func okMark(r taskResult) string {
	if r.ok {
		return "✓"
	}
	return "✗"
}

// ratio is hybroute's tokens (the first result) over the best anchor's:
// the one with the fewest, among the anchors that succeeded if any did.
func ratio(rs []taskResult) string {
	best := 0
	anyOK := slices.ContainsFunc(rs[1:], func(r taskResult) bool { return r.ok })
	for _, r := range rs[1:] {
		if (r.ok || !anyOK) && (best == 0 || r.chars < best) {
			best = r.chars
		}
	}
	if best == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", float64(tokens(rs[0].chars))/float64(tokens(best)))
}

// largest lists the n largest answers of a task's calls.
func largest(calls []callRecord, n int) string {
	cs := slices.Clone(calls)
	slices.SortStableFunc(cs, func(a, b callRecord) int { return b.chars - a.chars })
	var parts []string
	for _, c := range cs[:min(n, len(cs))] {
		parts = append(parts, fmt.Sprintf("%s: %s", c.tool, thousands(c.chars)))
	}
	return strings.Join(parts, ", ")
}
