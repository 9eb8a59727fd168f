// Package testlog holds the one log buffer of the tests: a writer that a
// logger, a command's stderr or a browser's output writes from one goroutine
// while the test reads it from another.
package testlog

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer collects what is written to it, safe for concurrent use. Its zero
// value is empty and unbounded.
type Buffer struct {
	// Max, when positive, is how many bytes the buffer keeps: writes past
	// it are dropped (and reported written), so a chatty process cannot
	// fill the test's memory.
	Max int

	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p, up to Max.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Max > 0 && b.buf.Len() >= b.Max {
		return len(p), nil
	}
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Count returns how many times substr occurs in what was written.
func (b *Buffer) Count(substr string) int {
	return strings.Count(b.String(), substr)
}
