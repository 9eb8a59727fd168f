package store_test

import (
	"testing"

	"github.com/hybroute/hybroute/hybroutetest/storetest"
	"github.com/hybroute/hybroute/store"
)

func TestMemoryConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(*testing.T) storetest.Store { return &store.Memory{} })
}
