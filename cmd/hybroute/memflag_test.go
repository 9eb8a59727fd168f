package main

import (
	"testing"

	"github.com/hybroute/hybroute/hybroutetest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseMemory(t *testing.T) {
	hybroutetest.Parallel(t)
	for in, want := range map[string]int64{"0": 0, "4GiB": 4 << 30, "512MiB": 512 << 20, "1.5g": 3 << 29, "2048": 2048, "64 MB": 64 << 20} {
		got, err := parseMemory(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	half, err := parseMemory("half")
	require.NoError(t, err)
	assert.Equal(t, totalMemory()/2, half)
	assert.Positive(t, half, "this machine's memory is known")
	for _, bad := range []string{"", "lots", "-1GiB", "GiB"} {
		_, err := parseMemory(bad)
		assert.Error(t, err, bad)
	}
}
