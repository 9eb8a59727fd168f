//go:build unix

package cloudtest

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts Chromium in its own process group, so that Close can
// kill its zygote and renderer children along with it.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	// The negative pid names the group that setProcessGroup created; it
	// holds only the Chromium this helper started.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
}
