// Package hybroute decides, for every browser call, which browser runs it.
package hybroute

// Route is where a call runs.
type Route int

const (
	// RouteCloud is the configured cloud browser (or a CDP override).
	RouteCloud Route = iota
	// RouteLocal is the local Chromium sidecar.
	RouteLocal
)
