// Command hybroute-load drives "hybroute mcp --http" with many MCP clients
// at once, each an SDK client on a session of its own that runs navigate →
// snapshot → click → exec → close on a loopback page, and prints a table
// per client count: how many succeeded, were refused as busy, or failed;
// p50/p95 of each tool; the peak RSS of the server and the peak memory
// (PSS) of its Chromium. "make load" runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hybroute/hybroute/internal/chromium"
)

func main() {
	bin := flag.String("server", "", "the hybroute binary to load (required)")
	counts := flag.String("clients", "10,25,50,100", "client counts, one run (and one fresh server) each")
	callTimeout := flag.Duration("call-timeout", 150*time.Second, "the clients' bound on one call: longer than the server's own (--queue-wait and the call timeout, 60 s each), so that the server's answer is what is counted")
	abandon := flag.Int("abandon", 0, "instead of the client counts: open this many sessions that each navigate once and go away without ending their session")
	abandonParallel := flag.Int("abandon-parallel", 25, "with -abandon: how many sessions are opened at a time")
	snapshotItems := flag.Int("snapshot", 0, "instead of the client counts: one session takes a snapshot of a page of this many list items, and the server's RSS is printed around it")
	serverLog := flag.String("server-log", "", "append the servers' stderr to this file")
	var extra stringList
	flag.Var(&extra, "server-flag", "a further flag for the server, e.g. --server-flag=--max-sessions=200; repeatable")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "hybroute-load: -server is required")
		os.Exit(2)
	}
	var ns []int
	for f := range strings.SplitSeq(*counts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "hybroute-load: bad client count %q\n", f)
			os.Exit(2)
		}
		ns = append(ns, n)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	page, stopPage, err := servePage()
	if err != nil {
		fmt.Fprintln(os.Stderr, "hybroute-load:", err)
		os.Exit(1)
	}
	defer stopPage()
	var logTo io.Writer
	if *serverLog != "" {
		f, err := os.OpenFile(*serverLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			fmt.Fprintln(os.Stderr, "hybroute-load:", err)
			os.Exit(1)
		}
		defer f.Close()
		logTo = f
	}

	if *snapshotItems > 0 {
		if err := snapshotRun(ctx, *bin, extra, logTo, *snapshotItems, *callTimeout); err != nil {
			fmt.Fprintln(os.Stderr, "hybroute-load:", err)
			os.Exit(1)
		}
		return
	}
	if *abandon > 0 {
		if err := abandonRun(ctx, *bin, extra, logTo, page, *abandon, max(*abandonParallel, 1), *callTimeout); err != nil {
			fmt.Fprintln(os.Stderr, "hybroute-load:", err)
			os.Exit(1)
		}
		return
	}
	fmt.Printf("hybroute-load: %d cores; the server's browser: %s\neach client: %s on %s\n\n", numCPU(), browserVersion(), strings.Join(steps, " → "), page)
	var rows []level
	failed := false
	for _, n := range ns {
		lv, err := runLevel(ctx, *bin, extra, logTo, page, n, *callTimeout)
		if err != nil {
			fmt.Fprintln(os.Stderr, "hybroute-load:", err)
			os.Exit(1)
		}
		rows = append(rows, lv)
		lv.printDetail()
		if lv.failed > 0 {
			failed = true
		}
	}
	fmt.Println()
	printTable(rows)
	if failed {
		os.Exit(1) // a failure that is not a prompt "busy" is a failed run
	}
}

// level is the figures of one client count.
type level struct {
	clients, ok, busy, failed int
	took                      map[string][]time.Duration
	busyTook                  []time.Duration
	failures                  map[string]int // "step: first line" → count
	busyWhy                   map[string]int // "step: the busy answer, without its figures" → count
	peakRSS, peakChromium     int64
	loadBefore, loadAfter     string
	wall                      time.Duration
}

// runLevel starts a fresh server, runs n clients at once, and stops it.
func runLevel(ctx context.Context, bin string, extra []string, logTo io.Writer, page string, n int, callTimeout time.Duration) (level, error) {
	lv := level{clients: n, took: map[string][]time.Duration{}, failures: map[string]int{}, busyWhy: map[string]int{}, loadBefore: loadavg()}
	srv, err := startServer(ctx, bin, extra, logTo)
	if err != nil {
		return lv, err
	}
	start := time.Now()
	runs := make([]run, n)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() { runs[i] = drive(ctx, srv.url, page, callTimeout) })
	}
	wg.Wait()
	lv.wall = time.Since(start)
	lv.loadAfter = loadavg()
	srv.stop()
	lv.peakRSS, lv.peakChromium = srv.peaks()
	for _, r := range runs {
		for step, d := range r.took {
			lv.took[step] = append(lv.took[step], d)
		}
		switch r.outcome {
		case outcomeOK:
			lv.ok++
		case outcomeBusy:
			lv.busy++
			lv.busyTook = append(lv.busyTook, r.busyTook)
			why, _, _ := strings.Cut(r.detail, " (")
			lv.busyWhy[r.step+": "+why]++
		default:
			lv.failed++
			lv.failures[r.step+": "+r.detail]++
		}
	}
	return lv, nil
}

func (lv level) printDetail() {
	fmt.Printf("%d clients: %d ok, %d busy, %d failed in %s (load %s → %s)\n",
		lv.clients, lv.ok, lv.busy, lv.failed, lv.wall.Round(100*time.Millisecond), lv.loadBefore, lv.loadAfter)
	if len(lv.busyTook) > 0 {
		fmt.Printf("  busy answers came in p50 %s, max %s\n", fmtDur(pct(lv.busyTook, 50)), fmtDur(pct(lv.busyTook, 100)))
	}
	for _, k := range slices.Sorted(maps.Keys(lv.busyWhy)) {
		fmt.Printf("  %d× %s\n", lv.busyWhy[k], k)
	}
	for _, k := range slices.Sorted(maps.Keys(lv.failures)) {
		fmt.Printf("  %d× %s\n", lv.failures[k], k)
	}
}

func printTable(rows []level) {
	head := "| clients | ok | busy | failed |"
	sep := "|---:|---:|---:|---:|"
	for _, s := range steps {
		head += " " + strings.TrimPrefix(s, "browser_") + " p50 / p95 |"
		sep += "---|"
	}
	head += " peak server RSS | peak Chromium PSS | load (1 min) before → after |"
	sep += "---:|---:|---|"
	fmt.Println(head)
	fmt.Println(sep)
	for _, lv := range rows {
		line := fmt.Sprintf("| %d | %d | %d | %d |", lv.clients, lv.ok, lv.busy, lv.failed)
		for _, s := range steps {
			d := lv.took[s]
			if len(d) == 0 {
				line += " – |"
				continue
			}
			line += fmt.Sprintf(" %s / %s |", fmtDur(pct(d, 50)), fmtDur(pct(d, 95)))
		}
		line += fmt.Sprintf(" %d MB | %d MB | %s → %s |", lv.peakRSS>>20, lv.peakChromium>>20, lv.loadBefore, lv.loadAfter)
		fmt.Println(line)
	}
}

// pct is the p-th percentile of ds (nearest rank).
func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (p*len(s)+99)/100 - 1
	return s[max(0, min(i, len(s)-1))]
}

func fmtDur(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

func numCPU() int {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\nprocessor") + 1
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

// browserVersion names the Chromium the server will start, as the sidecar
// finds it, for the figures' heading: the full browser and a headless shell
// differ threefold in what a session costs.
func browserVersion() string {
	path, err := chromium.Find("")
	if err != nil {
		return err.Error()
	}
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		return path
	}
	return path + " (" + strings.TrimSpace(string(out)) + ")"
}
