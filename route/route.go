// Package route names the two browsers a call can run on: a cloud browser
// (a provider's session or a CDP override) and the local Chromium.
//
// It is the one location type of the module. The router's plan and
// results, the network policy's allow/refuse rule and the request guard
// all speak of a browser with it, so "where" never has two spellings that
// could disagree.
package route

import "strconv"

// Route is where a call runs: the browser that opens its URLs.
//
// The zero value is None: no browser, the route of a call that never ran
// (refused before it reached one, or a bad argument). A result never
// claims a browser that did not run it. The network policy holds None to
// the strictest rules, the cloud's (no private address, no credential in a
// URL unless allowed), never to the local browser's: whatever is not
// Local is remote to it.
type Route int

const (
	// None is no browser: the zero value, for a call that never ran.
	None Route = iota
	// Cloud is a browser elsewhere: a cloud provider's session or a CDP
	// override. Nothing but the request guard stands between its pages
	// and where they go, and it cannot reach this machine's network.
	Cloud Route = iota
	// Local is the local Chromium sidecar on this machine, whose
	// connections the egress check sees too.
	Local
)

// String returns the name used in logs, metrics and errors: "cloud",
// "local", or "none" for the zero value.
func (r Route) String() string {
	switch r {
	case None:
		return "none"
	case Cloud:
		return "cloud"
	case Local:
		return "local"
	}
	return "Route(" + strconv.Itoa(int(r)) + ")"
}
