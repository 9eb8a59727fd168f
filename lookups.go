package hybroute

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/hybroute/hybroute/netpolicy"
)

// The name lookups of one call ([netpolicy.Lookups]): a plan resolves each
// distinct name once, a bounded number at a time, under the caller's
// context, and every literal of that name is decided on that one answer.
// The guard and the landed-URL check reuse the answers while the call
// runs; the egress check does not (it resolves at connect time, and dials
// what it resolved).

// Defaults of [WithLookupConcurrency] and [WithMaxHostsPerCall].
const (
	DefaultLookupConcurrency = 16
	DefaultMaxHostsPerCall   = 4096
)

// callLookups is the answers a call's plan got ([netpolicy.Lookups]). A
// nil *callLookups holds nothing.
type callLookups netpolicy.Lookups

// np is the lookups as the classifier takes them.
func (c *callLookups) np() *netpolicy.Lookups { return (*netpolicy.Lookups)(c) }

// Answer is the call's answer for name, for the guard's decisions
// (guard.Lookups).
func (c *callLookups) Answer(name string) ([]netip.Addr, bool, error) {
	a, ok := c.np().Get(name)
	return a.Addrs, ok, a.Err
}

// decideAll fills vs with the verdicts of urls (classes only: refuse is the
// caller's), resolving each distinct name once, within the router's limits
// ([netpolicy.Classifier.ClassifyAll]). It returns the answers, for the
// guard and the landed-URL check of the call, or nil when no name was
// resolved.
func (r *Router) decideAll(ctx context.Context, urls []string, vs []netpolicy.Verdict) (*callLookups, error) {
	look, err := r.pol.cls.ClassifyAll(ctx, urls, vs, r.cfg.maxHostsPerCall, r.cfg.lookupConcurrency)
	if errors.Is(err, netpolicy.ErrTooManyHosts) {
		err = fmt.Errorf("%w (WithMaxHostsPerCall)", err)
	}
	return (*callLookups)(look), err
}
