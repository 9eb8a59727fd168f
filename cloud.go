package hybroute

import (
	"context"
	"fmt"
	"time"

	"github.com/hybroute/hybroute/internal/browsertab"
	"github.com/hybroute/hybroute/internal/cdpconn"
	"github.com/hybroute/hybroute/internal/cloud"
	"github.com/hybroute/hybroute/internal/floor"
	"github.com/hybroute/hybroute/internal/guard"
	"github.com/hybroute/hybroute/internal/redact"
	"github.com/hybroute/hybroute/internal/remotetab"
	"github.com/hybroute/hybroute/internal/teardown"
	"github.com/hybroute/hybroute/provider"
	"github.com/hybroute/hybroute/route"
)

// Connecting to a remote browser: a cloud provider's session
// (internal/cloud, with the floor under a failing provider), or the CDP
// override.

// newCloud is how the router makes the cloud sessions of provider p, and
// the local floor under them (internal/cloud).
func (r *Router) newCloud(p provider.Provider) *cloud.Config[*entry] {
	return &cloud.Config[*entry]{
		Provider: p, Calls: r.calls, Health: r.health, Fleet: r.fleet, Tel: r.tel, Log: r.log,
		Life: r.life, Now: func() time.Time { return r.now() }, Fallback: r.cfg.Fallback, LocalTimeout: r.cfg.LocalTimeout,
		Guard: func() *guard.Guard { return floor.NewGuard(r.pol, r.log, route.Cloud) },
		Cloud: func(key string, t browsertab.Tab, s *provider.Session) *entry {
			return &entry{key: key, route: route.Cloud, h: browsertab.NewHandle(t), cloud: s}
		},
		Local: func(ctx context.Context, key string) (*entry, error) { return r.localEntry(ctx, key, route.Local) },
		FellBack: func(e *entry, account, label string) {
			e.fallback, e.fallbackAccount, e.fallbackLabel = true, account, label
		},
		Steps: func(e *entry) *teardown.Steps { return &e.ending },
		Ended: r.ended.Put,
		NoCDP: func(name string) error { return &noCDPError{provider: name} },
		Dead:  remoteDead, ErrFallbackFailed: ErrFallbackFailed, ErrClosed: ErrClosed,
	}
}

// overrideEntry is a session on the CDP override's browser: a new tab on it.
func (r *Router) overrideEntry(ctx context.Context, key string) (*entry, error) {
	ws, err := cdpconn.Resolve(ctx, r.cfg.CDPClient, r.cfg.CDPURL, nil)
	if err == nil {
		var t *remotetab.Tab
		browser := "the browser of the CDP override"
		if t, err = remotetab.Connect(ctx, remotetab.Config{URL: ws, HTTPClient: r.cfg.CDPClient, Browser: browser,
			Guard: floor.NewGuard(r.pol, r.log, route.Cloud), Died: remoteDead(browser)}); err == nil {
			e := &entry{key: key, route: route.Cloud, h: browsertab.NewHandle(t)}
			e.ending.Add(teardown.Tab, t.Close)
			return e, nil
		}
	}
	return nil, fmt.Errorf("hybroute: connecting to the CDP override %s: %w", redact.URL(r.cfg.CDPURL), err)
}
