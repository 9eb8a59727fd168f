// Package config is what the root's options (options.go and the other
// With* functions) set, and their defaults: each With* documents and sets
// its field; New reads them.
package config

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/hybroute/hybroute/internal/browsertab"
	"github.com/hybroute/hybroute/internal/fleet"
	"github.com/hybroute/hybroute/internal/guard"
	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/state"
	"github.com/hybroute/hybroute/store"
)

// The defaults the root names (DefaultLookupConcurrency,
// DefaultMaxHostsPerCall, DefaultViewportWidth and DefaultViewportHeight).
const (
	LookupConcurrency = 16
	MaxHostsPerCall   = 4096
	ViewportWidth     = 1280
	ViewportHeight    = 720
)

// Config is everything the root's options set; Default has the defaults.
// New turns the routing part into the router's policy (internal/floor);
// each other part of the library reads the fields it owns.
type Config struct {
	// routing and the security rules (floor.go, internal/floor)
	AutoLocal      bool
	AllowPrivate   bool
	AllowSecrets   bool
	CloudWebRTC    bool // WithCloudWebRTC
	CDPURL         string
	AllowedHosts   []string             // WithAllowedHosts
	AllowListGiven bool                 // WithAllowedHosts ran, even with no pattern
	BlockedHosts   []string             // WithBlockedHosts
	Rules          *netpolicy.HostRules // both, parsed by New
	CDPClient      *http.Client         // dials the CDP override (WithCDPHTTPClient)
	Resolver       netpolicy.Resolver
	Logger         *slog.Logger
	AllowedSchemes []string

	// the name lookups of a call's plan (internal/floor)
	LookupConcurrency int
	MaxHostsPerCall   int

	// the local Chromium (internal/sidecar, session.go)
	ChromiumPath  string
	ChromiumFlags map[string]any
	ViewportW     int // every local tab's viewport; 0 leaves Chromium's own
	ViewportH     int
	ProfileDir    string // WithProfileDir (internal/profiles); "" keeps every local session off the record

	// the storage state every new browser session starts with (state_session.go)
	InitialState *state.State

	// the JavaScript dialogs of every tab (dialog.go), as the root's
	// DialogPolicy converts to it
	Dialogs browsertab.DialogPolicy

	// the in-browser guard (internal/guard): how long one paused request's
	// lookup may take before the request is refused
	GuardLookup time.Duration

	// connect-time egress check of the local browser (internal/egress)
	EgressDialer func(ctx context.Context, network, addr string) (net.Conn, error)

	// sessions (session.go, internal/cloud)
	IdleTimeout   time.Duration
	ReapInterval  time.Duration
	MaxBackoff    time.Duration
	CreateTimeout time.Duration
	LocalTimeout  time.Duration
	Fallback      bool

	// bounded sessions (internal/sessions); 0: no cap
	MaxSessions    int
	MaxLocalMemory int64

	// the fleet (cloud.go)
	Store               store.Store // nil: a MemoryStore of the router's own
	StoreTimeout        time.Duration
	ProviderConcurrency int           // 0: no cap
	SlotTTL             time.Duration // a concurrency lease's life without renewal

	// metrics and traces (internal/telemetry); nil: the global providers
	MeterProvider  metric.MeterProvider
	TracerProvider trace.TracerProvider
}

// Default is the configuration of a Router no option has touched.
func Default() Config {
	return Config{
		AutoLocal:         true,
		Resolver:          net.DefaultResolver,
		LookupConcurrency: LookupConcurrency,
		MaxHostsPerCall:   MaxHostsPerCall,
		IdleTimeout:       120 * time.Second,
		ReapInterval:      30 * time.Second,
		MaxBackoff:        5 * time.Minute,
		CreateTimeout:     60 * time.Second,
		LocalTimeout:      60 * time.Second,
		Fallback:          true,
		GuardLookup:       guard.LookupTimeout,
		ViewportW:         ViewportWidth,
		ViewportH:         ViewportHeight,
		StoreTimeout:      fleet.DefaultTimeout,
		SlotTTL:           fleet.DefaultTTL,
	}
}

// Finish completes c once the options ran: a nil resolver or logger is
// the default one, the host lists are parsed into Rules, and the initial
// state passes state.Parse's checks.
func (c *Config) Finish() error {
	if c.Resolver == nil {
		c.Resolver = net.DefaultResolver
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.AllowListGiven && len(c.AllowedHosts) == 0 {
		// An allow list with no pattern would be no list, which allows
		// every host: fail closed.
		return fmt.Errorf("%w: WithAllowedHosts has no pattern; leave the option out to allow every host", netpolicy.ErrHostRule)
	}
	rules, err := netpolicy.ParseHostRules(c.AllowedHosts, c.BlockedHosts)
	if err != nil {
		return err
	}
	c.Rules = rules
	if c.InitialState == nil {
		return nil
	}
	if err := c.InitialState.Check(); err != nil {
		return fmt.Errorf("hybroute: WithInitialState: %w", err)
	}
	return nil
}
