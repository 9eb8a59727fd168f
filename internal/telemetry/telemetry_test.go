package telemetry

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hybroute/hybroute/netpolicy"
)

// TestTablesCoverEveryName: the tables the metric attributes are sized by
// hold every class and every reason netpolicy names, and no more: the
// first index past each is one netpolicy does not know.
func TestTablesCoverEveryName(t *testing.T) {
	t.Parallel()
	for c := range classNames {
		assert.Equal(t, netpolicy.Class(c).String(), classNames[c])
		assert.NotContains(t, classNames[c], "Class(")
	}
	assert.Equal(t, fmt.Sprintf("Class(%d)", len(classNames)), netpolicy.Class(len(classNames)).String())
	for r := 1; r < len(reasons); r++ {
		assert.NotContains(t, netpolicy.Reason(r).String(), "Reason(", "reason %d", r)
	}
	assert.Equal(t, fmt.Sprintf("Reason(%d)", len(reasons)), netpolicy.Reason(len(reasons)).String())
}
