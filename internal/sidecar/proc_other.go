//go:build !linux

package sidecar

import (
	"errors"
	"os"
)

// killProcessesWith finds nothing off Linux: there is no /proc to search.
// chromedp's allocator still kills the browser process itself.
func killProcessesWith(arg []byte) int { return 0 }

// family finds nothing off Linux: there is no /proc to search.
type family struct{}

func familyOf(arg []byte) family { return family{} }
func (family) kill() int         { return 0 }

// ParentOf knows no parent off Linux: there is no /proc to read.
func ParentOf(pid int) (int, bool) { return 0, false }

// ProcessesOf finds nothing off Linux: there is no /proc to search.
func ProcessesOf(arg []byte) []int { return nil }

// MemoryWith measures nothing off Linux: WithMaxLocalMemory does nothing.
func MemoryWith(arg []byte) int64 { return 0 }

// NoFollow is 0 off Linux: the sweep, which would need it, does not run.
const NoFollow = 0

// processStart cannot tell one process from another off Linux, so no
// profile is ever taken for a dead process's leftover.
func processStart(pid int) (string, error) {
	return "", errors.ErrUnsupported
}

// ownedByUs is false off Linux: the sweep does not run there.
func ownedByUs(fi os.FileInfo) bool { return false }
