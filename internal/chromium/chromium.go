// Package chromium finds the Chromium binary that hybroute runs: the local
// sidecar's, and the stand-in cloud browser of the tests.
package chromium

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
// path, or a name looked up on PATH), otherwise the first of the usual
// names found on PATH. The binary found is unwrapped (see [Unwrap]). The
// error says what was tried.
func Find(path string) (string, error) {
	if path != "" {
		full, err := exec.LookPath(path)
		if err != nil {
			return "", fmt.Errorf("WithChromiumPath(%q): %w", path, err)
		}
		return Unwrap(full), nil
	}
	if p := os.Getenv("CHROMIUM"); p != "" {
		full, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("$CHROMIUM=%q: %w", p, err)
		}
		return Unwrap(full), nil
	}
	for _, name := range names {
		if full, err := exec.LookPath(name); err == nil {
			return Unwrap(full), nil
		}
	}
	return "", fmt.Errorf("none of %s is on PATH", strings.Join(names[:], ", "))
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
