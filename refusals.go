package hybroute

import (
	"context"
	"errors"
	"sync"
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
	// Err is why, wrapping a [*BlockedError].
	Err error
}

// maxRefusalsKept bounds the refusals kept per session; past it the
// oldest go, and are counted.
const maxRefusalsKept = 500

// refusalLog is the bounded record of a session's refusals.
type refusalLog struct {
	mu      sync.Mutex
	list    []Refusal
	dropped int
}

func (l *refusalLog) add(x Refusal) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.list) >= maxRefusalsKept {
		n := len(l.list) - maxRefusalsKept + 1
		l.list = append(l.list[:0], l.list[n:]...)
		l.dropped += n
	}
	l.list = append(l.list, x)
}

// since is the refusals at or after t, and how many of those may be
// missing (dropped past the bound while t was already set).
func (l *refusalLog) since(t time.Time) ([]Refusal, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Refusal
	for _, x := range l.list {
		if !x.At.Before(t) {
			out = append(out, x)
		}
	}
	dropped := 0
	if l.dropped > 0 && len(l.list) > 0 && !l.list[0].At.Before(t) {
		dropped = l.dropped
	}
	return out, dropped
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
	out, dropped := e.refusals.since(since)
	return out, dropped, nil
}
