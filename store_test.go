package hybroute_test

import (
	"testing"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/hybroutetest/storetest"
)

func TestMemoryStoreConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(*testing.T) storetest.Store { return &hybroute.MemoryStore{} })
}
