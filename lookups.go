package hybroute

// Defaults of [WithLookupConcurrency] and [WithMaxHostsPerCall]: a plan
// resolves each distinct name of a call once, a bounded number at a time
// (internal/floor's DecideAll).
const (
	DefaultLookupConcurrency = 16
	DefaultMaxHostsPerCall   = 4096
)
