package hybroute

import "github.com/hybroute/hybroute/internal/config"

// Defaults of [WithLookupConcurrency] and [WithMaxHostsPerCall]: a plan
// resolves each distinct name of a call once, a bounded number at a time
// (internal/floor's DecideAll).
const (
	DefaultLookupConcurrency = config.LookupConcurrency // 16
	DefaultMaxHostsPerCall   = config.MaxHostsPerCall   // 4096
)
