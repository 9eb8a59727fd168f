package hybroute

import "github.com/hybroute/hybroute/netpolicy"

// The network policy is package netpolicy; these are the names the rest
// of the root package reaches it by.

// invalid makes v a ClassInvalid verdict, refused for reason.
func invalid(v Verdict, reason Reason, detail error) Verdict {
	v.Class = ClassInvalid
	v.Err = netpolicy.Block(v, reason, detail)
	return v
}

// classNames are the classes' names by class, and reasons index the
// reasons (0 is none), for the metric attributes telemetry makes ahead of
// time. TestBridgeTablesCoverEveryName holds them to netpolicy's.
var (
	classNames = [...]string{
		ClassPublic:   ClassPublic.String(),
		ClassPrivate:  ClassPrivate.String(),
		ClassMetadata: ClassMetadata.String(),
		ClassInvalid:  ClassInvalid.String(),
		ClassNoRoute:  ClassNoRoute.String(),
	}
	reasons [ReasonPrivateNotNamed + 1]struct{}
)
