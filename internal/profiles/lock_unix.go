//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package profiles

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// lockProfileDir takes the exclusive lock of a profile directory: flock on
// its lock file, which the kernel drops when the holder exits however it
// exits, so no stale lock outlives a crash. The file names the holder's
// pid, for the error another router gets.
func lockProfileDir(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := readHolder(f)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: another router%s holds it", ErrLocked, holder)
		}
		return nil, fmt.Errorf("locking %s: %w", name, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// readHolder reads the pid the lock's holder wrote, as " (pid N)".
func readHolder(f *os.File) string {
	b, _ := io.ReadAll(io.LimitReader(f, 32))
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return ""
	}
	return " (pid " + strconv.Itoa(pid) + ")"
}
