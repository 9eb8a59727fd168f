package hybroute

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/hybroute/hybroute/internal/procfs"
)

// killProcessesWith SIGKILLs every process whose command line holds arg as a
// whole argument (NUL- or space-separated), and says how many it found. It
// finds nothing where there is no /proc.
func killProcessesWith(arg []byte) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	self := os.Getpid()
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !hasArg(cmd, arg) {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// oNoFollow makes an open fail on a symlink.
const oNoFollow = syscall.O_NOFOLLOW

// processStart is the start time of process pid (clock ticks since boot,
// from /proc/PID/stat), which with the pid names one process: a pid can be
// reused, the pair cannot. A pid with no process gives fs.ErrNotExist.
func processStart(pid int) (string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", err
	}
	// The command name (field 2) is in parentheses and may hold anything:
	// the fields after its last ")" start at field 3.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", errors.New("hybroute: unreadable /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
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

// memoryWith is the proportional set size, in bytes, of the processes
// whose command line holds arg as a whole argument: shared pages counted
// once across them. 0 where there is no /proc.
func memoryWith(arg []byte) int64 {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var total int64
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !hasArg(cmd, arg) {
			continue
		}
		total += procfs.Bytes("/proc/"+e.Name()+"/smaps_rollup", "Pss:")
	}
	return total
}
