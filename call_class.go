package hybroute

import (
	"context"

	"github.com/hybroute/hybroute/netpolicy"
)

// Class is the class of rawURL's target as the Router decides it, with its
// resolver: [netpolicy.ClassPrivate] for a private address, a name that
// resolves to one, or localhost. A tool that hands a page something bound
// to a URL (a secret typed only on its origin) asks it, to keep what
// belongs to a private address off remote browsers ([Call.Route]).
func (c *Call) Class(ctx context.Context, rawURL string) netpolicy.Class {
	return c.r.pol.Classify(ctx, rawURL).Class
}
