// Package chromium finds the Chromium binary that hybroute runs: the local
// sidecar's, and the stand-in cloud browser of the tests.
package chromium

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// names are the programs looked up on PATH, in order, when $CHROMIUM names
// none: Debian's and other distributions' Chromium, Google Chrome, and
// chrome-headless-shell.
var names = [...]string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"}

// Find returns the path of the Chromium binary: $CHROMIUM when it is set (a
// path, or a name looked up on PATH), otherwise the first of the usual
// names found on PATH. The error says what was tried.
func Find() (string, error) {
	if p := os.Getenv("CHROMIUM"); p != "" {
		full, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("$CHROMIUM=%q: %w", p, err)
		}
		return full, nil
	}
	for _, name := range names {
		if full, err := exec.LookPath(name); err == nil {
			return full, nil
		}
	}
	return "", fmt.Errorf("none of %s is on PATH", strings.Join(names[:], ", "))
}
