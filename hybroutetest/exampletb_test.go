package hybroutetest_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

// exampleTB stands in for the *testing.T an Example has not got: it runs
// the cleanups when the example ends, last first, as testing does, and an
// error or a skip panics, which fails the example. The embedded TB is nil:
// a method not written here panics too.
type exampleTB struct {
	testing.TB

	mu       sync.Mutex
	cleanups []func()
	cancel   context.CancelFunc
}

// exampleTest is the example's test and its context, which ends after a
// few minutes (a cold Chromium on a loaded machine) or with the example.
func exampleTest() (*exampleTB, context.Context) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	return &exampleTB{cancel: cancel}, ctx
}

func (e *exampleTB) Helper()      {}
func (e *exampleTB) Name() string { return "Example" }
func (e *exampleTB) Cleanup(f func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cleanups = append(e.cleanups, f)
}
func (e *exampleTB) TempDir() string {
	dir, err := os.MkdirTemp("", "hybroutetest-example-")
	if err != nil {
		e.Fatalf("temporary directory: %v", err)
	}
	e.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
func (e *exampleTB) Errorf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (e *exampleTB) Error(args ...any)                 { panic(fmt.Sprint(args...)) }
func (e *exampleTB) Fatalf(format string, args ...any) { e.Errorf(format, args...) }
func (e *exampleTB) Fatal(args ...any)                 { e.Error(args...) }
func (e *exampleTB) FailNow()                          { panic("FailNow") }
func (e *exampleTB) Skipf(format string, args ...any)  { e.Errorf("skipped: "+format, args...) }
func (e *exampleTB) Skip(args ...any)                  { e.Error(append([]any{"skipped: "}, args...)...) }
func (e *exampleTB) SkipNow()                          { e.Error("skipped") }
func (e *exampleTB) Log(args ...any)                   {}
func (e *exampleTB) Logf(string, ...any)               {}
func (e *exampleTB) Failed() bool                      { return false }

// finish runs the cleanups.
func (e *exampleTB) finish() {
	defer e.cancel()
	e.mu.Lock()
	fs := e.cleanups
	e.cleanups = nil
	e.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}
