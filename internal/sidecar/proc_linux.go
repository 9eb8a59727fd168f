package sidecar

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hybroute/hybroute/internal/procfs"
)

// killProcessesWith SIGKILLs every process whose command line holds arg as a
// whole argument (NUL- or space-separated), and their descendants, and says
// how many it found. It finds nothing where there is no /proc.
func killProcessesWith(arg []byte) int {
	n := 0
	for _, pid := range ProcessesOf(arg) {
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// ProcessesOf lists the processes whose command line holds arg as a whole
// argument, and every descendant of theirs, but never this process. The
// full Chromium passes its --user-data-dir to every child, which finds
// children that outlived a killed browser; a headless shell passes it to
// none, and its children are found as the browser's descendants.
func ProcessesOf(arg []byte) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	children := map[int][]int{}
	var next []int // the processes with arg, then their descendants
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if ppid, ok := ParentOf(pid); ok {
			children[ppid] = append(children[ppid], pid)
		}
		if cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && HasArg(cmd, arg) {
			next = append(next, pid)
		}
	}
	var out []int
	seen := map[int]bool{}
	for len(next) > 0 {
		pid := next[len(next)-1]
		next = next[:len(next)-1]
		if !seen[pid] {
			seen[pid] = true
			out = append(out, pid)
			next = append(next, children[pid]...)
		}
	}
	return out
}

// family is a browser's processes as they stood when it was taken, each
// named by its pid and start time.
type family []member

type member struct {
	pid   int
	start string
}

// familyOf is what ProcessesOf(arg) finds now, with each one's start time.
// Taken while the browser runs, it still names the children that outlive
// it: the headless shell starts them without its profile argument, and
// once the browser is gone they belong to init, where nothing else can
// tell them from any other process.
func familyOf(arg []byte) family {
	var f family
	for _, pid := range ProcessesOf(arg) {
		if start, err := processStart(pid); err == nil {
			f = append(f, member{pid, start})
		}
	}
	return f
}

// kill SIGKILLs each member still running as the process it was (a pid
// reused since has another start time), waits a moment for them to be
// gone, and says how many it found.
func (f family) kill() int {
	var left family
	for _, m := range f {
		if m.running() && syscall.Kill(m.pid, syscall.SIGKILL) == nil {
			left = append(left, m)
		}
	}
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if !slices.ContainsFunc(left, member.running) {
			break
		}
	}
	return len(left)
}

// running reports that m is still the process it was and has not exited:
// a zombie (dead, waiting for a parent to reap it, which an orphan's init
// in a container may never do) counts as gone.
func (m member) running() bool {
	f, err := statFields(m.pid)
	return err == nil && len(f) >= 20 && f[19] == m.start && f[0] != "Z" && f[0] != "X"
}

// ParentOf is the parent pid of process pid, from /proc/PID/stat.
func ParentOf(pid int) (int, bool) {
	f, err := statFields(pid)
	if err != nil || len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// statFields are the fields of /proc/PID/stat from field 3 on: the command
// name (field 2) is in parentheses and may hold anything, so the fields
// are those after its last ")".
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, errors.New("hybroute: unreadable /proc stat")
	}
	return strings.Fields(string(b[i+1:])), nil
}

// NoFollow makes an open fail on a symlink (the profile sweep reads owner
// files with it, and so do readers of other files a symlink could replace).
const NoFollow = syscall.O_NOFOLLOW

// processStart is the start time of process pid (clock ticks since boot,
// from /proc/PID/stat), which with the pid names one process: a pid can be
// reused, the pair cannot. A pid with no process gives fs.ErrNotExist.
func processStart(pid int) (string, error) {
	f, err := statFields(pid)
	if err != nil {
		return "", err
	}
	if len(f) < 20 {
		return "", errors.New("hybroute: unreadable /proc stat")
	}
	return f[19], nil // field 22, starttime
}

// ownedByUs reports whether fi is owned by this process's user.
func ownedByUs(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

// MemoryWith is the proportional set size, in bytes, of the processes
// whose command line holds arg as a whole argument and of their
// descendants (ProcessesOf): shared pages counted once across them. 0
// where there is no /proc.
func MemoryWith(arg []byte) int64 {
	var total int64
	for _, pid := range ProcessesOf(arg) {
		total += procfs.Bytes("/proc/"+strconv.Itoa(pid)+"/smaps_rollup", "Pss:")
	}
	return total
}
