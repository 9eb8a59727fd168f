package sidecar

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/testenv"
)

// deadPid is the pid of a process that has exited and been reaped.
func deadPid(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	return cmd.Process.Pid
}

// leftover makes a profile directory named name under tmp whose owner file
// says pid and start.
func leftover(t *testing.T, tmp, name string, pid int, start string) string {
	t.Helper()
	dir := filepath.Join(tmp, name)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "Default"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Default", "Preferences"), []byte("{}"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ownerFile), fmt.Appendf(nil, "%s\npid=%d\nstart=%s\n", ownerMagic, pid, start), 0o600))
	return dir
}

// TestSweepProfilesRemovesOnlyDeadOwners: of the directories that look like
// the sidecar's temp profiles, only those whose owner file names a process
// that is gone are removed; a live owner's, a foreign one's, and anything
// reached through a symlink stay.
func TestSweepProfilesRemovesOnlyDeadOwners(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the sweep runs only where /proc tells processes apart")
	}
	tmp := t.TempDir()
	me := os.Getpid()
	myStart, err := processStart(me)
	require.NoError(t, err)
	dead := deadPid(t)

	gone := leftover(t, tmp, profilePrefix+"dead", dead, "12345")
	reused := leftover(t, tmp, profilePrefix+"reused", me, myStart+"0") // our pid, another process's start
	live := leftover(t, tmp, profilePrefix+"live", me, myStart)
	unprefixed := leftover(t, tmp, "hybroute-chromiumdead", dead, "12345")
	foreign := filepath.Join(tmp, profilePrefix+"foreign") // looks like ours, no owner file
	require.NoError(t, os.MkdirAll(foreign, 0o700))
	garbled := leftover(t, tmp, profilePrefix+"garbled", dead, "12345")
	require.NoError(t, os.WriteFile(filepath.Join(garbled, ownerFile), fmt.Appendf(nil, "some other tool\npid=%d\nstart=1\n", dead), 0o600))

	// A symlink named as ours, to a dead owner's profile elsewhere.
	elsewhere := leftover(t, t.TempDir(), "target", dead, "12345")
	link := filepath.Join(tmp, profilePrefix+"link")
	require.NoError(t, os.Symlink(elsewhere, link))
	// A real directory whose owner file is a symlink to a dead owner's.
	linkedOwner := filepath.Join(tmp, profilePrefix+"linkedowner")
	require.NoError(t, os.MkdirAll(linkedOwner, 0o700))
	require.NoError(t, os.Symlink(filepath.Join(elsewhere, ownerFile), filepath.Join(linkedOwner, ownerFile)))
	// A dead owner's profile with a symlink inside to a file of ours.
	precious := filepath.Join(t.TempDir(), "precious")
	require.NoError(t, os.WriteFile(precious, []byte("keep"), 0o600))
	inner := leftover(t, tmp, profilePrefix+"inner", dead, "12345")
	require.NoError(t, os.Symlink(precious, filepath.Join(inner, "Default", "link")))

	removed := sweepProfiles(tmp, slog.New(slog.NewTextHandler(io.Discard, nil)))
	assert.ElementsMatch(t, []string{gone, reused, inner}, removed)
	assert.NoDirExists(t, gone, "a dead owner's profile is removed")
	assert.NoDirExists(t, reused, "a pid now held by another process is a dead owner")
	assert.NoDirExists(t, inner)
	assert.FileExists(t, precious, "a symlink inside is removed, not what it names")
	assert.DirExists(t, live, "a live owner's profile stays")
	assert.DirExists(t, unprefixed, "only our prefix")
	assert.DirExists(t, foreign, "no owner file: not known to be ours")
	assert.DirExists(t, garbled, "an owner file in another format: not ours")
	assert.DirExists(t, linkedOwner, "an owner file that is a symlink is not read")
	assert.FileExists(t, filepath.Join(elsewhere, ownerFile), "a symlink is not followed")
	fi, err := os.Lstat(link)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSymlink, fi.Mode().Type(), "the symlink itself stays")
}

// TestSidecarStartSweepsLeftovers: the sidecar's first start removes the
// profile a killed process left, and its own profile names its owner, so a
// second sidecar of the same (live) process keeps it.
func TestSidecarStartSweepsLeftovers(t *testing.T) {
	testenv.RequireChromium(t)
	if runtime.GOOS != "linux" {
		t.Skip("the sweep runs only where /proc tells processes apart")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	gone := leftover(t, tmp, profilePrefix+"killed", deadPid(t), "12345")

	ctx := testCtx(t)
	s := newTestSidecar(t)
	_, err := s.Open(ctx, "a")
	require.NoError(t, err)
	assert.NoDirExists(t, gone, "the first start swept the leftover")
	s.mu.Lock()
	own := s.proc.dataDir
	s.mu.Unlock()
	assert.Equal(t, tmp, filepath.Dir(own))
	pid, start, ok := readOwner(own)
	require.True(t, ok, "the sidecar's profile has an owner file")
	assert.Equal(t, os.Getpid(), pid)
	myStart, err := processStart(os.Getpid())
	require.NoError(t, err)
	assert.Equal(t, myStart, start)

	s2 := newTestSidecar(t)
	_, err = s2.Open(ctx, "b")
	require.NoError(t, err)
	assert.DirExists(t, own, "a live owner's profile is kept")
}

// TestNewAndWarmSweepLeftovers: a sidecar sweeps the profiles a killed
// process left from the moment it is made, not at its first start: a
// server that never opens a session still clears them, and Browser (what
// Router.Warm calls) returns only once the sweep is done, whatever became
// of the start. A live owner's profile stays.
func TestNewAndWarmSweepLeftovers(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the sweep runs only where /proc tells processes apart")
	}
	me := os.Getpid()
	myStart, err := processStart(me)
	require.NoError(t, err)
	dead := deadPid(t)
	t.Run("warm", func(t *testing.T) {
		tmp := t.TempDir()
		t.Setenv("TMPDIR", tmp)
		gone := leftover(t, tmp, profilePrefix+"killed", dead, "12345")
		live := leftover(t, tmp, profilePrefix+"live", me, myStart)
		s := New(Config{Path: filepath.Join(tmp, "no-chromium-here")})
		t.Cleanup(func() { assert.NoError(t, s.Close()) })
		_, err := s.Browser(testCtx(t))
		require.Error(t, err, "no guard, no binary: the start fails")
		assert.NoDirExists(t, gone, "swept before Browser returned")
		assert.DirExists(t, live, "a live owner's profile stays")
	})
	t.Run("never started", func(t *testing.T) {
		tmp := t.TempDir()
		t.Setenv("TMPDIR", tmp)
		gone := leftover(t, tmp, profilePrefix+"killed", dead, "12345")
		live := leftover(t, tmp, profilePrefix+"live", me, myStart)
		require.NoError(t, New(Config{}).Close()) // Close waits for the sweep New began
		assert.NoDirExists(t, gone, "swept with no start at all")
		assert.DirExists(t, live, "a live owner's profile stays")
	})
}
