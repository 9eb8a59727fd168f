package urlscan

// dedup keeps the first occurrence of each URL, in place. Small results
// (the usual browser call) compare directly; larger ones use a hash table
// on the stack so the only allocations stay the result and its strings.
func dedup(out []string) []string {
	if len(out) <= 32 {
		k := 0
	next:
		for _, s := range out {
			for _, t := range out[:k] {
				if s == t {
					continue next
				}
			}
			out[k] = s
			k++
		}
		clear(out[k:])
		return out[:k]
	}
	if len(out) > 12000 {
		return dedupMap(out)
	}
	return dedupTable(out)
}

// dedupTable is kept out of dedup so that its table is only zeroed (and the
// stack only grown for it) when a result is large.
//
//go:noinline
func dedupTable(out []string) []string {
	const size = 1 << 14 // power of two, load at most 12000/16384
	var table [size]uint16
	k := 0
	for _, s := range out {
		h := hashString(s) & (size - 1)
		for {
			slot := table[h]
			if slot == 0 {
				table[h] = uint16(k + 1)
				out[k] = s
				k++
				break
			}
			if out[slot-1] == s {
				break
			}
			h = (h + 1) & (size - 1)
		}
	}
	clear(out[k:])
	return out[:k]
}

func dedupMap(out []string) []string {
	seen := make(map[string]struct{}, len(out))
	k := 0
	for _, s := range out {
		if _, dup := seen[s]; dup {
			continue
		}
		seen[s] = struct{}{}
		out[k] = s
		k++
	}
	clear(out[k:])
	return out[:k]
}

// hashString is FNV-1a; URLs are short and this needs no seed.
func hashString(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}
