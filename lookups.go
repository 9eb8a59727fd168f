package hybroute

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// The name lookups of one call. A call's code can name a thousand pages;
// resolving each literal on its own, one after the other, would make a call
// wait for a thousand lookups in a row, and let a rebinding name be public
// for one literal and private for the next. So a plan resolves each distinct
// name once, a bounded number at a time, under the caller's context, and
// every literal of that name is decided on that one answer. The guard and
// the landed-URL check reuse the answers while the call runs; the egress
// check does not (it resolves at connect time, and dials what it resolved).

// Defaults of [WithLookupConcurrency] and [WithMaxHostsPerCall].
const (
	DefaultLookupConcurrency = 16
	DefaultMaxHostsPerCall   = 4096
)

// hostAnswer is what the resolver said for one name.
type hostAnswer struct {
	name  string
	addrs []netip.Addr
	err   error
}

// callLookups is the answers a call's plan got, by the name the resolver
// was asked. It is complete before anyone reads it and never changes after,
// so the guard's goroutines read it without a lock. A nil *callLookups
// holds nothing.
type callLookups struct {
	answers []hostAnswer     // in the order the call names them
	index   map[string]int32 // name → answer, once the call names more than a few
	few     [2]hostAnswer    // the answers of a call of one or two names, without another allocation
}

// indexFrom is how many names a call may have before callLookups indexes
// them: a call of a few names finds them faster in the slice, and with no
// map to allocate.
const indexFrom = 8

func (c *callLookups) find(name string) (int32, bool) {
	if c.index != nil {
		k, ok := c.index[name]
		return k, ok
	}
	for k := range c.answers {
		if c.answers[k].name == name {
			return int32(k), true
		}
	}
	return 0, false
}

func (c *callLookups) add(name string) int32 {
	k := int32(len(c.answers))
	c.answers = append(c.answers, hostAnswer{name: name})
	switch {
	case c.index != nil:
		c.index[name] = k
	case len(c.answers) > indexFrom:
		c.index = make(map[string]int32, 2*len(c.answers))
		for i, a := range c.answers {
			c.index[a.name] = int32(i)
		}
	}
	return k
}

func (c *callLookups) get(name string) (hostAnswer, bool) {
	if c == nil {
		return hostAnswer{}, false
	}
	k, ok := c.find(name)
	if !ok {
		return hostAnswer{}, false
	}
	return c.answers[k], true
}

// Answer is the call's answer for name, for the guard's decisions
// (guard.Lookups).
func (c *callLookups) Answer(name string) ([]netip.Addr, bool, error) {
	a, ok := c.get(name)
	return a.addrs, ok, a.err
}

// decideAll fills vs with the verdicts of urls (classes only: refuse is the
// caller's), resolving each distinct name once. It returns the answers, for
// the guard and the landed-URL check of the call, or nil when no name was
// resolved. It fails with [ErrTooManyHosts] before any lookup when the call
// names more hosts than the limit, and with the context's error when the
// context ends first; then the verdicts that waited on a lookup carry that
// error as their ResolveErr.
func (r *Router) decideAll(ctx context.Context, urls []string, vs []Verdict) (*callLookups, error) {
	var (
		pending []int32 // per URL: the index of the answer it waits on, or -1
		look    *callLookups
		few     [8]int32 // pending's room in a call of a few URLs
	)
	for i, u := range urls {
		v, name := r.pol.classifyParsed(u)
		vs[i] = v
		if name == "" {
			if pending != nil {
				pending[i] = -1
			}
			continue
		}
		if pending == nil {
			// The first name of the call: from here on every URL says
			// which answer it waits on.
			if len(urls) <= len(few) {
				pending = few[:len(urls)]
			} else {
				pending = make([]int32, len(urls))
			}
			for j := range i {
				pending[j] = -1
			}
			look = &callLookups{}
			look.answers = look.few[:0]
		}
		k, ok := look.find(name)
		if !ok {
			k = look.add(name)
		}
		pending[i] = k
	}
	if look == nil {
		return nil, nil
	}
	if n, limit := len(look.answers), r.cfg.maxHostsPerCall; n > limit {
		return nil, fmt.Errorf("%w: the call names %d hosts to resolve, the limit is %d (WithMaxHostsPerCall)", ErrTooManyHosts, n, limit)
	}
	err := r.lookupAll(ctx, look.answers)
	for i, k := range pending {
		if k < 0 {
			continue
		}
		if err != nil {
			vs[i] = resolved(vs[i], nil, err)
			continue
		}
		a := &look.answers[k]
		vs[i] = resolved(vs[i], a.addrs, a.err)
	}
	if err != nil {
		return nil, err
	}
	return look, nil
}

// lookupsAloneFor is how long a call's lookups run one after the other on
// the caller's goroutine before others join in. A resolver that answers
// from a cache answers a whole call's names in less, with no goroutine
// started; one that asks the network takes 20–50 ms for a single name, so
// after this the call's names are shared out.
const lookupsAloneFor = time.Millisecond

// lookupRun is the lookups of one call in progress: the next answer to
// fill, and the goroutines that joined the caller's.
type lookupRun struct {
	ctx     context.Context
	res     Resolver
	answers []hostAnswer
	helpers int

	next   atomic.Int64
	joined sync.WaitGroup // the helpers are started
	pool   sync.WaitGroup // the helpers
}

// work resolves the next name without an answer until none is left or the
// context ends.
func (l *lookupRun) work() {
	for l.ctx.Err() == nil {
		i := int(l.next.Add(1) - 1)
		if i >= len(l.answers) {
			return
		}
		a := &l.answers[i]
		a.addrs, a.err = l.res.LookupNetIP(l.ctx, "ip", a.name)
	}
}

func (l *lookupRun) join() {
	defer l.joined.Done()
	for range l.helpers {
		l.pool.Go(l.work)
	}
}

// lookupAll fills the answers, under ctx. The caller's goroutine resolves
// the names one after the other; when that takes longer than
// lookupsAloneFor, more goroutines join it, up to the router's lookup
// concurrency in all. When ctx ends, no new lookup starts and the lookups in
// flight end with it (the [Resolver] honours its context, as net.Resolver
// does); lookupAll then returns ctx's error. No lookup outlives it.
func (r *Router) lookupAll(ctx context.Context, answers []hostAnswer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	helpers := min(len(answers), r.cfg.lookupConcurrency) - 1
	if helpers < 1 {
		// One name, as in most calls (or no concurrency): nothing to share.
		for i := range answers {
			if ctx.Err() != nil {
				break
			}
			a := &answers[i]
			a.addrs, a.err = r.pol.resolver.LookupNetIP(ctx, "ip", a.name)
		}
		return ctx.Err()
	}
	l := &lookupRun{ctx: ctx, res: r.pol.resolver, answers: answers, helpers: helpers}
	l.joined.Add(1)
	join := time.AfterFunc(lookupsAloneFor, l.join)
	l.work()
	if !join.Stop() {
		l.joined.Wait()
		l.pool.Wait()
	}
	// A lookup that failed because ctx ended as it finished must not
	// pass for a name that does not resolve.
	return ctx.Err()
}
