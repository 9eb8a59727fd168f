package testenv

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestRequireChromiumSkipsWithoutOne: with $CHROMIUM naming nothing, a
// browser test is skipped, not failed.
func TestRequireChromiumSkipsWithoutOne(t *testing.T) {
	t.Setenv("CHROMIUM", "/nonexistent/chromium")
	t.Setenv(RequireBrowser, "")
	if ChromiumPath() != "" {
		t.Fatalf("ChromiumPath() = %q with $CHROMIUM naming nothing", ChromiumPath())
	}
	skipped := false
	t.Run("browser test", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		RequireChromium(t)
		t.Error("RequireChromium returned with no Chromium installed")
	})
	if !skipped {
		t.Error("the browser test was not skipped")
	}
}

// TestRequireChromiumFailsWhenRequired: with $HYBROUTE_REQUIRE_BROWSER
// set, as in CI, a browser test without a Chromium fails instead of
// skipping; "0" leaves the skip.
func TestRequireChromiumFailsWhenRequired(t *testing.T) {
	t.Setenv("CHROMIUM", "/nonexistent/chromium")
	for _, tc := range []struct {
		value      string
		fail, skip bool
	}{{"1", true, false}, {"0", false, true}} {
		t.Setenv(RequireBrowser, tc.value)
		tb := &recordingTB{TB: t}
		RequireChromium(tb)
		assert.Equal(t, tc.fail, tb.failed != "", "%s=%s: failed with %q", RequireBrowser, tc.value, tb.failed)
		assert.Equal(t, tc.skip, tb.skipped != "", "%s=%s: skipped with %q", RequireBrowser, tc.value, tb.skipped)
	}
}

// recordingTB records a Fatalf or Skipf instead of ending the test.
type recordingTB struct {
	testing.TB
	failed, skipped string
}

func (r *recordingTB) Helper() {}
func (r *recordingTB) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
}
func (r *recordingTB) Skipf(format string, args ...any) {
	r.skipped = fmt.Sprintf(format, args...)
}

// TestContextEndsWithTheTest: the context ends at its deadline, and at the
// latest when the test that asked for it ends.
func TestContextEndsWithTheTest(t *testing.T) {
	var ctx context.Context
	t.Run("inner", func(t *testing.T) {
		ctx = Context(t, time.Hour)
		if err := ctx.Err(); err != nil {
			t.Fatalf("ended at once: %v", err)
		}
	})
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Errorf("the context outlived its test: %v", ctx.Err())
	}
	short := Context(t, time.Millisecond)
	<-short.Done()
	if !errors.Is(short.Err(), context.DeadlineExceeded) {
		t.Errorf("err = %v, want the deadline", short.Err())
	}
}
