package hybroute

import (
	"github.com/hybroute/hybroute/internal/floor"
	sc "github.com/hybroute/hybroute/internal/sidecar"
	"github.com/hybroute/hybroute/netpolicy"
)

// grantCall gives a session on the local browser the grant its call earns
// (floor.GrantCall), through the door of its browser context; a tab of any
// other browser has no door, and its call no grant.
func grantCall(e *entry, vs []netpolicy.Verdict) (done func()) {
	lt, ok := e.h.Tab().(*sc.Tab)
	if !ok || lt.Door() == nil {
		return func() {}
	}
	return floor.GrantCall(lt.Door(), vs, e.landedURL)
}
