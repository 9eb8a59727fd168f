package agent

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hybroute/hybroute/internal/toolfuzz"
)

// TestFuzzKnowsTheCatchAll: the fuzzer counts a tool error as outside the
// documented set by the text describe gives an error it has no words for.
func TestFuzzKnowsTheCatchAll(t *testing.T) {
	const marker = "some error no one named"
	got := describe(errors.New(marker), nil, "")
	prefix := strings.TrimSuffix(got, marker)
	assert.Equal(t, toolfuzz.UnexpectedPrefixes[0], prefix, "describe's catch-all changed: update toolfuzz.UnexpectedPrefixes")
}
