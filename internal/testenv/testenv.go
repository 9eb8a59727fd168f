// Package testenv holds the test helpers that the tests of every package
// and module share and that need nothing of the package under test: when a
// browser test runs at all, and how long a test may wait.
package testenv

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/hybroute/hybroute/internal/chromium"
)

// ChromiumPath returns the Chromium binary the tests run, found as the
// library finds its own: $CHROMIUM when set, otherwise the first of the
// usual names on PATH. It returns "" when there is none.
func ChromiumPath() string {
	p, err := chromium.Find("")
	if err != nil {
		return ""
	}
	return p
}

// RequireBrowser is the environment variable that turns the skip of a
// browser test without a Chromium into a failure: CI sets it (.ci/run), so
// that a machine without Chromium cannot pass with the browser tests
// skipped.
const RequireBrowser = "HYBROUTE_REQUIRE_BROWSER"

// RequireChromium skips a test that drives a real Chromium under -short,
// and when none is installed, saying why; with $HYBROUTE_REQUIRE_BROWSER
// set to anything but "" or "0", a missing Chromium fails the test instead.
func RequireChromium(tb testing.TB) {
	tb.Helper()
	if testing.Short() {
		tb.Skip("skipping: this test drives a real Chromium (-short)")
	}
	if _, err := chromium.Find(""); err != nil {
		if v := os.Getenv(RequireBrowser); v != "" && v != "0" {
			tb.Fatalf("this test drives a real Chromium and none is installed, and $%s=%s forbids the skip (install the chromium package or set $CHROMIUM): %v", RequireBrowser, v, err)
			return
		}
		tb.Skipf("skipping: this test drives a real Chromium and none is installed (install the chromium package or set $CHROMIUM): %v", err)
	}
}

// Context is a context that ends after d, or when the test ends.
func Context(tb testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	tb.Cleanup(cancel)
	return ctx
}
