package hybroute

import (
	"github.com/hybroute/hybroute/internal/floor"
	"github.com/hybroute/hybroute/netpolicy"
)

// The egress check (internal/egress) asks internal/floor about each
// connection of the local browser; a call's verdicts earn its session's
// grant, which the session's door holds.

// grantCall gives a session on the local browser the grant its call
// earns, before the call runs: the private hosts the call names, when it
// names any network target.
//
// It returns what ends the call's part: while the call runs, its pages may
// move among every host the call named (a mixed call that opens a public
// page, then localhost); when it ends on a page the grant does not cover,
// the grant ends there.
func grantCall(e *entry, vs []netpolicy.Verdict) (done func()) {
	lt, ok := e.h.Tab().(*localTab)
	if !ok || lt.door == nil {
		return func() {}
	}
	g, names := floor.GrantOf(vs)
	if !names {
		return func() {}
	}
	lt.door.Set(g)
	lt.door.NameCall(floor.NamedHosts(vs))
	return func() {
		lt.door.NameCall(nil)
		if landed := e.landedURL(); floor.IsWebURL(landed) {
			lt.door.Leave(landed)
		}
	}
}
