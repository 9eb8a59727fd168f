package hybroute

import (
	"context"
	"errors"
	"time"
)

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

// Refusals returns, from inside a run of [Router.Exec] or
// [Router.NavigateWith] (ctx is the run's), the requests of the run's
// session that the guard refused at or after since (at most 500 are kept
// per session, the newest), and how many older ones may be missing.
func (r *Router) Refusals(ctx context.Context, since time.Time) ([]Refusal, int, error) {
	e, _ := ctx.Value(runKey{}).(*entry)
	if e == nil {
		return nil, 0, errors.New("hybroute: Refusals needs the context of a run of Exec or NavigateWith")
	}
	got, dropped := e.gs.Refusals(since)
	out := make([]Refusal, 0, len(got))
	for _, x := range got {
		out = append(out, Refusal(x))
	}
	return out, dropped, nil
}
