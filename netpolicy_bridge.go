package hybroute

import (
	"net/netip"

	"github.com/hybroute/hybroute/netpolicy"
)

// The network policy is package netpolicy; these are the names the rest
// of the root package reaches it by.

// blocked is the refusal of v for reason.
func blocked(v Verdict, reason Reason, detail error) *BlockedError {
	return netpolicy.Block(v, reason, detail)
}

// invalid makes v a ClassInvalid verdict, refused for reason.
func invalid(v Verdict, reason Reason, detail error) Verdict {
	v.Class = ClassInvalid
	v.Err = blocked(v, reason, detail)
	return v
}

// reasonOf is the reason of a refusal, for a log attribute.
func reasonOf(err error) string { return netpolicy.ReasonOf(err) }

// resolved finishes a verdict of classifyParsed with the resolver's answer
// for its name.
func resolved(v Verdict, addrs []netip.Addr, err error) Verdict {
	return netpolicy.Resolved(v, addrs, err)
}

// markCredential sets v.Credential for a URL literal that loads from a
// network.
func markCredential(v *Verdict) { netpolicy.MarkLiteral(v) }

// classifyName decides the names that are decided without DNS: the metadata
// names and localhost.
func classifyName(host string) (Class, bool) { return netpolicy.ClassifyName(host) }

// isNoRouteAbout accepts about:blank and about:srcdoc.
func isNoRouteAbout(raw string) bool { return netpolicy.IsNoRouteAbout(raw) }

// privateUseSuffix reports names under suffixes reserved for private use.
func privateUseSuffix(host string) bool { return netpolicy.PrivateUseName(host) }

var errNoAnswers = netpolicy.ErrNoAnswers

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
