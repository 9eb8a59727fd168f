package sidecar

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The sidecar's temp profiles are named profilePrefix+random in the temp
// directory and hold an owner file naming the process that made them: its
// pid and its start time (a pid alone could be reused). A process killed
// outright (SIGKILL, a crash, the OOM killer) cannot remove its profile, so
// the next sidecar to start removes the profiles whose owner is dead.
const (
	profilePrefix = "hybroute-chromium-"
	ownerFile     = "hybroute-owner"
	ownerMagic    = "hybroute sidecar profile"
)

// makeProfile makes a temp profile directory with its owner file.
func makeProfile() (string, error) {
	dir, err := os.MkdirTemp("", profilePrefix)
	if err != nil {
		return "", err
	}
	start, _ := processStart(os.Getpid())
	owner := fmt.Sprintf("%s\npid=%d\nstart=%s\n", ownerMagic, os.Getpid(), start)
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(owner), 0o600); err != nil {
		return dir, err
	}
	return dir, nil
}

// sweepProfiles removes the temp profiles under tmp that a dead process
// left: only directories named as ours, owned by our user, not symlinks,
// whose owner file is ours and names a process that is gone (no such pid,
// or a pid now held by a process with another start time). Anything it
// cannot read for sure is left alone. It returns what it removed.
func sweepProfiles(tmp string, log *slog.Logger) []string {
	if _, err := processStart(os.Getpid()); err != nil {
		return nil // no way to tell a live owner from a dead one here
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), profilePrefix) || e.Type() != fs.ModeDir {
			continue // ReadDir does not follow symlinks: a link's type is ModeSymlink
		}
		dir := filepath.Join(tmp, e.Name())
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() || !ownedByUs(fi) {
			continue
		}
		pid, start, ok := readOwner(dir)
		if !ok || !ownerDead(pid, start) {
			continue
		}
		// Its Chromium died with its owner (Pdeathsig); a child that did
		// not is still ours to end before the directory goes.
		killProcessesWith([]byte("--user-data-dir=" + dir))
		// In a sticky temp directory only we can rename or replace an
		// entry we own, so dir is still the directory checked above; and
		// RemoveAll removes the symlinks inside it, never what they name.
		if err := os.RemoveAll(dir); err != nil {
			log.Warn("hybroute: removing a temp profile a dead process left", "dir", dir, "err", err)
			continue
		}
		log.Info("hybroute: removed a temp profile a dead process left", "dir", dir, "pid", pid)
		removed = append(removed, dir)
	}
	return removed
}

// readOwner reads a profile's owner file: a regular file, not a symlink,
// in our format.
func readOwner(dir string) (int, string, bool) {
	name := filepath.Join(dir, ownerFile)
	fi, err := os.Lstat(name)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 4096 {
		return 0, "", false
	}
	f, err := os.OpenFile(name, os.O_RDONLY|NoFollow, 0)
	if err != nil {
		return 0, "", false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return 0, "", false
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 3 || lines[0] != ownerMagic {
		return 0, "", false
	}
	p, ok1 := strings.CutPrefix(lines[1], "pid=")
	start, ok2 := strings.CutPrefix(lines[2], "start=")
	pid, err := strconv.Atoi(p)
	if !ok1 || !ok2 || err != nil || pid <= 0 || start == "" {
		return 0, "", false
	}
	return pid, start, true
}

// ownerDead reports whether the process pid that started at start is gone.
func ownerDead(pid int, start string) bool {
	now, err := processStart(pid)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	return err == nil && now != start
}
