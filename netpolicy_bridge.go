package hybroute

import "github.com/hybroute/hybroute/netpolicy"

// The network policy is package netpolicy; these are the names the rest
// of the root package reaches it by.

// invalid makes v a ClassInvalid verdict, refused for reason.
func invalid(v netpolicy.Verdict, reason netpolicy.Reason, detail error) netpolicy.Verdict {
	v.Class = netpolicy.ClassInvalid
	v.Err = netpolicy.Block(v, reason, detail)
	return v
}
