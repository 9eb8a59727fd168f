package hybroute

import (
	"os"
	"strconv"
	"syscall"
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
