package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hybroute/hybroute/internal/procfs"
)

// parseMemory reads a memory size: a number of bytes with an optional unit
// (KiB, MiB, GiB, or KB, MB, GB as the same powers of two), "0" for none,
// or "half" for half of this machine's memory (none where it is unknown).
func parseMemory(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "half") {
		return totalMemory() / 2, nil
	}
	units := []struct {
		suffix string
		mult   int64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"b", 1}}
	num, mult := strings.ToLower(s), int64(1)
	for _, u := range units {
		if n, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("%q is not a size such as 4GiB, 512MiB, 0 or half", s)
	}
	return int64(f * float64(mult)), nil
}

// totalMemory is the machine's memory in bytes; 0 where it cannot be read.
func totalMemory() int64 { return procfs.Bytes("/proc/meminfo", "MemTotal:") }
