package chromium

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFind(t *testing.T) {
	// Not parallel: it sets $PATH and $CHROMIUM.
	dir := t.TempDir()
	t.Setenv("PATH", dir)
	t.Setenv("CHROMIUM", "")
	_, err := Find("")
	if err == nil || !strings.Contains(err.Error(), "none of chromium-headless-shell, chrome-headless-shell, headless-shell, chromium,") {
		t.Fatalf("Find on an empty PATH: %v", err)
	}

	// The first name on PATH wins.
	for _, n := range []string{"google-chrome", "chromium-browser"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := Find(""); err != nil || got != filepath.Join(dir, "chromium-browser") {
		t.Fatalf("Find = %q, %v; want the chromium-browser on PATH", got, err)
	}

	// A headless shell wins over the full browsers.
	if err := os.WriteFile(filepath.Join(dir, "chromium-headless-shell"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := Find(""); err != nil || got != filepath.Join(dir, "chromium-headless-shell") {
		t.Fatalf("Find = %q, %v; want the headless shell on PATH", got, err)
	}

	// $CHROMIUM wins over PATH, and a wrong one is an error, not a search.
	t.Setenv("CHROMIUM", "google-chrome")
	if got, err := Find(""); err != nil || got != filepath.Join(dir, "google-chrome") {
		t.Fatalf("Find with $CHROMIUM = %q, %v", got, err)
	}
	t.Setenv("CHROMIUM", "/nonexistent/chromium")
	if _, err := Find(""); err == nil || !strings.Contains(err.Error(), `$CHROMIUM="/nonexistent/chromium"`) {
		t.Fatalf("Find with a wrong $CHROMIUM: %v", err)
	}

	// The path given wins over $CHROMIUM, even a wrong one, and a wrong
	// path is an error, not a search.
	if got, err := Find("chromium-browser"); err != nil || got != filepath.Join(dir, "chromium-browser") {
		t.Fatalf("Find(chromium-browser) = %q, %v", got, err)
	}
	t.Setenv("CHROMIUM", "")
	if _, err := Find("/nonexistent/chromium"); err == nil || !strings.Contains(err.Error(), `WithChromiumPath("/nonexistent/chromium")`) {
		t.Fatalf("Find with a wrong path: %v", err)
	}
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
