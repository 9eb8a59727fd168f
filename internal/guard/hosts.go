package guard

import (
	"context"
	"net/netip"
	"sync"
	"time"
)

// On a remote browser the guard pauses every HTTP(S) request, so
// a page of a hundred subresources on twenty hosts asks about twenty names
// a hundred times, all at once. hostAnswers answers those from one lookup
// per name per session: the first request of a name starts the lookup, the
// ones that arrive while it runs wait on it, and the ones after it read
// the answer. Only the resolver's answer is kept, never a verdict: each
// request is still decided on its own URL, so a cached name cannot carry
// one URL's decision over to another.

// Bounds of a session's host answers.
const (
	// hostAnswerTTL is how long an answer is reused. A cloud browser does
	// its own DNS, so the router's answer stands in for it; reusing it for
	// longer than a page load would let a name that moved to a private
	// address keep a public verdict.
	hostAnswerTTL = 30 * time.Second
	// maxHostAnswers bounds the names a session keeps answers for: a page
	// that names more starts a fresh table.
	maxHostAnswers = 1024
)

// hostAnswers is the resolver's answers one session's guard reuses (not
// verdicts: each URL is decided on its own). Its zero value is ready.
type hostAnswers struct {
	mu sync.Mutex
	m  map[string]*hostLookup
}

// hostLookup is one name's lookup: done closes when addrs and err are set.
type hostLookup struct {
	done  chan struct{}
	at    time.Time
	addrs []netip.Addr
	err   error
}

// answer is the resolver's answer for name, from a lookup of its own or
// one already made for the session. The lookup runs under life (the
// guard's) bounded by limit, not under ctx: a waiter whose ctx ends gets
// ctx's error, and the lookup goes on for the ones behind it. A lookup
// that ran out of time is not kept.
func (h *hostAnswers) answer(ctx, life context.Context, limit time.Duration, res Resolver, name string, now time.Time) ([]netip.Addr, error) {
	h.mu.Lock()
	l := h.m[name]
	if l == nil || (l.finished() && now.Sub(l.at) > hostAnswerTTL) {
		if h.m == nil || len(h.m) >= maxHostAnswers {
			h.m = make(map[string]*hostLookup)
		}
		l = &hostLookup{done: make(chan struct{}), at: now}
		h.m[name] = l
		go h.resolve(l, life, limit, res, name)
	}
	h.mu.Unlock()
	select {
	case <-l.done:
		return l.addrs, l.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (h *hostAnswers) resolve(l *hostLookup, life context.Context, limit time.Duration, res Resolver, name string) {
	ctx, cancel := context.WithTimeout(life, limit)
	defer cancel()
	l.addrs, l.err = res.LookupNetIP(ctx, "ip", name)
	if ctx.Err() != nil {
		// Not an answer: the next request asks again.
		l.err = ctx.Err()
		h.mu.Lock()
		if h.m[name] == l {
			delete(h.m, name)
		}
		h.mu.Unlock()
	}
	close(l.done)
}

func (l *hostLookup) finished() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}
