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
	_, err := Find()
	if err == nil || !strings.Contains(err.Error(), "none of chromium, chromium-browser") {
		t.Fatalf("Find on an empty PATH: %v", err)
	}

	// The first name on PATH wins.
	for _, n := range []string{"google-chrome", "chromium-browser"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := Find(); err != nil || got != filepath.Join(dir, "chromium-browser") {
		t.Fatalf("Find = %q, %v; want the chromium-browser on PATH", got, err)
	}

	// $CHROMIUM wins over PATH, and a wrong one is an error, not a search.
	t.Setenv("CHROMIUM", "google-chrome")
	if got, err := Find(); err != nil || got != filepath.Join(dir, "google-chrome") {
		t.Fatalf("Find with $CHROMIUM = %q, %v", got, err)
	}
	t.Setenv("CHROMIUM", "/nonexistent/chromium")
	if _, err := Find(); err == nil || !strings.Contains(err.Error(), `$CHROMIUM="/nonexistent/chromium"`) {
		t.Fatalf("Find with a wrong $CHROMIUM: %v", err)
	}
}
