// Command hybroute-bench-anchors runs hybroute mcp side by side with the
// two anchors, Playwright MCP and chrome-devtools-mcp: one MCP client (the
// official Go SDK's, over stdio) drives each server through the same
// scripted session on the same loopback pages, round after round in turn,
// and prints p50/p95 per tool and the snapshot sizes, with hybroute's p50
// as a ratio to the fastest anchor's. scripts/bench-anchors.sh (make
// bench-anchors) installs the anchors and runs it. With -tasks (make
// bench-tasks) it runs the task suite of tasks.go instead: what the model
// reads to get tasks done on each server.
package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The steps of the session, in the order they run.
const (
	stepNavigate   = "navigate (small page)"
	stepSnapSmall  = "snapshot (small page)"
	stepClick      = "click"
	stepType       = "type"
	stepExec       = "exec (1+1)"
	stepScreenshot = "screenshot"
	stepNavBig     = "navigate (1,500-node catalogue)"
	stepSnapBig    = "snapshot (1,500-node catalogue)"
)

var steps = []string{stepNavigate, stepSnapSmall, stepClick, stepType, stepExec, stepScreenshot, stepNavBig, stepSnapBig}

// selectSteps is the steps -only names, in the session's order: those
// whose names contain one of its comma-separated words, with the small
// page's navigation, which every other step needs, and its snapshot where
// click or type needs the refs it gives. An empty list is every step.
func selectSteps(only string) ([]string, error) {
	if strings.TrimSpace(only) == "" {
		return steps, nil
	}
	pick := map[string]bool{stepNavigate: true}
	for w := range strings.SplitSeq(only, ",") {
		w = strings.ToLower(strings.TrimSpace(w))
		if w == "" {
			continue
		}
		found := false
		for _, st := range steps {
			if strings.Contains(st, w) {
				pick[st], found = true, true
			}
		}
		if !found {
			return nil, fmt.Errorf("-only %q: no step is named so; the steps are %s", w, strings.Join(steps, "; "))
		}
	}
	if pick[stepClick] || pick[stepType] {
		pick[stepSnapSmall] = true
	}
	return slices.DeleteFunc(slices.Clone(steps), func(st string) bool { return !pick[st] }), nil
}

func main() {
	hyb := flag.String("hybroute", "bin/hybroute", "the hybroute binary")
	pw := flag.String("playwright", "", "Playwright MCP's cli.js (empty: left out)")
	dt := flag.String("devtools", "", "chrome-devtools-mcp's entry script (empty: left out)")
	chromium := flag.String("chromium", "/usr/bin/chromium", "the Chromium all three servers drive")
	rounds := flag.Int("rounds", 20, "measured rounds of the session per server (after one warm-up round)")
	verbose := flag.Bool("v", false, "print each server's snapshot texts of the last round to stderr")
	pause := flag.Duration("pause", 0, "a pause before each call, as an agent thinks between calls (0: back to back)")
	tasks := flag.Bool("tasks", false, "run the task suite (make bench-tasks) instead of the per-tool session: -rounds times, the rounds before the last warming the servers up, the table the last round's")
	only := flag.String("only", "", "run only the steps whose names contain one of these comma-separated words, e.g. exec,screenshot (the small page's navigation always runs, and its snapshot where click or type needs its refs); with -tasks, only the tasks whose names contain this text")
	flag.Parse()
	var chosen []string
	var err error
	if *tasks {
		onlyTasks = *only
	} else {
		chosen, err = selectSteps(*only)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "hybroute-bench-anchors:", err)
		os.Exit(2)
	}
	// The servers run in a directory of their own: the paths must not
	// depend on this one.
	for _, p := range []*string{hyb, pw, dt} {
		if *p != "" {
			if a, err := filepath.Abs(*p); err == nil {
				*p = a
			}
		}
	}

	servers := []server{hybrouteServer(*hyb, *chromium)}
	if *pw != "" {
		servers = append(servers, playwrightServer(*pw, *chromium))
	}
	if *dt != "" {
		servers = append(servers, devtoolsServer(*dt, *chromium))
	}
	if *tasks {
		err = runTasks(servers, *rounds, *pause, *verbose, os.Stdout, os.Stderr)
	} else {
		err = run(servers, chosen, *rounds, *pause, *verbose, os.Stdout, os.Stderr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "hybroute-bench-anchors:", err)
		os.Exit(1)
	}
}

// record is what one server's rounds measured.
type record struct {
	took  map[string][]time.Duration
	bytes map[string]int // text bytes of the last response per step
	texts map[string]string
	// failed are the rounds a call ended early, with its error.
	failed []string
}

func run(servers []server, steps []string, rounds int, pause time.Duration, verbose bool, out, log io.Writer) error {
	base, stop, err := servePages()
	if err != nil {
		return err
	}
	defer stop()
	ctx := context.Background()
	sessions, closeAll, err := connect(ctx, servers, verbose, log)
	if err != nil {
		return err
	}
	defer closeAll()
	recs := make([]*record, len(servers))
	for i := range recs {
		recs[i] = &record{took: map[string][]time.Duration{}, bytes: map[string]int{}, texts: map[string]string{}}
	}
	// Round robin: each round runs the session on every server in turn,
	// so a change of the machine's load falls on all of them alike.
	for round := 0; round <= rounds; round++ {
		for i, s := range servers {
			if err := session(ctx, s, sessions[i], steps, base, recs[i], round > 0, pause); err != nil {
				// A call that fails (a timeout on a loaded machine) ends this
				// server's round, not the run: the table says how many.
				recs[i].failed = append(recs[i].failed, err.Error())
				fmt.Fprintf(log, "%s: round %d: %v\n", s.name, round, err)
			}
		}
		fmt.Fprintf(log, "round %d/%d done\n", round, rounds)
	}
	if verbose {
		for i, s := range servers {
			for _, st := range []string{stepNavigate, stepSnapSmall, stepClick, stepType, stepNavBig, stepSnapBig} {
				fmt.Fprintf(log, "==== %s, %s ====\n%.3000s\n", s.name, st, recs[i].texts[st])
			}
		}
	}
	table(out, servers, steps, recs, rounds, pause)
	return nil
}

// connect starts every server in a temporary working directory and
// connects the one MCP client to each; closeAll ends them and removes the
// directory.
func connect(ctx context.Context, servers []server, verbose bool, log io.Writer) (sessions []*mcp.ClientSession, closeAll func(), err error) {
	// The anchors write files (Playwright MCP its snapshots) under their
	// working directory: a temporary one, not the caller's.
	work, err := os.MkdirTemp("", "hybroute-bench-anchors-")
	if err != nil {
		return nil, nil, err
	}
	closeAll = func() {
		for _, cs := range sessions {
			_ = cs.Close()
		}
		_ = os.RemoveAll(work)
	}
	for _, s := range servers {
		cmd := s.cmd()
		cmd.Dir = work
		cmd.Stderr = io.Discard
		if verbose {
			cmd.Stderr = log
		}
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "hybroute-bench-anchors", Version: "v0"}, nil).
			Connect(cctx, &mcp.CommandTransport{Command: cmd}, nil)
		cancel()
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("%s: connect: %w", s.name, err)
		}
		sessions = append(sessions, cs)
	}
	return sessions, closeAll, nil
}

// session runs the scripted session once on one server.
func session(ctx context.Context, s server, cs *mcp.ClientSession, steps []string, base string, rec *record, measure bool, pause time.Duration) error {
	var button, box string
	for _, st := range steps {
		ref, url := "", base+"/"
		switch st {
		case stepClick:
			ref = button
		case stepType:
			ref = box
		case stepNavBig:
			url = base + "/catalogue"
		}
		name, args := s.call(st, url, ref)
		time.Sleep(pause)
		text, took, err := callTool(ctx, cs, s, name, args)
		if err != nil {
			return fmt.Errorf("%s: %w", st, err)
		}
		if measure {
			rec.took[st] = append(rec.took[st], took)
		}
		rec.bytes[st] = len(text)
		rec.texts[st] = text
		if st == stepSnapSmall {
			if button, err = s.ref(text, "button", "Add to cart"); err != nil {
				return err
			}
			if box, err = s.ref(text, "searchbox", "Search products"); err != nil {
				return err
			}
		}
	}
	return nil
}

func callTool(ctx context.Context, cs *mcp.ClientSession, s server, name string, args map[string]any) (string, time.Duration, error) {
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	start := time.Now()
	res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: name, Arguments: args})
	took := time.Since(start)
	if err != nil {
		return "", took, fmt.Errorf("%s %s: %w", s.name, name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			b.WriteString(c.Text)
		case *mcp.ImageContent:
			if w, h, ok := pngSize(c.Data); ok {
				imageSizes.Store(s.name, fmt.Sprintf("%d×%d", w, h))
			}
		}
	}
	if res.IsError {
		return "", took, fmt.Errorf("%s %s: tool error: %.1000s", s.name, name, b.String())
	}
	return b.String(), took, nil
}

// imageSizes is the size of each server's last screenshot: a capture's
// cost grows with its pixels, so the screenshot row compares like with
// like only where the sizes agree.
var imageSizes sync.Map // server name → "W×H"

// pngSize reads a PNG's width and height from its header.
func pngSize(b []byte) (w, h int, ok bool) {
	if len(b) < 24 || string(b[1:4]) != "PNG" || string(b[12:16]) != "IHDR" {
		return 0, 0, false
	}
	return int(binary.BigEndian.Uint32(b[16:20])), int(binary.BigEndian.Uint32(b[20:24])), true
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }

// table prints the results as a Markdown table: p50 / p95 in ms per
// server, and hybroute's p50 over the fastest anchor's; then the text
// bytes of the responses.
func table(w io.Writer, servers []server, steps []string, recs []*record, rounds int, pause time.Duration) {
	gap := "back to back"
	if pause > 0 {
		gap = "a pause of " + pause.String() + " before each call"
	}
	fmt.Fprintf(w, "\n%d rounds per server, calls %s, p50 / p95 in ms; the ratio is hybroute's p50 over the fastest anchor's.\n\n", rounds, gap)
	tableHead(w, "Tool", servers, "hybroute ÷ best anchor")
	for _, st := range steps {
		fmt.Fprintf(w, "| %s |", st)
		best := time.Duration(0)
		for i := range servers {
			p50 := percentile(recs[i].took[st], 0.5)
			fmt.Fprintf(w, " %s / %s |", ms(p50), ms(percentile(recs[i].took[st], 0.95)))
			if i > 0 && (best == 0 || p50 < best) {
				best = p50
			}
		}
		if best > 0 {
			fmt.Fprintf(w, " %.2f× |\n", float64(percentile(recs[0].took[st], 0.5))/float64(best))
		} else {
			fmt.Fprint(w, " – |\n")
		}
	}
	for i, s := range servers {
		if n := len(recs[i].failed); n > 0 {
			fmt.Fprintf(w, "\n%s: %d of %d rounds ended early on a failed call (the first: %.300s)\n", s.name, n, rounds+1, recs[i].failed[0])
		}
	}
	fmt.Fprint(w, "\nScreenshot sizes:")
	for _, s := range servers {
		size, _ := imageSizes.Load(s.name)
		fmt.Fprintf(w, " %s %v;", s.name, size)
	}
	fmt.Fprint(w, "\n")
	sized := slices.DeleteFunc([]string{stepSnapSmall, stepSnapBig, stepClick, stepType}, func(st string) bool { return !slices.Contains(steps, st) })
	if len(sized) == 0 {
		return
	}
	fmt.Fprint(w, "\nText bytes of the last response (what the model reads):\n\n")
	tableHead(w, "Response", servers, "hybroute ÷ smallest anchor")
	for _, st := range sized {
		fmt.Fprintf(w, "| %s |", st)
		best := 0
		for i := range servers {
			n := recs[i].bytes[st]
			fmt.Fprintf(w, " %d |", n)
			if i > 0 && (best == 0 || n < best) {
				best = n
			}
		}
		if best > 0 {
			fmt.Fprintf(w, " %.2f× |\n", float64(recs[0].bytes[st])/float64(best))
		} else {
			fmt.Fprint(w, " – |\n")
		}
	}
}

// tableHead writes a Markdown table's head: first, a column per server,
// and last when it is not "".
func tableHead(w io.Writer, first string, servers []server, last string) {
	fmt.Fprintf(w, "| %s |", first)
	for _, s := range servers {
		fmt.Fprintf(w, " %s |", s.name)
	}
	if last != "" {
		fmt.Fprintf(w, " %s |", last)
	}
	fmt.Fprint(w, "\n|---|")
	for range servers {
		fmt.Fprint(w, "---|")
	}
	if last != "" {
		fmt.Fprint(w, "---|")
	}
	fmt.Fprint(w, "\n")
}
