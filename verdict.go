package hybroute

import (
	"context"

	"github.com/hybroute/hybroute/netpolicy"
)

// Verdict decides on one URL: its class, the addresses the class was decided
// on, and, given the router's options, whether it is blocked. It never
// fails: an unparseable URL is [netpolicy.ClassInvalid] with Err set.
func (r *Router) Verdict(ctx context.Context, rawURL string) netpolicy.Verdict {
	v := r.pol.classify(ctx, rawURL)
	netpolicy.MarkLiteral(&v)
	v.Err = r.pol.refuseLiteral(v)
	return v
}
