package hybroute

import "time"

// Refusal is one request of a session's pages that the guard refused:
// what it asked for and why. A tool that lists a page's requests shows
// them next to the ones the browser made.
type Refusal struct {
	At time.Time
	// URL is the refused URL, cut to a bounded length. It may carry a
	// credential: redact it before it is shown (internal/redact).
	URL string
	// ResourceType is the browser's name of what was asked for
	// (Document, Image, Fetch, …).
	ResourceType string
	// Target is where the request came from: "tab", "popup", "iframe",
	// "frame in tab", "worker", …
	Target string
	// RequestID is the browser's Network request id, which the page's
	// Network events carry too; empty when the browser did not say.
	RequestID string
	// Err is why, wrapping a [*netpolicy.BlockedError].
	Err error
}
