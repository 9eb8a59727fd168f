package egress

import "net/netip"

// Decision is Config.Decide's verdict on one connection the proxy may make.
type Decision struct {
	Host    string       // the host, as the deciding parser writes it; grants name hosts this way
	Addrs   []netip.Addr // the addresses the decision was made on: the only ones dialled
	Port    uint16
	Private bool // a private address: dialled only under the grant of the door it came through
}

// Refusal is a connection the user's rules refuse. The proxy answers a
// tunnel with 403 and its Phrase and Reason, logs it once per host and
// minute, and hands it to Config.Refused. It unwraps to the rules' own
// error, so errors.Is and errors.As find their sentinels and types.
type Refusal struct {
	Class  string // the class of the address, for the log
	Reason string // the reason's name, for the log and the 403
	Phrase string // what the reason means, for the 403
	Err    error
}

func (r *Refusal) Error() string { return r.Err.Error() }
func (r *Refusal) Unwrap() error { return r.Err }
