package toolfuzz

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// ErrReleased is what a Target returns for a call whose session was
// released under it and that got no answer (an MCP client that went away
// mid-call): no break.
var ErrReleased = errors.New("toolfuzz: the session was released during the call")

// Load is the machine's load average, as /proc/loadavg says it ("" where
// there is none).
func Load() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// Finish reports a run to t: its figures always (what docs/figures.md
// quotes), and on a break the breaks, the seed to replay and the sequence
// of calls, whole in a file and its end in the log, and fails t.
func Finish(t testing.TB, name string, rep *Report, loadBefore string) {
	t.Helper()
	t.Logf("toolfuzz %s: %s; load average %s before, %s after", name, rep, loadBefore, Load())
	tools := slices.SortedFunc(maps.Keys(rep.TimeByTool), func(a, b string) int { return cmp.Compare(rep.TimeByTool[b], rep.TimeByTool[a]) })
	var spent []string
	for _, tool := range tools[:min(8, len(tools))] {
		spent = append(spent, fmt.Sprintf("%s %d calls %s", tool, rep.ByTool[tool], rep.TimeByTool[tool].Round(time.Millisecond)))
	}
	t.Logf("toolfuzz %s: time in probes %s, in leak checks %s; by tool: %s", name, rep.ProbeTime.Round(time.Millisecond), rep.CheckTime.Round(time.Millisecond), strings.Join(spent, ", "))
	if len(rep.Breaks) == 0 {
		return
	}
	log := rep.Log()
	file := filepath.Join(os.TempDir(), fmt.Sprintf("hybroute-fuzz-%s-%d.log", name, rep.Seed))
	if err := os.WriteFile(file, []byte(strings.Join(log, "\n")+"\n"), 0o600); err != nil {
		file = "(not written: " + err.Error() + ")"
	}
	tail := log[max(0, len(log)-150):]
	t.Errorf("%d invariant breaks; HYBROUTE_FUZZ_SEED=%d replays the run; the whole sequence of calls is in %s; its end:\n%s",
		len(rep.Breaks), rep.Seed, file, strings.Join(tail, "\n"))
}
