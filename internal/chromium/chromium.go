// Package chromium finds the Chromium binary that hybroute runs: the local
// sidecar's, and the stand-in cloud browser of the tests.
package chromium

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// names are the programs looked up on PATH, in order, when $CHROMIUM names
// none. The headless shells come first: hybroute only ever runs Chromium
// headless, a shell is installed only on purpose (Debian's
// chromium-headless-shell, Chrome for Testing's chrome-headless-shell, the
// headless-shell image), and it costs a session about a third of the CPU of
// the full browser, which builds a whole browser window, toolbar and all,
// for every browser context (docs/load.md). Then the full browsers:
// Debian's and other distributions' Chromium, Google Chrome.
var names = [...]string{
	"chromium-headless-shell", "chrome-headless-shell", "headless-shell",
	"chromium", "chromium-browser", "google-chrome", "google-chrome-stable",
}

// Find returns the path of the Chromium binary hybroute runs, and is the
// one place that looks for it: path when it is not "" (the user's choice:
// WithChromiumPath, or a test's), otherwise $CHROMIUM when it is set (a
// path, or a name looked up on PATH), otherwise the first found of the
// places each system puts Chromium and Chrome (see [system.candidates]):
// the usual names on PATH, then the system's own places (/snap/bin,
// /Applications, Program Files), then the caches of Chrome for Testing
// that Puppeteer and Playwright fill. The binary found is unwrapped (see
// [Unwrap]). The error says what was tried and how to install one.
func Find(path string) (string, error) { return hostSystem().find(path, "WithChromiumPath(%q)") }

// Lookup is Find for a program with an environment of its own, such as a
// command's: getenv is its environment, and the error names path with
// label (a format of one %q, e.g. "--chromium %q").
func Lookup(path, label string, getenv func(string) string) (string, error) {
	return system{goos: runtime.GOOS, getenv: getenv}.find(path, label)
}

// system is where Find looks: this machine, or in a test a fake layout
// (another GOOS, its absolute paths under root, its environment).
type system struct {
	goos   string
	root   string // prefix of the system's own absolute paths; "" on this machine
	getenv func(string) string
}

func hostSystem() system { return system{goos: runtime.GOOS, getenv: os.Getenv} }

func (s system) find(path, label string) (string, error) {
	if path != "" {
		full, err := s.lookPath(path)
		if err != nil {
			return "", fmt.Errorf(label+": %w (or %s)", path, err, s.Install())
		}
		return Unwrap(full), nil
	}
	if p := s.getenv("CHROMIUM"); p != "" {
		full, err := s.lookPath(p)
		if err != nil {
			return "", fmt.Errorf("$CHROMIUM=%q: %w (or %s)", p, err, s.Install())
		}
		return Unwrap(full), nil
	}
	cands := s.candidates()
	for _, c := range cands {
		if c.name != "" {
			if full, err := s.lookPath(c.name); err == nil {
				return Unwrap(full), nil
			}
			continue
		}
		if full := s.glob(c.dir, c.pattern); full != "" {
			return Unwrap(full), nil
		}
	}
	return "", fmt.Errorf("no Chromium or Chrome found (looked %s); %s, or set $CHROMIUM to its path", tried(cands), s.Install())
}

// candidate is one place to look: a name on PATH, or a path under dir
// whose elements may hold * (the newest version that matches wins).
type candidate struct {
	name         string
	dir, pattern string
}

// candidates are the places the system puts Chromium and Chrome, in
// order: headless shells before full browsers wherever both can be.
func (s system) candidates() []candidate {
	var out []candidate
	exe := ""
	if s.goos == "windows" {
		exe = ".exe"
	}
	for _, n := range names {
		out = append(out, candidate{name: n + exe})
	}
	at := func(dir string, patterns ...string) {
		if dir == "" {
			return // its variable is unset: nothing to look under
		}
		for _, p := range patterns {
			out = append(out, candidate{dir: dir, pattern: p})
		}
	}
	home := s.getenv("HOME")
	if s.goos == "windows" {
		home = s.getenv("USERPROFILE")
	}
	cache := func(env string, dirs ...string) string {
		if d := s.getenv(env); d != "" {
			return d
		}
		if dirs[0] == "" {
			return ""
		}
		return filepath.Join(dirs...)
	}
	// Puppeteer's cache: $PUPPETEER_CACHE_DIR, else ~/.cache/puppeteer;
	// Playwright's: $PLAYWRIGHT_BROWSERS_PATH, else a per-system place.
	puppeteer := cache("PUPPETEER_CACHE_DIR", home, ".cache", "puppeteer")
	switch s.goos {
	case "darwin":
		const app = "Contents/MacOS/"
		apps := []string{
			"Google Chrome.app/" + app + "Google Chrome",
			"Chromium.app/" + app + "Chromium",
			"Google Chrome for Testing.app/" + app + "Google Chrome for Testing",
		}
		at(s.abs("/Applications"), apps...)
		if home != "" {
			at(filepath.Join(home, "Applications"), apps...)
		}
		at(puppeteer, "chrome-headless-shell/mac*/chrome-headless-shell-mac*/chrome-headless-shell",
			"chrome/mac*/chrome-mac*/Google Chrome for Testing.app/"+app+"Google Chrome for Testing")
		playwright := cache("PLAYWRIGHT_BROWSERS_PATH", home, "Library", "Caches", "ms-playwright")
		at(playwright, "chromium_headless_shell-*/chrome-headless-shell-mac*/chrome-headless-shell",
			"chromium_headless_shell-*/chrome-mac/headless_shell",
			"chromium-*/chrome-mac*/Google Chrome for Testing.app/"+app+"Google Chrome for Testing",
			"chromium-*/chrome-mac/Chromium.app/"+app+"Chromium")
	case "windows":
		const chrome = "Google/Chrome/Application/chrome.exe"
		const chromium = "Chromium/Application/chrome.exe"
		local := s.getenv("LOCALAPPDATA")
		at(s.getenv("ProgramFiles"), chrome, chromium)
		at(s.getenv("ProgramFiles(x86)"), chrome)
		at(local, chrome, chromium)
		at(puppeteer, "chrome-headless-shell/win64-*/chrome-headless-shell-win64/chrome-headless-shell.exe",
			"chrome/win64-*/chrome-win64/chrome.exe")
		playwright := cache("PLAYWRIGHT_BROWSERS_PATH", local, "ms-playwright")
		at(playwright, "chromium_headless_shell-*/chrome-headless-shell-win64/chrome-headless-shell.exe",
			"chromium_headless_shell-*/chrome-win/headless_shell.exe",
			"chromium-*/chrome-win64/chrome.exe", "chromium-*/chrome-win/chrome.exe")
	default: // Linux and the other Unix systems
		// Snap's Chromium (Ubuntu's) when /snap/bin is not on PATH, as in
		// a service's environment; Google's package's own binary.
		at(s.abs("/snap/bin"), "chromium")
		at(s.abs("/opt/google/chrome"), "chrome")
		at(puppeteer, "chrome-headless-shell/linux-*/chrome-headless-shell-linux64/chrome-headless-shell",
			"chrome/linux-*/chrome-linux64/chrome")
		playwright := cache("PLAYWRIGHT_BROWSERS_PATH", home, ".cache", "ms-playwright")
		at(playwright, "chromium_headless_shell-*/chrome-headless-shell-linux64/chrome-headless-shell",
			"chromium_headless_shell-*/chrome-linux/headless_shell",
			"chromium-*/chrome-linux64/chrome", "chromium-*/chrome-linux/chrome")
	}
	return out
}

// abs is one of the system's own absolute paths, under the fake root of
// a test.
func (s system) abs(p string) string {
	if s.root == "" {
		return p
	}
	return filepath.Join(s.root, p)
}

// Install says how to install a browser on the system Find looks on.
func Install() string { return hostSystem().Install() }

// Install says how to install a browser on s.
func (s system) Install() string {
	switch s.goos {
	case "darwin":
		return "install one: brew install --cask google-chrome (or chromium)"
	case "windows":
		return "install one: winget install Google.Chrome"
	case "linux":
		return "install one: on Debian, apt-get install -y chromium (or chromium-headless-shell, lighter); " +
			"on Ubuntu, snap install chromium (apt's chromium-browser installs the same snap)"
	}
	return "install Chromium or Chrome"
}

// tried is the places of cands, for the error.
func tried(cands []candidate) string {
	var onPath, places []string
	seen := map[string]bool{}
	for _, c := range cands {
		if c.name != "" {
			onPath = append(onPath, c.name)
		} else if !seen[c.dir] {
			seen[c.dir] = true
			places = append(places, c.dir)
		}
	}
	out := "on PATH for " + strings.Join(onPath, ", ")
	if len(places) > 0 {
		out += ", and in " + strings.Join(places, ", ")
	}
	return out
}

// lookPath is exec.LookPath for s: name when it holds a path separator,
// else the first executable of that name in a directory of $PATH.
func (s system) lookPath(name string) (string, error) {
	if strings.ContainsAny(name, `/\`) {
		if err := s.executable(name); err != nil {
			return "", err
		}
		return name, nil
	}
	tries := []string{name}
	if s.goos == "windows" && filepath.Ext(name) == "" {
		tries = append(tries, name+".exe")
	}
	for _, dir := range filepath.SplitList(s.getenv("PATH")) {
		for _, n := range tries {
			if p := filepath.Join(dir, n); dir != "" && s.executable(p) == nil {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("%q is not on PATH", name)
}

// executable says why path is no program to run, nil when it is one.
func (s system) executable(path string) error {
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return err
	case st.IsDir():
		return fmt.Errorf("%s is a directory", path)
	case !st.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", path)
	case s.goos != "windows" && st.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%s is not executable (mode %v)", path, st.Mode().Perm())
	}
	return nil
}

// glob is the newest executable under dir that pattern (slash-separated
// elements, * within an element) matches, "" when there is none.
func (s system) glob(dir, pattern string) string {
	elem, rest, more := strings.Cut(pattern, "/")
	if !strings.Contains(elem, "*") {
		p := filepath.Join(dir, elem)
		if !more {
			if s.executable(p) == nil {
				return p
			}
			return ""
		}
		return s.glob(p, rest)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var match []string
	for _, e := range entries {
		if ok, _ := path.Match(elem, e.Name()); ok {
			match = append(match, e.Name())
		}
	}
	slices.SortFunc(match, func(a, b string) int { return versionCompare(b, a) })
	for _, m := range match {
		p := filepath.Join(dir, m)
		if !more {
			if s.executable(p) == nil {
				return p
			}
			continue
		}
		if full := s.glob(p, rest); full != "" {
			return full
		}
	}
	return ""
}

// versionCompare orders names by their runs of digits as numbers, so
// that linux-131.0.6778.85 comes after linux-99.0.4844.51.
func versionCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := cmp.Compare(len(na), len(nb)); c != 0 {
				return c
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// Unwrap returns the binary that a trivial wrapper script runs, or path
// itself. Debian's chromium-headless-shell is such a script: it runs
// /usr/lib/chromium/chromium-headless-shell "$@" without exec, so the
// process started is the shell and Chromium is its child; the sidecar,
// which watches, measures and kills the browser by the pid it started,
// would then watch the shell. Only a small file that starts with #!/bin/sh
// and whose one command is an absolute path to an executable program
// (not another script) followed by "$@", exec allowed, counts as trivial;
// anything else is started as it is.
func Unwrap(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return path
	}
	defer f.Close()
	buf := make([]byte, maxWrapper+1)
	n, _ := io.ReadFull(f, buf)
	if n > maxWrapper || !bytes.HasPrefix(buf[:n], []byte("#!/bin/sh")) {
		return path
	}
	var cmd []string
	for i, line := range strings.Split(string(buf[:n]), "\n") {
		line = strings.TrimSpace(line)
		if i == 0 || line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if cmd != nil {
			return path // more than one command
		}
		cmd = strings.Fields(line)
	}
	if len(cmd) > 0 && cmd[0] == "exec" {
		cmd = cmd[1:]
	}
	if len(cmd) != 2 || cmd[1] != `"$@"` || !filepath.IsAbs(cmd[0]) || !isProgram(cmd[0]) {
		return path
	}
	return cmd[0]
}

// maxWrapper is the largest script Unwrap reads as a wrapper.
const maxWrapper = 4096

// isProgram reports whether path is an executable ELF file.
func isProgram(path string) bool {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	magic := make([]byte, 4)
	_, err = io.ReadFull(f, magic)
	return err == nil && string(magic) == "\x7fELF"
}
