// Package procfs reads the "Name: value" fields of Linux's /proc files
// (status, smaps_rollup, meminfo), which the memory budget and the load
// test measure with.
package procfs

import (
	"os"
	"strconv"
	"strings"
)

// Number is the first number after field (such as "PPid:") in the file at
// path; 0 when the file or the field is missing.
func Number(path, field string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, field); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}

// Bytes is a field given in kB (such as "Pss:" or "MemTotal:"), in bytes.
func Bytes(path, field string) int64 { return Number(path, field) * 1024 }
