package egress

import (
	"net"
	"strconv"
	"time"
)

// Failure is one connection of a door's browser context that the proxy did
// not make. The browser shows the page only a network error for it
// (ERR_TUNNEL_CONNECTION_FAILED for a tunnel, ERR_EMPTY_RESPONSE for a
// plain-HTTP request), so the door keeps why, for its user to tell the
// caller.
type Failure struct {
	At       time.Time
	HostPort string // as the browser asked for it, cut to a bounded length
	Kind     FailureKind
	// Err is why: a *Refusal (Refused), Config.Decide's error (Unresolved)
	// or the dials' errors (Unreachable).
	Err error
}

// FailureKind is why the proxy did not make a connection.
type FailureKind uint8

const (
	// Refused: the rules refused it (Err is a *Refusal).
	Refused FailureKind = iota + 1
	// Unresolved: the name had no address to dial.
	Unresolved
	// Unreachable: no address it had took the connection.
	Unreachable
)

// maxFailures bounds a door's failures: the newest are kept.
const maxFailures = 64

// maxFailureHost bounds the host:port a failure keeps.
const maxFailureHost = 300

// record keeps one failure of the door's connections.
func (d *Door) record(hostport string, kind FailureKind, err error) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.recordLocked(hostport, kind, err)
}

// recordLocked is record with d.mu held.
func (d *Door) recordLocked(hostport string, kind FailureKind, err error) {
	if len(hostport) > maxFailureHost {
		hostport = hostport[:maxFailureHost]
	}
	f := Failure{At: time.Now(), HostPort: hostport, Kind: kind, Err: err}
	if len(d.fails) >= maxFailures {
		d.fails = append(d.fails[:0], d.fails[1:]...)
	}
	d.fails = append(d.fails, f)
}

// Failures returns the failures of the door's connections at or after
// since, oldest first (at most the newest 64 are kept).
func (d *Door) Failures(since time.Time) []Failure {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []Failure
	for _, f := range d.fails {
		if !f.At.Before(since) {
			out = append(out, f)
		}
	}
	return out
}

// FailureFor is the newest failure at or after since of a connection to
// host (as a URL's hostname writes it: an IPv6 literal in brackets or
// not) on port.
func (d *Door) FailureFor(host string, port int, since time.Time) (Failure, bool) {
	want := net.JoinHostPort(grantHost(host), strconv.Itoa(port))
	fs := d.Failures(since)
	for i := len(fs) - 1; i >= 0; i-- {
		h, p, err := net.SplitHostPort(fs[i].HostPort)
		if err == nil && net.JoinHostPort(grantHost(h), p) == want {
			return fs[i], true
		}
	}
	return Failure{}, false
}
