// Package hybroute decides, for every browser call, which browser runs it.
package hybroute

import (
	"context"
	"log/slog"
	"net/netip"
	"time"
)

// Route is where a call runs.
type Route int

const (
	// RouteCloud is the configured cloud browser (or a CDP override).
	RouteCloud Route = iota
	// RouteLocal is the local Chromium sidecar.
	RouteLocal
)

// Resolver looks up the addresses of a name. *net.Resolver satisfies it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Option configures a Router.
type Option func(*config)

// config is everything the options set. Each part of the library reads the
// fields it owns; New fills the defaults.
type config struct {
	autoLocal    bool
	allowPrivate bool
	cdpURL       string
	resolver     Resolver
	logger       *slog.Logger

	// sidecar (sidecar.go)
	chromiumPath  string
	chromiumFlags map[string]any

	// sessions (session.go, fallback.go)
	idleTimeout  time.Duration
	reapInterval time.Duration
	maxBackoff   time.Duration
}
