package testenv

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestRequireChromiumSkipsWithoutOne: with $CHROMIUM naming nothing, a
// browser test is skipped, not failed.
func TestRequireChromiumSkipsWithoutOne(t *testing.T) {
	t.Setenv("CHROMIUM", "/nonexistent/chromium")
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
