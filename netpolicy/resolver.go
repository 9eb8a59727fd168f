package netpolicy

import (
	"context"
	"errors"
	"net/netip"
)

// Resolver looks up the addresses of a name. *net.Resolver satisfies it.
// It must honour its context, as net.Resolver does: a call's lookups end
// with the call.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// ErrNoAnswers is the [Verdict].ResolveErr of a name the resolver answered
// with no A or AAAA address and no error.
var ErrNoAnswers = errors.New("name has no A or AAAA answers")
