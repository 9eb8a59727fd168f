//go:build !linux

package cdpmux

import "syscall"

func setPdeathsig(*syscall.SysProcAttr) {}
