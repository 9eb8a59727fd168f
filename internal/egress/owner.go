package egress

import (
	"context"
	"net/netip"
)

// Owner is what the proxy asks of its user: the decision on each
// connection, the refusal of a private address no grant covers, and where
// a refusal is recorded. The proxy has no rules of its own, so the
// connect-time check cannot disagree with the rest of its user's checks.
type Owner interface {
	// Decide decides hostport (host:port, as the browser asked for it).
	// It resolves a name once: the proxy dials the decision's Addrs and
	// nothing else. A refusal is a *Refusal; any other error means there
	// is nothing to dial (a name that does not resolve), and the proxy
	// answers it as a failed connection. On a refusal the Decision carries
	// what is known (Host, Addrs) for the log.
	Decide(ctx context.Context, hostport string) (Decision, error)
	// Ungranted is the refusal (a *Refusal) of a connection to hostport,
	// at the private addresses d decided, for a door whose grant does not
	// cover it.
	Ungranted(hostport string, d Decision) error
	// Refused records one refusal (a *Refusal) of Decide or Ungranted.
	Refused(ctx context.Context, err error)
}

// Decision is the owner's verdict on one connection the proxy may make.
type Decision struct {
	Host    string       // the host, as the owner's parser writes it; grants name hosts this way
	Addrs   []netip.Addr // the addresses the decision was made on: the only ones dialled
	Port    uint16
	Private bool // a private address: dialled only under the grant of the door it came through
}

// Refusal is a connection the owner's rules refuse. The proxy answers a
// tunnel with 403 and its Phrase and Reason, logs it once per host and
// minute, and hands it to Owner.Refused. It unwraps to the owner's own
// error, so errors.Is and errors.As find the owner's sentinels and types.
type Refusal struct {
	Class  string // the class of the address, for the log
	Reason string // the reason's name, for the log and the 403
	Phrase string // what the reason means, for the 403
	Err    error
}

func (r *Refusal) Error() string { return r.Err.Error() }
func (r *Refusal) Unwrap() error { return r.Err }
