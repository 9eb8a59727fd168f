package hybroute

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestBridgeTablesCoverEveryName: the tables telemetry sizes its metric
// attributes by hold every class and every reason netpolicy names, and
// no more: the first index past each is one netpolicy does not know.
func TestBridgeTablesCoverEveryName(t *testing.T) {
	t.Parallel()
	for c := range classNames {
		assert.Equal(t, Class(c).String(), classNames[c])
		assert.NotContains(t, classNames[c], "Class(")
	}
	assert.Equal(t, fmt.Sprintf("Class(%d)", len(classNames)), Class(len(classNames)).String())
	for r := 1; r < len(reasons); r++ {
		assert.NotContains(t, Reason(r).String(), "Reason(", "reason %d", r)
	}
	assert.Equal(t, fmt.Sprintf("Reason(%d)", len(reasons)), Reason(len(reasons)).String())
}
