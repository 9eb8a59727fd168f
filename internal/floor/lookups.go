package floor

import (
	"net/netip"

	"github.com/hybroute/hybroute/netpolicy"
)

// Lookups is the answers a call's plan got ([netpolicy.Lookups]). A nil
// *Lookups holds nothing.
type Lookups netpolicy.Lookups

// np is the lookups as the classifier takes them.
func (c *Lookups) np() *netpolicy.Lookups { return (*netpolicy.Lookups)(c) }

// Answer is the call's answer for name, for the guard's decisions
// (guard.Lookups).
func (c *Lookups) Answer(name string) ([]netip.Addr, bool, error) {
	a, ok := c.np().Get(name)
	return a.Addrs, ok, a.Err
}
