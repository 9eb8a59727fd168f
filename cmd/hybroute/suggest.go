package main

import (
	"flag"
	"strings"
)

// didYouMean is `; did you mean "name"?` for the flag of fs closest to
// key, a key no flag has, or "" when none is close: a misspelt key (a
// letter off, _ for -, a plural) is named, not left for the user to find.
func didYouMean(fs *flag.FlagSet, key string) string {
	norm := func(s string) string { return strings.ReplaceAll(strings.ToLower(strings.TrimLeft(s, "-")), "_", "-") }
	k := norm(key)
	best, bestD := "", -1
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name == "config" || f.Name == "print-config" {
			return // never a key
		}
		if d := editDistance(k, f.Name); bestD < 0 || d < bestD {
			best, bestD = f.Name, d
		}
	})
	if best == "" || bestD > max(1, len(k)/4) {
		return ""
	}
	return `; did you mean "` + best + `"?`
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
