package chromium

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeSystem is a system of goos whose absolute paths, home and
// environment all lie under one temporary directory.
type fakeSystem struct {
	system
	dir string
	env map[string]string
}

func newFakeSystem(t *testing.T, goos string) *fakeSystem {
	dir := t.TempDir()
	f := &fakeSystem{dir: dir, env: map[string]string{
		"PATH": filepath.Join(dir, "bin"), "HOME": filepath.Join(dir, "home"), "USERPROFILE": filepath.Join(dir, "home"),
	}}
	f.system = system{goos: goos, root: dir, getenv: func(k string) string { return f.env[k] }}
	return f
}

// put writes an executable (mode 0755) or a plain file at p, a path under
// the fake system's directory.
func (f *fakeSystem) put(t *testing.T, p string, mode os.FileMode) string {
	full := filepath.Join(f.dir, p)
	require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
	require.NoError(t, os.WriteFile(full, []byte("\x7fELF"), mode))
	require.NoError(t, os.Chmod(full, mode)) // a file written before keeps its mode
	return full
}

func (f *fakeSystem) found(t *testing.T) string {
	t.Helper()
	got, err := f.find("", "WithChromiumPath(%q)")
	require.NoError(t, err)
	return strings.TrimPrefix(got, f.dir)
}

// TestFindOnEachSystem: each system's places, in order, on a fake layout
// of it: PATH first (headless shells before full browsers), then the
// system's own places, then Chrome for Testing in Puppeteer's and
// Playwright's caches, the newest version first; what is not executable
// is passed over.
func TestFindOnEachSystem(t *testing.T) {
	t.Run("linux", func(t *testing.T) {
		f := newFakeSystem(t, "linux")
		_, err := f.find("", "WithChromiumPath(%q)")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "no Chromium or Chrome found (looked on PATH for chromium-headless-shell, chrome-headless-shell, headless-shell, chromium,")
		assert.Contains(t, err.Error(), filepath.Join(f.dir, "snap/bin"))
		assert.Contains(t, err.Error(), filepath.Join(f.dir, "home/.cache/ms-playwright"))
		assert.Contains(t, err.Error(), "apt-get install -y chromium")
		assert.Contains(t, err.Error(), "snap install chromium")
		assert.Contains(t, err.Error(), "set $CHROMIUM to its path")

		f.put(t, "home/.cache/ms-playwright/chromium-1140/chrome-linux/chrome", 0o755)
		assert.Equal(t, "/home/.cache/ms-playwright/chromium-1140/chrome-linux/chrome", f.found(t))
		f.put(t, "home/.cache/ms-playwright/chromium-1169/chrome-linux/chrome", 0o755)
		f.put(t, "home/.cache/ms-playwright/chromium-998/chrome-linux/chrome", 0o755)
		assert.Equal(t, "/home/.cache/ms-playwright/chromium-1169/chrome-linux/chrome", f.found(t), "the newest version")
		f.put(t, "home/.cache/ms-playwright/chromium_headless_shell-1169/chrome-headless-shell-linux64/chrome-headless-shell", 0o755)
		assert.Equal(t, "/home/.cache/ms-playwright/chromium_headless_shell-1169/chrome-headless-shell-linux64/chrome-headless-shell", f.found(t), "a headless shell first")
		f.put(t, "home/.cache/puppeteer/chrome/linux-131.0.6778.85/chrome-linux64/chrome", 0o755)
		f.put(t, "home/.cache/puppeteer/chrome/linux-99.0.4844.51/chrome-linux64/chrome", 0o755)
		assert.Equal(t, "/home/.cache/puppeteer/chrome/linux-131.0.6778.85/chrome-linux64/chrome", f.found(t), "Puppeteer's cache, its newest version")
		f.env["PUPPETEER_CACHE_DIR"] = filepath.Join(f.dir, "elsewhere")
		assert.Equal(t, "/home/.cache/ms-playwright/chromium_headless_shell-1169/chrome-headless-shell-linux64/chrome-headless-shell", f.found(t), "$PUPPETEER_CACHE_DIR moves Puppeteer's cache")
		f.put(t, "opt/google/chrome/chrome", 0o755)
		assert.Equal(t, "/opt/google/chrome/chrome", f.found(t))
		f.put(t, "snap/bin/chromium", 0o644)
		assert.Equal(t, "/opt/google/chrome/chrome", f.found(t), "a file that is not executable is passed over")
		f.put(t, "snap/bin/chromium", 0o755)
		assert.Equal(t, "/snap/bin/chromium", f.found(t))
		f.put(t, "bin/google-chrome", 0o755)
		assert.Equal(t, "/bin/google-chrome", f.found(t), "PATH first")
		f.put(t, "bin/chromium-headless-shell", 0o755)
		assert.Equal(t, "/bin/chromium-headless-shell", f.found(t), "a headless shell on PATH before the full browsers")
	})
	t.Run("darwin", func(t *testing.T) {
		f := newFakeSystem(t, "darwin")
		_, err := f.find("", "WithChromiumPath(%q)")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "brew install --cask google-chrome")
		f.put(t, "home/Library/Caches/ms-playwright/chromium-1169/chrome-mac/Chromium.app/Contents/MacOS/Chromium", 0o755)
		assert.Equal(t, "/home/Library/Caches/ms-playwright/chromium-1169/chrome-mac/Chromium.app/Contents/MacOS/Chromium", f.found(t))
		f.put(t, "home/.cache/puppeteer/chrome/mac_arm-131.0.6778.85/chrome-mac-arm64/Google Chrome for Testing.app/Contents/MacOS/Google Chrome for Testing", 0o755)
		assert.Equal(t, "/home/.cache/puppeteer/chrome/mac_arm-131.0.6778.85/chrome-mac-arm64/Google Chrome for Testing.app/Contents/MacOS/Google Chrome for Testing", f.found(t))
		f.put(t, "home/Applications/Chromium.app/Contents/MacOS/Chromium", 0o755)
		assert.Equal(t, "/home/Applications/Chromium.app/Contents/MacOS/Chromium", f.found(t), "~/Applications")
		f.put(t, "Applications/Google Chrome.app/Contents/MacOS/Google Chrome", 0o755)
		assert.Equal(t, "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome", f.found(t), "/Applications")
		f.put(t, "bin/chromium", 0o755)
		assert.Equal(t, "/bin/chromium", f.found(t), "PATH first")
	})
	t.Run("windows", func(t *testing.T) {
		f := newFakeSystem(t, "windows")
		f.env["LOCALAPPDATA"] = filepath.Join(f.dir, "home/AppData/Local")
		f.env["ProgramFiles"] = filepath.Join(f.dir, "Program Files")
		f.env["ProgramFiles(x86)"] = filepath.Join(f.dir, "Program Files (x86)")
		_, err := f.find("", "WithChromiumPath(%q)")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "winget install Google.Chrome")
		assert.Contains(t, err.Error(), "chromium.exe")
		f.put(t, "home/AppData/Local/ms-playwright/chromium-1169/chrome-win/chrome.exe", 0o644)
		assert.Equal(t, "/home/AppData/Local/ms-playwright/chromium-1169/chrome-win/chrome.exe", f.found(t), "no executable bit on Windows")
		f.put(t, "home/AppData/Local/Google/Chrome/Application/chrome.exe", 0o644)
		assert.Equal(t, "/home/AppData/Local/Google/Chrome/Application/chrome.exe", f.found(t), "LocalAppData")
		f.put(t, "Program Files (x86)/Google/Chrome/Application/chrome.exe", 0o644)
		assert.Equal(t, "/Program Files (x86)/Google/Chrome/Application/chrome.exe", f.found(t))
		f.put(t, "Program Files/Google/Chrome/Application/chrome.exe", 0o644)
		assert.Equal(t, "/Program Files/Google/Chrome/Application/chrome.exe", f.found(t))
		f.env["CHROMIUM"] = "chrome"
		_, err = f.find("", "WithChromiumPath(%q)")
		require.ErrorContains(t, err, `$CHROMIUM="chrome": "chrome" is not on PATH`)
		f.put(t, "bin/chrome.exe", 0o644)
		assert.Equal(t, "/bin/chrome.exe", f.found(t), "a name on PATH without .exe")
	})
}

// TestFindTheUsersChoice: the path given wins over $CHROMIUM, $CHROMIUM
// over the search, and a wrong choice is an error that says why, not a
// search.
func TestFindTheUsersChoice(t *testing.T) {
	f := newFakeSystem(t, "linux")
	f.put(t, "bin/chromium", 0o755)
	shell := f.put(t, "bin/chromium-headless-shell", 0o755)
	notExec := f.put(t, "lib/chromium", 0o644)

	f.env["CHROMIUM"] = "chromium"
	assert.Equal(t, "/bin/chromium", f.found(t))
	f.env["CHROMIUM"] = notExec
	_, err := f.find("", "WithChromiumPath(%q)")
	require.ErrorContains(t, err, `$CHROMIUM="`+notExec+`": `+notExec+` is not executable (mode -rw-r--r--)`)
	f.env["CHROMIUM"] = f.dir
	_, err = f.find("", "WithChromiumPath(%q)")
	require.ErrorContains(t, err, "is a directory")
	f.env["CHROMIUM"] = "/nonexistent/chromium"
	_, err = f.find("", "WithChromiumPath(%q)")
	require.ErrorContains(t, err, `$CHROMIUM="/nonexistent/chromium"`)

	got, err := f.find(shell, "WithChromiumPath(%q)")
	require.NoError(t, err)
	assert.Equal(t, shell, got, "the path given wins over $CHROMIUM")
	_, err = f.find("/nonexistent/chromium", "WithChromiumPath(%q)")
	require.ErrorContains(t, err, `WithChromiumPath("/nonexistent/chromium")`)
}

func TestVersionCompare(t *testing.T) {
	assert.Negative(t, versionCompare("linux-99.0.4844.51", "linux-131.0.6778.85"))
	assert.Positive(t, versionCompare("chromium-1169", "chromium-998"))
	assert.Zero(t, versionCompare("chromium-0100", "chromium-100"))
	assert.Negative(t, versionCompare("mac-131.0.1", "mac_arm-131.0.1"))
}

func TestUnwrap(t *testing.T) {
	dir := t.TempDir()
	// A stand-in ELF program: only its first bytes are read.
	prog := filepath.Join(dir, "chromium-headless-shell")
	if err := os.WriteFile(prog, []byte("\x7fELF\x02\x01\x01"), 0o755); err != nil {
		t.Fatal(err)
	}
	notExec := filepath.Join(dir, "not-exec")
	if err := os.WriteFile(notExec, []byte("\x7fELF\x02\x01\x01"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "script")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, text string
		unwrapped  bool
	}{
		{"debian", "#!/bin/sh -e\n\n" + prog + " \"$@\"\n", true},
		{"exec", "#!/bin/sh\n# comment\nexec " + prog + " \"$@\"\n", true},
		{"flags added", "#!/bin/sh\n" + prog + " --no-sandbox \"$@\"\n", false},
		{"two commands", "#!/bin/sh\nexport X=1\n" + prog + " \"$@\"\n", false},
		{"relative", "#!/bin/sh\nchromium-headless-shell \"$@\"\n", false},
		{"not executable", "#!/bin/sh\n" + notExec + " \"$@\"\n", false},
		{"a script runs a script", "#!/bin/sh\n" + script + " \"$@\"\n", false},
		{"arguments dropped", "#!/bin/sh\n" + prog + "\n", false},
		{"not sh", "#!/usr/bin/env bash\n" + prog + " \"$@\"\n", false},
		{"too long", "#!/bin/sh\n" + strings.Repeat("#\n", 3000) + prog + " \"$@\"\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := filepath.Join(dir, "wrapper-"+strings.ReplaceAll(tc.name, " ", "-"))
			if err := os.WriteFile(w, []byte(tc.text), 0o755); err != nil {
				t.Fatal(err)
			}
			want := w
			if tc.unwrapped {
				want = prog
			}
			if got := Unwrap(w); got != want {
				t.Fatalf("Unwrap = %q, want %q", got, want)
			}
		})
	}
	if got := Unwrap(prog); got != prog {
		t.Fatalf("Unwrap of a program = %q", got)
	}
	if got := Unwrap(filepath.Join(dir, "missing")); got != filepath.Join(dir, "missing") {
		t.Fatalf("Unwrap of a missing file = %q", got)
	}
}
