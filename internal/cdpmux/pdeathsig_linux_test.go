package cdpmux

import (
	"os/exec"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The splice replaces the allocator's process options: the browser must
// still be killed when this process dies, even when no Mux could be made.
func TestSpliceKeepsPdeathsig(t *testing.T) {
	cmd := exec.Command("chromium")
	NewSplice(Hooks{}).modify(cmd)
	assert.Equal(t, syscall.SIGKILL, cmd.SysProcAttr.Pdeathsig)
}
