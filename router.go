package hybroute

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hybroute/hybroute/internal/admission"
	"github.com/hybroute/hybroute/internal/browsertab"
	"github.com/hybroute/hybroute/internal/cloud"
	"github.com/hybroute/hybroute/internal/config"
	"github.com/hybroute/hybroute/internal/fleet"
	"github.com/hybroute/hybroute/internal/floor"
	"github.com/hybroute/hybroute/internal/health"
	"github.com/hybroute/hybroute/internal/outage"
	"github.com/hybroute/hybroute/internal/profiles"
	"github.com/hybroute/hybroute/internal/remotetab"
	"github.com/hybroute/hybroute/internal/routememory"
	"github.com/hybroute/hybroute/internal/sessions"
	sc "github.com/hybroute/hybroute/internal/sidecar"
	"github.com/hybroute/hybroute/internal/statesync"
	itel "github.com/hybroute/hybroute/internal/telemetry"
	"github.com/hybroute/hybroute/internal/urlscan"
	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/provider"
	"github.com/hybroute/hybroute/route"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// LocalSuffix is appended to a session key to name its local sidecar
// session, so the sidecar never shares a cache entry with the cloud route.
const LocalSuffix = "::local"

// settleTimeout bounds a call's wait for the load an earlier call left
// running: past it, the call runs on the page as it is.
const settleTimeout = 5 * time.Second

// DefaultSessionKey stands in for an empty session key.
const DefaultSessionKey = "default"

// Router routes browser calls. It is safe for concurrent use.
type Router struct {
	cfg      config.Config
	pol      *floor.Policy // what the options allow, asked by the plan, the guard, the landing check and the egress check
	provider provider.Provider
	calls    itel.Provider // provider, traced and counted: how the router calls it
	log      *slog.Logger

	side     *sc.Sidecar           // the local Chromium, with the queue of its tab openings
	cloud    *cloud.Config[*entry] // the provider's sessions and the floor under them; nil without a provider
	profiles *profiles.Store       // WithProfileDir: the cookie jars of local sessions; nil without it
	health   *health.Health
	tel      *itel.Router
	// fleet is the store, guarded, and the concurrency leases.
	fleet *fleet.Fleet
	now   func() time.Time // the fallback's clock; tests move it instead of sleeping

	// life ends at Close: work that outlives its caller (session
	// creation) runs under it.
	life    context.Context
	endLife context.CancelFunc

	mu     sync.Mutex
	routes routememory.Memory      // the last route each session key's calls took
	states statesync.Keeper        // each session key's storage state, once loaded (state_session.go)
	sess   *sessions.Cache[*entry] // guarded by mu, but for its own WaitGroup and singleflight
	owner  *sessions.Life[*entry]  // mu and the entries, as the cache asks of them
	closed bool

	room   admission.Room           // new sessions waiting for room under the caps
	bounds *sessions.Bounds[*entry] // the caps, kept (internal/sessions)

	ended sessions.Ended[*provider.Session] // each key's last ended cloud session, for Replay (cloud.go)
}

// New returns a [Router] for the cloud provider p. With p == nil there is no
// cloud: everything runs on the local Chromium. Close the Router when done
// with it: Close stops its background reaper and releases every session.
func New(p provider.Provider, opts ...Option) (*Router, error) {
	r := &Router{
		cfg:      config.Default(),
		provider: p,
		now:      time.Now,
		routes:   routememory.New(routememory.Max),
		sess:     sessions.New[*entry](),
	}
	for _, o := range opts {
		if o != nil {
			o(&r.cfg)
		}
	}
	err := r.cfg.Finish()
	if err != nil {
		return nil, err
	}
	r.log = r.cfg.Logger
	r.states.Initial = r.cfg.InitialState
	name := ""
	if p != nil {
		name = p.Name()
	}
	r.tel = newTelemetry(r.cfg.MeterProvider, r.cfg.TracerProvider, name)
	r.pol = newPolicy(&r.cfg, p != nil, r.tel)
	r.states.MayHold = r.pol.MayHold
	r.calls = itel.Provider{Provider: p, Metrics: r.tel.Metrics, Tracer: r.tel.Tracer, Log: r.log}
	r.fleet = newFleet(&r.cfg, name, r.log, r.tel)
	if p != nil {
		// The provider's back-off window, read from the fleet's store on
		// the router's clock, until the telemetry stops at Close.
		r.tel.ObserveWindow(r.fleet.Health().Window, r.now)
	}
	r.side = newSidecar(&r.cfg, r.pol, r.tel.QueuedAfter)
	r.bounds, r.owner = r.newBounds(), r.newOwner()
	if p != nil {
		r.health = r.newHealth(p)
	}
	r.life, r.endLife = context.WithCancel(context.Background())
	if p != nil {
		r.cloud = r.newCloud()
	}
	if r.pol.Override {
		if err := floor.CheckCDPURL(r.cfg.CDPURL); err != nil {
			return nil, err
		}
	}
	if r.cfg.ProfileDir != "" {
		if r.profiles, err = profiles.Open(r.cfg.ProfileDir, r.log); err != nil {
			return nil, err
		}
	}
	if p != nil && !r.pol.Override && r.fleet.Limit() > 0 {
		r.sess.WG.Go(func() { r.fleet.KeepLeases(r.life) })
	}
	return r, nil
}

// Warm starts the local Chromium now, ahead of the first call that needs
// it (a local route, or the floor under a failing provider), and reports a
// missing binary or a refused flag ([WithChromiumFlags]) at once. New never
// starts anything: it returns at once. ctx bounds the wait, not the start,
// which goes on for the first call.
func (r *Router) Warm(ctx context.Context) error {
	if r.isClosed() {
		return ErrClosed
	}
	if _, err := r.side.Browser(ctx); err != nil {
		return fmt.Errorf("hybroute: warming the local Chromium: %w", err)
	}
	return nil
}

// Plan is how one call runs.
type Plan struct {
	Route    route.Route
	CacheKey string              // sessionKey, or sessionKey+"::local" for the sidecar
	Verdicts []netpolicy.Verdict // one per URL literal and per URL a data: literal holds, in scan order

	lookups *floor.Lookups // the names the plan resolved, for the rest of the call
	nav     string         // the URL a navigation goes to; "" for any other call

	// prev is the route the session's page was on before this call, when
	// the session had one: a call on another route changes browsers.
	prev    route.Route
	hasPrev bool
	// openOnly: the call runs only on an open session (openOnly).
	openOnly bool
}

// Result is what one call did.
type Result struct {
	// Route is where it ran: route.Local for a fallback too, route.None
	// for a call no browser ran (refused by its plan, or no session could
	// be had).
	Route             route.Route
	CacheKey          string // the session it ran or would have run in: sessionKey, or sessionKey+"::local" on the local route
	FallbackFromCloud bool   // the cloud session failed and the call ran on local Chromium under sessionKey
	// FallbackReason says why a fallback is one: the provider's failure,
	// short and free of keys, e.g. "provider Browserbase: HTTP 429
	// RATE_LIMIT_EXCEEDED (retry after 17s)". An agent can tell its model.
	FallbackReason string
	LandedURL      string // the page URL after the call, re-checked

	// PageChanged: the call ran in another browser than the session's
	// page was in (a navigation chose another route, or a private URL
	// pulled the call local), so the page the session had is not the
	// one this call saw. PreviousCacheKey names the browser session the
	// page was in; that session and its page are left as they were.
	PageChanged      bool
	PreviousCacheKey string

	// Dialogs are the JavaScript dialogs the page opened during the call
	// (or since the last call), answered by the [DialogPolicy].
	Dialogs []Dialog

	// TabReplaced: the session's tab did not answer after the previous
	// call's deadline (a script in an endless loop, say), so this call
	// ran in a fresh tab in the same browser context: cookies and
	// storage are kept, the page is not (the new tab starts blank).
	TabReplaced bool

	// ContextRenewed: the session's browser context had run pages of
	// hosts this call's grant does not cover, and what they left there
	// (workers, other tabs) must not use it, so the call ran in a fresh
	// browser context: the cookies came along, the page, history and
	// storage did not.
	ContextRenewed bool

	// Evicted: the session's previous browser session was ended while
	// idle to stay within [WithMaxSessions] or [WithMaxLocalMemory], so
	// this call ran in a fresh one: its page, cookies and storage are gone.
	Evicted bool

	// WaitedForRoom is how long the call's new session waited for room
	// under [WithMaxSessions] or [WithMaxLocalMemory], every session being
	// in a call when it came: 0 when it did not wait.
	WaitedForRoom time.Duration

	// SentToBlank: the call was refused a page (by the guard, or by the
	// landing check, whose refused URL LandedURL then holds) and the tab
	// was sent to about:blank, where it is now.
	SentToBlank bool
}

// HybridRoutesLocally reports whether hybrid routing sends rawURL to the
// local sidecar instead of the cloud browser: a private URL, or one that
// carries a credential ([netpolicy.ReasonSecretInURL], unless
// [WithAllowSecretsInURLs]). It is false with no provider
// (everything is local, no hybrid routing is involved), with a CDP override,
// with auto-local off, and for any URL that is blocked.
//
// It is the predicate [Router.Plan] applies to each literal's verdict:
// navigate and exec calls are routed by it alike.
func (r *Router) HybridRoutesLocally(ctx context.Context, rawURL string) bool {
	return r.pol.RoutesLocally(r.verdict(ctx, rawURL))
}

// verdict decides on one URL literal: its class, the addresses the class
// was decided on, and, given the router's options, whether it is blocked.
// It never fails: an unparseable URL is ClassInvalid with Err set.
func (r *Router) verdict(ctx context.Context, rawURL string) netpolicy.Verdict {
	v := r.pol.Classify(ctx, rawURL)
	netpolicy.MarkLiteral(&v)
	v.Err = r.pol.RefuseLiteral(v)
	return v
}

// Plan scans code for URL literals, decides each once, and returns the
// route the call would take, without running it. With [Navigation] code
// is one URL and the plan is [Router.Navigate]'s: the URL is not scanned
// (a data: URL's document is, as the browser loads what it names), and a
// URL that loads from a network picks the browser.
//
// With a CDP override ([WithCDPURL]) every call is cloud, and with no
// provider every call is local. Otherwise one literal that must stay on
// this machine (a private address on a hybrid router, or a URL that
// carries a credential) takes the whole call to the sidecar
// ([Router.HybridRoutesLocally]); a navigation to any other URL that loads
// from a network goes to the cloud, and any other call runs where the
// session's page is: on the route its session took last, the cloud for a
// new session. A URL in a comment or a fetch does not move a session away
// from its page.
//
// A literal the rules refuse blocks the whole call: metadata always
// ([netpolicy.ErrMetadata]), a private address where private URLs are not
// allowed ([netpolicy.ErrPrivate]), and the other reasons of
// [netpolicy.Reason]. The error then joins every refusal, the most serious
// first, and the [Plan] still holds the verdicts and the route the call
// would have taken, so the caller can see which URL failed.
//
// Each distinct host name is resolved once, and every literal of that name
// is decided on that one answer; names are resolved concurrently, at most
// [WithLookupConcurrency] at a time. When ctx ends before the lookups do,
// Plan fails with ctx's error and sets no route (the verdicts it returns
// are not to be trusted). A call that names more host names than
// [WithMaxHostsPerCall] fails with [netpolicy.ErrTooManyHosts] before any lookup,
// with an empty Plan.
//
// Plan is a dry run: it remembers nothing. Only a call that ran sets the
// session's route.
func (r *Router) Plan(ctx context.Context, sessionKey, code string, opts ...CallOption) (Plan, error) {
	return r.planCall(ctx, sessionKey, code, settingsOf(opts))
}

// planCall plans code as the settings say: a navigation's one URL, or the
// literals scanned from a script.
func (r *Router) planCall(ctx context.Context, sessionKey, code string, s callSettings) (Plan, error) {
	if s.navigation {
		p, err := r.plan(ctx, sessionKey, []string{code}, true)
		p.nav, p.openOnly = code, s.open
		return p, err
	}
	p, err := r.plan(ctx, sessionKey, ScanURLs(code), false)
	p.openOnly = s.open
	return p, err
}

// plan decides a call on urls. navigates says the call is a navigation to
// its one URL, which picks the browser; any other call runs where the
// session's page is unless a private URL pulls it local.
func (r *Router) plan(ctx context.Context, sessionKey string, urls []string, navigates bool) (Plan, error) {
	urls = urlscan.ExpandData(urls) // a data: document loads what it names
	key, err := normalizeKey(sessionKey)
	if err != nil {
		return Plan{}, err
	}
	if err := ctx.Err(); err != nil {
		return Plan{}, fmt.Errorf("hybroute: plan: %w", err)
	}
	if r.isClosed() {
		return Plan{}, ErrClosed
	}
	p := Plan{Verdicts: make([]netpolicy.Verdict, len(urls))}
	look, errs, err := r.pol.DecideAll(ctx, urls, p.Verdicts)
	if errors.Is(err, netpolicy.ErrTooManyHosts) {
		return Plan{}, fmt.Errorf("hybroute: plan: %w", err)
	}
	if err != nil {
		// A cancelled lookup leaves a verdict we cannot trust.
		return p, fmt.Errorf("hybroute: plan: %w", err)
	}
	p.lookups = look
	p.prev, p.hasPrev = r.lastRoute(key)
	p.Route = r.pol.Route(p.Verdicts, p.prev, p.hasPrev, navigates)
	p.CacheKey = r.pol.CacheKey(key, p.Route)
	if len(errs) > 0 {
		r.tel.CountPlan(ctx, int(p.Route), p.Verdicts, itel.LeadingReason(errs))
		return p, floor.JoinRefusals(errs)
	}
	r.tel.CountPlan(ctx, int(p.Route), p.Verdicts, 0)
	itel.LogPlan(ctx, r.log, key, p.Route, p.CacheKey, len(p.Verdicts))
	return p, nil
}

// lastRoute is the route the session key took last, if it is remembered.
func (r *Router) lastRoute(key string) (route.Route, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.routes.Get(key)
}

func normalizeKey(k string) (string, error) {
	if k == "" {
		return DefaultSessionKey, nil
	}
	if strings.HasSuffix(k, LocalSuffix) {
		return "", fmt.Errorf("%w: %q ends in %q, which names a sidecar session", ErrInvalidSessionKey, k, LocalSuffix)
	}
	return k, nil
}

// remember sets the route of the session key's last call.
func (r *Router) remember(key string, route route.Route) {
	now := time.Now().UnixNano()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.startReaper()
	r.routes.Put(key, route, now)
}

// Close releases every session (cloud sessions through the provider, local
// ones with their browser contexts), stops the local Chromium and waits for
// it: no goroutine and no Chromium process outlives Close. Calls after Close
// fail with [ErrClosed]. Close is idempotent.
func (r *Router) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.routes.Clear()
	r.mu.Unlock()
	defer r.tel.Stop()
	err := r.closeSessions()
	if r.profiles != nil {
		err = errors.Join(err, r.profiles.Close())
	}
	return err
}

// Exec runs one browser call. It plans the call from the URL literals in
// code ([Router.Plan]), takes the session of the plan's cache key
// (creating it, or falling back to local Chromium when the cloud cannot
// give one), and calls run with a chromedp context bound to that session's
// tab and the call's [Call] handle. After run it reads the URL the tab
// landed on and re-checks it with the same verdict rules: a landing on
// metadata from any route, or on a private address from a remote browser,
// is reported as blocked and the tab is sent to about:blank.
//
// run must leave the browser's Fetch domain and its auto-attach settings
// alone: the router's guard lives there. Navigation commands run sends to
// a browser page (chrome://, devtools://, …) are refused before they reach
// the browser, and fail the call. LandedURL is where the main frame was
// when run returned; a navigation run started but did not wait for is
// checked by the guard as it happens and by the next call's landing check.
// A nil run runs nothing: the call takes its session and checks its page.
//
// On a session without CDP (a Camofox session, restpage.go) ctx is not a
// chromedp context: run drives the page through [Call.REST] when the call
// is made with [DrivesREST], and does not run otherwise (Exec fails with
// [ErrNoCDPEndpoint] and its no-CDP message, unless the fallback took the
// call).
func (r *Router) Exec(ctx context.Context, sessionKey, code string, run func(ctx context.Context, c *Call) error, opts ...CallOption) (res Result, err error) {
	s := settingsOf(opts)
	name := "hybroute.exec"
	if s.navigation {
		name = "hybroute.navigate"
	}
	ctx, span := r.tel.StartCall(ctx, name, sessionKey)
	defer func() { r.tel.EndCall(span, res.Route, res.CacheKey, res.FallbackFromCloud, err) }()
	pctx, pspan := r.tel.Tracer.Start(ctx, "hybroute.plan")
	p, err := r.planCall(pctx, sessionKey, code, s)
	r.tel.EndPlan(pspan, p.Route, p.Verdicts, err)
	if err != nil {
		return Result{CacheKey: p.CacheKey}, err
	}
	return r.execPlan(admission.OnContext(ctx, s.run, s.wait), p, run, s.rest)
}

// Navigate opens rawURL in the session's tab. Navigation picks the
// browser: the URL is the call's only literal (it is not scanned, it is
// the literal), decided by the same verdict and predicate as
// [Router.Exec], and a public URL takes the session to the cloud browser
// even when its page was local. With a nil run the tab navigates to
// rawURL (through the server's REST API on a session without CDP); a run
// of the caller's own is expected to navigate to rawURL itself (after
// setting up the tab, say), and runs as Exec's does. The guard and the
// landed-URL check hold for whatever run does.
func (r *Router) Navigate(ctx context.Context, sessionKey, rawURL string, run func(ctx context.Context, c *Call) error, opts ...CallOption) (Result, error) {
	nilRun := run == nil
	if nilRun {
		run = func(ctx context.Context, c *Call) error {
			if page := c.REST(); page != nil {
				_, err := page.Navigate(ctx, rawURL)
				return err
			}
			return chromedp.Do(ctx, chromedp.Navigate(rawURL))
		}
	}
	// A new slice: the caller's opts keep their backing array to themselves.
	all := make([]CallOption, 0, len(opts)+2)
	all = append(all, opts...)
	if nilRun {
		all = append(all, DrivesREST())
	}
	return r.Exec(ctx, sessionKey, rawURL, run, append(all, Navigation())...)
}

// execPlan runs a planned call on its session. rest says run can drive a
// session without CDP (restpage.go); a run that cannot fails on one with
// ErrNoCDPEndpoint.
func (r *Router) execPlan(ctx context.Context, p Plan, run func(context.Context, *Call) error, rest bool) (res Result, err error) {
	if run == nil {
		run = func(context.Context, *Call) error { return nil }
	}
	res = Result{CacheKey: p.CacheKey} // no Route until a browser runs it
	if p.hasPrev && p.prev != p.Route {
		res.PageChanged = true
		res.PreviousCacheKey = r.pol.CacheKey(strings.TrimSuffix(p.CacheKey, LocalSuffix), p.prev)
	}
	actx, aspan := r.tel.Tracer.Start(ctx, "hybroute.session.acquire",
		trace.WithAttributes(attribute.String("hybroute.cache_key", p.CacheKey)))
	since := r.sess.Releases()
	e, err := r.acquire(actx, p)
	r.endAcquire(aspan, e, err)
	if err != nil {
		return res, fmt.Errorf("hybroute: session %q: %w", p.CacheKey, r.releasedUnder(ctx, p.CacheKey, since, err))
	}
	held := time.Now()
	defer func() { e.touch(); r.room.Held(time.Since(held)); r.letGo(e) }()
	caller := ctx // ctx becomes the run's below, which ends before this defer runs
	defer func() {
		// A session ended under the call fails it wherever it was (moving
		// to a fresh browser context, replacing a tab, the run): that is
		// what the caller hears, not the browser's word for the context
		// or target the release closed.
		if err != nil && e.released.Load() && caller.Err() == nil && !errors.Is(err, ErrReleased) {
			err = fmt.Errorf("%w: %w", ErrReleased, err)
		}
		if err != nil {
			err = r.releasedUnder(caller, p.CacheKey, since, err)
		}
	}()
	if d := admission.RunTimeout(ctx); d > 0 {
		// The run's own budget starts now that the session is here: the
		// wait for it was the queue's part (RunTimeout).
		var cancelRun context.CancelFunc
		ctx, cancelRun = context.WithTimeout(ctx, d)
		defer cancelRun()
	}
	// The call runs: its route is the session's route now. The plan's
	// route is remembered, not the fallback's: a fallback stands in for
	// the cloud session, under its key.
	r.remember(strings.TrimSuffix(p.CacheKey, LocalSuffix), p.Route)
	// A fallback runs on local Chromium, in the cloud session's place: the
	// cache key stays the cloud key, the route says where it ran.
	res.Route, res.FallbackFromCloud, res.FallbackReason = e.route, e.fallback, e.fallbackAccount
	res.Evicted = r.takeEvicted(p.CacheKey)
	res.WaitedForRoom = time.Duration(e.roomWaited.Swap(0))

	e.callMu.Lock()
	defer e.callMu.Unlock()
	if res.PageChanged {
		if err := r.followState(ctx, e, res.PreviousCacheKey); err != nil {
			return res, err
		}
	}
	// The guard and the landed-URL check decide on the plan's answers.
	defer e.guard.Begin(&e.gs, p.lookups)()

	defer func() { res.Dialogs = takeDialogs(e.h) }() // however the call ends, before the next one starts
	if t, ok := e.h.Tab().(*remotetab.RESTTab); ok {
		return r.execREST(ctx, p, e, t, res, run, rest)
	}
	if res.TabReplaced, err = r.recoverTab(ctx, e); err != nil {
		return res, fmt.Errorf("hybroute: call on %s session %q: %w", p.Route, p.CacheKey, err)
	}
	if d, ok := e.h.Held.Pending(); ok {
		return res, fmt.Errorf("hybroute: call on %s session %q: %w: %s %q waits for an answer", e.route, p.CacheKey, ErrDialogOpen, d.Type, d.Message)
	}
	endGrant, renewed, err := r.grantCall(ctx, e, p.Verdicts) // the private hosts this call named, and no others
	res.ContextRenewed = renewed
	if err != nil {
		return res, fmt.Errorf("hybroute: call on %s session %q: %w", e.route, p.CacheKey, err)
	}
	defer endGrant()
	if e.bg != nil {
		// A navigation of an earlier call may still be loading (a failed
		// load's error page commits after the call returned): the run
		// starts on a still page (guard.Guard.Settle).
		e.bg.Settle(ctx, e.frontID(), settleTimeout)
	}
	e.guard.Reset()
	rctx, rspan := r.tel.Tracer.Start(ctx, "hybroute.run",
		trace.WithAttributes(attribute.String("hybroute.route", res.Route.String())))
	defer rspan.End()
	cctx, cancel := e.h.Bind(rctx)
	defer cancel()
	cctx, stopHold := e.h.Held.Interrupts(cctx, r.cfg.Dialogs.Hold, ErrDialogOpen)
	defer stopHold()
	started := time.Now()
	front := e.h.Context()
	runErr := run(cctx, &Call{r: r, e: e, caller: rctx})
	if e.h.Context() != front {
		// The run opened a tab (OpenTab): what follows checks that one.
		var cancelFront context.CancelFunc
		cctx, cancelFront = e.h.Bind(rctx)
		defer cancelFront()
	}
	if lt, ok := e.h.Tab().(*sc.Tab); ok {
		lt.Settled() // the sidecar's next spare is made now, not during this call
	}
	r.tel.Ran(ctx, res.Route.String(), started)
	if runErr != nil {
		rspan.SetStatus(codes.Error, r.tel.ErrorKind(runErr))
	}
	callerErr := ctx.Err() // browsertab.Bind: set whenever the caller ended the call
	runErr = e.h.AfterRun(runErr, callerErr, func(d browsertab.Dialog) error {
		return fmt.Errorf("%w: %s %q opened during the call", ErrDialogOpen, d.Type, d.Message)
	})
	if gerr := e.guard.Err(); gerr != nil {
		// The page tried to go where the policy does not let it: that is
		// the call's outcome, whatever run made of the refused load. The
		// tab leaves the error page for a clean one, as after a landing.
		res.SentToBlank, gerr = browsertab.ToBlank(cctx, gerr)
		return res, fmt.Errorf("hybroute: call on %s session %q was refused a page: %w", e.route, p.CacheKey, errors.Join(gerr, runErr))
	}
	if err := runErr; err != nil {
		if callerErr == nil && errors.Is(err, chromedp.ErrPageLoad) {
			// A page that did not load: why, where the browser says
			// only a network error.
			err = e.loadCause(err, p.nav, started)
			if e.bg != nil && cctx.Err() == nil {
				if _, seen := e.bg.Landed(e.frontID()); !seen {
					// The tab's first load failed: it is sent to
					// about:blank, a committed page, rather than
					// left to its error page's commit, which the
					// next call could meet half done.
					_, _ = browsertab.ToBlank(cctx, nil)
				}
			}
		}
		if e.released.Load() && callerErr == nil {
			// The session was ended under the call: that, not the
			// context the release cancelled, is what the caller hears.
			err = fmt.Errorf("%w: %w", ErrReleased, err)
		} else {
			err = e.h.WrapErr(err)
		}
		if callerErr != nil && !errors.Is(err, callerErr) {
			err = fmt.Errorf("%w (%w)", err, callerErr)
		}
		err = fmt.Errorf("hybroute: call on %s session %q: %w", e.route, p.CacheKey, err)
		// A failed run can still leave the tab somewhere it must not stay.
		if cctx.Err() == nil && !e.h.Dead() {
			if landed, blanked, lerr := r.checkLanding(ctx, cctx, e); lerr != nil {
				res.LandedURL, res.SentToBlank = landed, blanked
				err = errors.Join(err, lerr)
			}
		}
		return res, err
	}
	res.LandedURL, res.SentToBlank, err = r.checkLanding(ctx, cctx, e)
	return res, err
}

// checkLanding re-checks every page of the session where the call left
// it: the front tab and the popups its pages opened (internal/floor).
func (r *Router) checkLanding(ctx, tabCtx context.Context, e *entry) (string, bool, error) {
	landed := e.landedURL()
	blanked, err := r.pol.CheckLanding(ctx, tabCtx, landed, e.route, &e.guard, e.bg, &e.gs)
	return landed, blanked, err
}

// ScanURLs returns the URL literals in code, in order of first appearance,
// deduplicated: the URLs Plan and Exec decide on. code may be in any
// language an agent writes (JavaScript, TypeScript, Python, Go, shell,
// JSON, HTML); the scan knows none of them and looks only at what surrounds
// each ':' and each "//", and at the '\' and '&' that may spell one.
//
// It reports URLs of the schemes http, https, ws, wss, ftp, file, chrome,
// chrome-untrusted, devtools and view-source, and data: URLs; bare
// host:port tokens and scheme-relative "//host" URLs, as http, where they
// may name a local host. Each is normalised the way Chromium reads it: the
// scheme lower-cased, its slashes folded to "//", string escapes, HTML
// character references and the tabs and newlines Chromium strips decoded
// (in the scheme name too), a template placeholder ending the URL, trailing
// punctuation dropped. A URL whose host is a placeholder has no literal
// host and is not reported. Where the source can be read more than one way,
// every reading is reported, so that the call fails closed.
//
// Plan reads the documents of the data: URLs as well: the URLs they name
// get verdicts of their own.
//
// Results are substrings of code wherever no normalisation was needed. It
// returns nil when code holds no URL.
func ScanURLs(code string) []string { return urlscan.Scan(code) }

// releasedUnder is err as the caller hears it when the call's session key
// was released after since, while the call ran: the release is the cause,
// whichever session the call was on by then (a new one it was making, a
// browser context the release closed under it).
func (r *Router) releasedUnder(ctx context.Context, cacheKey string, since uint64, err error) error {
	if ctx.Err() != nil || errors.Is(err, ErrReleased) || r.sess.Releases() == since {
		return err
	}
	r.mu.Lock()
	cut := r.sess.ReleasedSince(cacheKey, since)
	r.mu.Unlock()
	if cut {
		return fmt.Errorf("%w: %w", ErrReleased, err)
	}
	return err
}

// Metrics and traces are internal/telemetry's: the instruments, the bounded
// names they count under and the spans of a call. The router hands it the
// names of its own errors.

// newTelemetry makes the instruments and the tracer on the providers the
// options chose, the global ones by default.
func newTelemetry(mp metric.MeterProvider, tp trace.TracerProvider, provider string) *itel.Router {
	return itel.NewRouter(itel.RouterConfig{Meters: mp, Tracers: tp, Provider: provider, Busy: ErrBusy,
		Kinds: []itel.Named{
			{Err: ErrClosed, Name: "closed"},
			{Err: ErrInvalidSessionKey, Name: "invalid_session_key"},
			{Err: ErrFallbackFailed, Name: "fallback_failed"},
			{Err: ErrNoCDPEndpoint, Name: "no_cdp_endpoint"},
			{Err: ErrBrowserDead, Name: "browser_dead"},
			{Err: ErrNoChromium, Name: "no_chromium"},
		},
		Fallbacks: []itel.Named{
			{Err: cloud.ErrConcurrencyLimit, Name: itel.FallbackConcurrency},
			{Err: ErrUnsupportedBrowser, Name: itel.FallbackUnsupportedBrowser},
			{Err: cloud.ErrConnecting, Name: itel.FallbackConnectFailed},
			{Err: outage.ErrProviderFellBack, Name: itel.FallbackProviderFellBack},
		}})
}

// endAcquire records the session a call got (e, nil for none) on its span,
// and ends it.
func (r *Router) endAcquire(span trace.Span, e *entry, err error) {
	var got *itel.Acquired
	if e != nil {
		got = &itel.Acquired{Route: e.route, Fallback: e.fallback, Reason: e.fallbackLabel}
	}
	r.tel.EndAcquire(span, got, err)
}
