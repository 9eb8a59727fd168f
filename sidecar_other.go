//go:build !linux

package hybroute

import (
	"errors"
	"os"
)

// killProcessesWith finds nothing off Linux: there is no /proc to search.
// chromedp's allocator still kills the browser process itself.
func killProcessesWith(arg []byte) int { return 0 }

// parentOf knows no parent off Linux: there is no /proc to read.
func parentOf(pid int) (int, bool) { return 0, false }

// processesOf finds nothing off Linux: there is no /proc to search.
func processesOf(arg []byte) []int { return nil }

// memoryWith measures nothing off Linux: WithMaxLocalMemory does nothing.
func memoryWith(arg []byte) int64 { return 0 }

// oNoFollow is 0 off Linux: the sweep, which would need it, does not run.
const oNoFollow = 0

// processStart cannot tell one process from another off Linux, so no
// profile is ever taken for a dead process's leftover.
func processStart(pid int) (string, error) {
	return "", errors.ErrUnsupported
}

// ownedByUs is false off Linux: the sweep does not run there.
func ownedByUs(fi os.FileInfo) bool { return false }
