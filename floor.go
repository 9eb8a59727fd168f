package hybroute

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute/internal/config"
	"github.com/hybroute/hybroute/internal/egress"
	"github.com/hybroute/hybroute/internal/floor"
	"github.com/hybroute/hybroute/internal/guard"
	"github.com/hybroute/hybroute/internal/remotetab"
	sc "github.com/hybroute/hybroute/internal/sidecar"
	"github.com/hybroute/hybroute/internal/statesync"
	itel "github.com/hybroute/hybroute/internal/telemetry"
	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/route"
)

// The guard (internal/guard) pauses what the pages of a browser ask for
// and asks internal/floor about each URL: the same verdict and policy as
// the plan. The guard knows a session as a guard.Session (entry.gs) and a
// call as a guard.Scope, which the call hands it (entry.guard); it holds
// nothing of the router's.

// enableGuard makes the browser's guard watch the entry's tab, which
// also keeps where its main frame is (landedURL). It returns what the sessions'
// WaitGroup runs until the tab closes: the guard then forgets the entry.
func (r *Router) enableGuard(e *entry) (func(), error) {
	if _, ok := e.h.Tab().(*remotetab.RESTTab); ok {
		// No CDP, no guard in that browser: its landing is what its
		// REST answers report (restpage.go).
		return func() {}, nil
	}
	tabCtx := e.h.Context()
	var g *guard.Guard
	switch t := e.h.Tab().(type) {
	case *remotetab.Tab:
		g = t.Guard()
	case *sc.Tab:
		g = t.Proc().Guard()
	}
	if g == nil {
		return nil, errors.New("hybroute: the tab's browser has no guard")
	}
	watch, err := g.Watch(&e.gs, e.key, tabCtx, e.h.Tab().BrowserContextID())
	if err == nil {
		e.bg = g
	}
	return watch, err
}

// newPolicy is the policy of cfg (internal/floor), for a router with a
// provider or without: the one value the plan, the guard, the landed-URL
// check and the egress check ask. tel counts the refusals of the guard and
// the egress check; nil in tests without a router.
func newPolicy(cfg *config.Config, hasProvider bool, tel *itel.Router) *floor.Policy {
	return floor.New(floor.Config{
		Resolver: cfg.Resolver, AllowedSchemes: cfg.AllowedSchemes, Hosts: cfg.Rules,
		CDPOverride: cfg.CDPURL != "", HasProvider: hasProvider, AutoLocal: cfg.AutoLocal,
		AllowPrivate: cfg.AllowPrivate, AllowSecrets: cfg.AllowSecrets, CloudWebRTC: cfg.CloudWebRTC, LocalSuffix: LocalSuffix,
		MaxHostsPerCall: cfg.MaxHostsPerCall, LookupConcurrency: cfg.LookupConcurrency,
		GuardLookup: cfg.GuardLookup, WSRules: floor.BlockedWebSockets(cfg.Rules),
		Refused: tel.Refused, Unsupported: unsupportedBrowser,
	})
}

// unsupportedBrowser is the error of a browser the guard cannot cover on w.
func unsupportedBrowser(browser, lacks string, w route.Route) error {
	where := "local"
	if w != route.Local {
		where = "cloud"
	}
	return &UnsupportedBrowserError{Browser: browser, Lacks: lacks, Route: where}
}

// renewForGrant moves a session on the local browser to a fresh browser
// context when its call's grant was refused (floor.ErrNotClean): its
// context ran a document of a host the grant does not cover
// (egress.Door.SetClean). Whatever such a document left there (a service
// worker, a shared worker, another tab, a frame, a page in the
// back-forward cache) would use the grant; disposing of the context ends
// it all. The session's cookies follow it (and its profile, if it has
// one); its other pages, history, storage and workers do not.
// A session it could not move fails the call (its old context keeps no
// grant), so no grant is ever given to a context that is not clean for it.
func (r *Router) renewForGrant(ctx context.Context, e *entry, lt *sc.Tab) error {
	started := time.Now()
	retire, err := r.side.Renew(ctx, lt, func(ctx context.Context, from, to cdp.BrowserContextID) error {
		return r.carryToFresh(ctx, e, lt, from, to)
	})
	if err != nil {
		return fmt.Errorf("hybroute: moving the session to a fresh browser context before its grant: %w", e.h.WrapErr(err))
	}
	// The session's other pages were in the old context, and go with it.
	e.h.Pages.StopAll()
	if err := r.arm(e, "the session's fresh browser context", retire); err != nil {
		return err
	}
	if err := statesync.TrackOrigins(e.h.Context(), e.h); err != nil {
		r.drop(e)
		return fmt.Errorf("hybroute: moving the session to a fresh browser context before its grant: %w", e.h.WrapErr(err))
	}
	r.log.LogAttrs(ctx, slog.LevelInfo, "hybroute: the session moved to a fresh browser context: its old one ran documents of hosts its grant does not cover",
		slog.String("cache_key", e.key), slog.Duration("took", time.Since(started)))
	return nil
}

// carryToFresh copies the cookies of the session's browser context from
// to the fresh one to, and moves its profile there, before the old one is
// disposed of.
func (r *Router) carryToFresh(ctx context.Context, e *entry, lt *sc.Tab, from, to cdp.BrowserContextID) error {
	refused, err := statesync.CopyCookies(ctx, e.h, from, to)
	if err != nil {
		return err
	}
	if len(refused) > 0 {
		r.log.LogAttrs(ctx, slog.LevelWarn, "hybroute: cookies the fresh browser context refused", slog.String("cache_key", e.key), slog.Any("cookies", refused))
	}
	return r.profiles.Move(ctx, lt.Proc(), from, to, e.key)
}

// grantCall gives a session on the local browser the grant its call earns
// (floor.GrantCall), through the door of its browser context; a context
// that is not clean for it is replaced by a fresh one first
// (renewForGrant). A tab of any other browser has no door, and its call
// no grant.
func (r *Router) grantCall(ctx context.Context, e *entry, vs []netpolicy.Verdict) (done func(), renewed bool, err error) {
	lt, ok := e.h.Tab().(*sc.Tab)
	if !ok || lt.Door() == nil {
		return func() {}, false, nil
	}
	done, err = floor.GrantCall(lt.Door(), vs, e.landedURL)
	if !errors.Is(err, floor.ErrNotClean) {
		return done, false, err
	}
	if err := r.renewForGrant(ctx, e, lt); err != nil {
		return nil, false, err
	}
	done, err = floor.GrantCall(lt.Door(), vs, e.landedURL)
	return done, true, err
}

// door is the egress door of the entry's browser context; nil on any
// browser but the local one.
func (e *entry) door() *egress.Door {
	if lt, ok := e.h.Tab().(*sc.Tab); ok {
		return lt.Door()
	}
	return nil
}

// networkCause is why rawURL did not load at or after since, as far as the
// router knows more than the browser's text errText says (egress.CauseOf).
// nil when nothing more is known.
func (e *entry) networkCause(rawURL, errText string, since time.Time) *NetworkError {
	c, ok := egress.CauseOf(e.door(), rawURL, errText, since)
	if !ok {
		return nil
	}
	return causeError(c)
}

// causeError is the *NetworkError of a cause.
func causeError(c egress.Cause) *NetworkError {
	ne := &NetworkError{URL: c.URL, Host: c.Host, Addr: c.Addr}
	switch c.Kind {
	case egress.Refused:
		ne.Err, ne.By = c.Err, "egress"
	case egress.Unresolved:
		ne.Err = ErrNameNotResolved
	default:
		ne.Err = fmt.Errorf("%w: %w", ErrUnreachable, c.Err)
	}
	return ne
}

// loadCause puts the cause of a page that did not load (egress.LoadCause)
// in front of the browser's error (a *chromedp.LoadError in err); err is
// returned as it is when nothing more is known.
func (e *entry) loadCause(err error, navURL string, since time.Time) error {
	var le *chromedp.LoadError
	if !errors.As(err, &le) {
		return err
	}
	c, ok := egress.LoadCause(e.door(), navURL, le.ErrorText, since)
	if !ok {
		return err
	}
	ne := causeError(c)
	ne.Browser = err
	return ne
}

// egressRefusals are the door's refusals at or after since, as the
// session's refusals list them: no request, the host:port connected to.
func (e *entry) egressRefusals(since time.Time) []Refusal {
	var out []Refusal
	for _, f := range e.door().Failures(since) {
		if f.Kind == egress.Refused {
			out = append(out, Refusal{At: f.At, URL: f.HostPort, Target: "connection", Err: f.Err})
		}
	}
	return out
}
