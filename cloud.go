package hybroute

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute/internal/browsertab"
	"github.com/hybroute/hybroute/internal/cdpconn"
	"github.com/hybroute/hybroute/internal/cdpmux"
	"github.com/hybroute/hybroute/internal/health"
	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/provider"
	"github.com/hybroute/hybroute/route"
)

// Connecting to a remote browser: a cloud provider's session, or the CDP
// override. A provider that fails is fallback.go's.

// cloudEntry makes a cloud session for key, or the local floor when the
// provider cannot give one (fallback.go). It never caches a failed cloud
// session: either it returns a working entry (cloud or fallback) or nothing
// at all. internal/health decides whether it asks the provider at all: not while
// a window is open, and only one creation (the probe) while the provider's
// health is unknown. A creation the provider may serve then takes one of
// the fleet's concurrency slots ([WithProviderConcurrency]), held for the
// session's life.
func (r *Router) cloudEntry(ctx context.Context, key string, budget time.Duration) (*entry, error) {
	adm, reason := r.health.Admit(ctx, budget)
	switch adm {
	case health.Local:
		// The provider asked us to stay away: no API call, no log line.
		return r.fallbackEntry(ctx, key, reason, r.health.Last(), nil, fallbackBackoffWindow)
	case health.Refused:
		// The provider refused the key or the payment lately: no API
		// call, and the fallback says so, not "back-off window".
		return r.fallbackEntry(ctx, key, reason, r.health.Last(), nil, "")
	}
	slot, ok := r.fleet.AcquireSlot(ctx)
	if !ok {
		if adm == health.Probe {
			// No question was asked: the waiters look again, and one of
			// them probes.
			r.health.ProbeDone()
		}
		return r.fallbackEntry(ctx, key, errConcurrencyLimit.Error(), nil, nil, fallbackConcurrency)
	}
	e, err := r.cloudSession(ctx, key, budget, adm)
	if err != nil || e.fallback {
		r.fleet.Release(context.WithoutCancel(ctx), slot)
		return e, err
	}
	if slot != nil {
		e.ending.add(endSlot, func(ctx context.Context) error {
			r.fleet.Release(ctx, slot)
			return nil
		})
	}
	return e, nil
}

// cloudSession asks the provider for a session and connects to it, or
// falls back to local Chromium, and tells internal/health what it learnt.
func (r *Router) cloudSession(ctx context.Context, key string, budget time.Duration, adm health.Admission) (*entry, error) {
	started := r.now()
	s, t, err := r.askProvider(ctx, key, budget)
	var nc *noCDPError
	switch {
	case err == nil || errors.As(err, &nc):
		// The provider answered: it is up, whatever its answer lacks.
		if r.health.Succeeded(ctx, started) {
			r.log.LogAttrs(ctx, slog.LevelInfo, "hybroute: cloud provider recovered",
				slog.String("provider", r.provider.Name()))
		}
		if adm == health.Probe {
			r.health.ProbeDone()
		}
		if err != nil {
			return nil, err
		}
		e := &entry{key: key, route: route.Cloud, h: browsertab.NewHandle(t)}
		e.ending.add(endTab, func(ctx context.Context) error {
			_ = t.close(ctx) // the provider's release ends what is left of it
			return nil
		})
		e.ending.add(endProvider, func(ctx context.Context) error {
			// The tab's close may have spent ctx's budget on a loaded
			// browser; the provider's release gets one of its own, or the
			// session would run on. (The fleet slot's release after it
			// makes its own too: internal/fleet.)
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
			defer cancel()
			return r.calls.ReleaseSession(ctx, s)
		})
		return e, nil
	}
	var fellBack *provider.Session
	if errors.Is(err, errProviderFellBack) {
		fellBack = s
	}
	first, window, reason := r.health.Failed(ctx, err)
	if adm == health.Probe {
		r.health.ProbeDone() // after the window opened: the waiters go local
	}
	if first {
		r.logProviderFailure(ctx, key, err, window)
	}
	return r.fallbackEntry(ctx, key, reason, err, fellBack, "")
}

// errConnecting marks a provider session whose CDP connect failed (the
// connect_failed fallback reason); its text is the start of the message.
var errConnecting = errors.New("connecting")

// askProvider creates the provider's session and connects to it. A session
// the provider created and we cannot use is released here, on a context of
// its own, but for one the provider marked fallback (returned with
// errProviderFellBack), which the floor's entry releases.
func (r *Router) askProvider(ctx context.Context, key string, budget time.Duration) (*provider.Session, cloudTab, error) {
	pctx, cancel := context.WithTimeout(ctx, budget)
	s, err := r.calls.CreateSession(pctx, key)
	cancel()
	switch {
	case err != nil:
		return nil, nil, err
	case s == nil:
		return nil, nil, fmt.Errorf("provider %s returned no session", r.provider.Name())
	case s.FallbackFromCloud:
		reason := s.FallbackReason
		if reason == "" {
			reason = "no reason given"
		}
		return s, nil, fmt.Errorf("%w: %s", errProviderFellBack, reason)
	case s.CDPURL == "" && s.REST != nil:
		// A browser driven through its REST API (restpage.go).
		return s, newRESTTab(s.REST, r.provider.Name()), nil
	case s.CDPURL == "":
		// Nothing pretends to work: the exact message of the original
		// failure, and the session is given back, not cached.
		r.releaseProviderSession(s)
		return nil, nil, &noCDPError{provider: r.provider.Name()}
	}
	// The connect is not cut short by Close (only by the creation's
	// deadline): a tab half made on the cloud browser when its connection
	// is dropped would stay open there.
	connCtx := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		connCtx, cancel = context.WithDeadline(connCtx, dl)
		defer cancel()
	}
	t, err := connectRemoteSession(connCtx, s.CDPURL, s.HTTPClient, "the cloud browser of "+r.provider.Name(), r.newRemoteGuard(), s.SingleConnection)
	if err != nil {
		r.releaseProviderSession(s)
		return nil, nil, fmt.Errorf("%w to session %s of %s at %s: %w",
			errConnecting, s.ID, r.provider.Name(), redactURL(s.CDPURL), err)
	}
	return s, t, nil
}

// cloudTab is the tab of a cloud session: over CDP (remoteTab) or through
// a REST API (restTab). close ends it; the provider's release follows.
type cloudTab interface {
	browsertab.Tab
	close(ctx context.Context) error
}

// overrideEntry is a session on the CDP override's browser: a new tab on it.
func (r *Router) overrideEntry(ctx context.Context, key string) (*entry, error) {
	ws, err := cdpconn.Resolve(ctx, r.cfg.cdpClient, r.cfg.cdpURL, nil)
	if err == nil {
		var t *remoteTab
		if t, err = connectRemote(ctx, ws, r.cfg.cdpClient, "the browser of the CDP override", r.newRemoteGuard()); err == nil {
			e := &entry{key: key, route: route.Cloud, h: browsertab.NewHandle(t)}
			e.ending.add(endTab, t.close)
			return e, nil
		}
	}
	return nil, fmt.Errorf("hybroute: connecting to the CDP override %s: %w", redactURL(r.cfg.cdpURL), err)
}

// checkCDPURL checks the CDP override's URL when the Router is made, so that
// a typo fails New rather than every call.
func checkCDPURL(s string) error {
	i := strings.Index(s, "://")
	if i <= 0 {
		return fmt.Errorf("%w: CDP URL %q", netpolicy.ErrInvalidURL, redactURL(s))
	}
	switch strings.ToLower(s[:i]) {
	case "ws", "wss", "http", "https":
		return nil
	}
	return fmt.Errorf("%w: CDP URL %q: want a ws, wss, http or https URL", netpolicy.ErrInvalidURL, redactURL(s))
}

// remoteTab is a tab on a browser reached over CDP: a cloud session or the
// CDP override.
type remoteTab struct {
	ctx         context.Context      // the first tab's: it holds the connection to the browser
	target      target.ID            // the first tab's target, once known (learnTarget)
	bcID        cdp.BrowserContextID // the session's browser context, once known (learnTarget)
	page        browsertab.Front     // the tab calls run in, once the first was replaced (tabs.go) or another made the front (tablist.go)
	cancelAlloc context.CancelFunc
	guard       *browserGuard // the guard of this connection's browser
	once        sync.Once
	browser     string // names the browser in errors: "the cloud browser of Steel"
}

// newRemoteGuard is the guard of one remote browser connection.
func (r *Router) newRemoteGuard() *browserGuard {
	g := newBrowserGuard(&r.cfg, r.pol, r.log, route.Cloud)
	return g
}

// remoteAllocator is the one place a remote browser is dialled: the
// websocket URL exactly as the provider handed it out (TLS when it says
// wss, no port needed, the key left in its query), with the provider's
// HTTP client, and never a /json/version on a websocket URL (an http(s)
// endpoint is resolved by cdpconn.Resolve, with its checks). The
// connection runs through the guard g's Mux (guardedRemote; nil g: no
// guard, for benchmarks only).
//
// single makes the URL good for one dial only (a session whose provider
// serves one websocket per session, [provider.Session].SingleConnection): a second
// dial fails with errSecondConnection rather than reaching the provider.
func remoteAllocator(wsURL string, hc *http.Client, g *browserGuard, single bool) (context.Context, context.CancelFunc) {
	return guardedRemote(g, dialOnce(single, func(ctx context.Context) (chromedp.Transport, error) {
		ws, err := cdpconn.Resolve(ctx, hc, wsURL, nil)
		if err != nil {
			return nil, err
		}
		return cdpconn.Dial(ctx, ws, hc)
	}))
}

// dialOnce is dial, or with single, dial good for one call: the next ones
// fail with errSecondConnection without dialling.
func dialOnce[T any](single bool, dial func(context.Context) (T, error)) func(context.Context) (T, error) {
	if !single {
		return dial
	}
	var dialled atomic.Bool
	return func(ctx context.Context) (T, error) {
		if dialled.Swap(true) {
			var zero T
			return zero, errSecondConnection
		}
		return dial(ctx)
	}
}

// errSecondConnection is the error of a second dial of a session that
// serves one websocket.
var errSecondConnection = errors.New("hybroute: the provider serves one CDP connection per session, and this session's is taken")

// connectRemote opens a new tab on the browser at wsURL through
// remoteAllocator, in a browser context of the session's own. chromedp ties
// the browser connection to the context of its first action, so that
// action runs on the tab's own context and the caller's ctx only bounds the
// wait. browser names the browser in the errors of a dead tab.
//
// The browser context keeps sessions that share a browser (the CDP
// override's, a CDPEndpoint's, a provider's gateway) apart: each has its
// own cookies, storage, caches and BroadcastChannels, where the default
// context would share them all. Every remote session gets one, on a
// provider's browser of its own too (docs/decisions: one code path).
// chromedp creates it with disposeOnDetach, so Chromium disposes of it,
// and of every page in it, when this connection goes: an opening cut short
// past its settle, or a connection lost, leaves nothing behind. close
// disposes of it first, while the connection is up.
func connectRemote(ctx context.Context, wsURL string, hc *http.Client, browser string, g *browserGuard) (*remoteTab, error) {
	return connectRemoteSession(ctx, wsURL, hc, browser, g, false)
}

// connectRemoteSession is connectRemote for a provider's session, which
// may allow one websocket only (single).
func connectRemoteSession(ctx context.Context, wsURL string, hc *http.Client, browser string, g *browserGuard, single bool) (*remoteTab, error) {
	actx, cancelAlloc := remoteAllocator(wsURL, hc, g, single)
	tctx, _ := chromedp.NewContext(actx, chromedp.WithNewBrowserContext()) // ended by close, with chromedp.Cancel
	t := &remoteTab{ctx: tctx, cancelAlloc: cancelAlloc, guard: g, browser: browser}
	err := browsertab.FirstAction(ctx, tctx, openSettleTimeout, func(state browsertab.OpenState) {
		switch state {
		case browsertab.OpenSettled:
			t.learnTarget()
		case browsertab.OpenUnsettled:
			t.warn(ctx, "hybroute: a tab's opening cut short did not settle in time; its tab may stay open on the browser")
		}
		_ = t.close(ctx)
	})
	if err != nil {
		return nil, err // cdpconn's errors carry no credential
	}
	t.learnTarget()
	return t, nil
}

// warn logs what may leave a tab open on the remote browser.
func (t *remoteTab) warn(ctx context.Context, msg string, attrs ...slog.Attr) {
	if t.guard == nil {
		return
	}
	t.guard.Log().LogAttrs(ctx, slog.LevelWarn, msg, append(attrs, slog.String("browser", t.browser))...)
}

// learnTarget keeps the ids of the session's browser context and of the
// first tab's target, once chromedp's first action has returned (it writes
// them): close disposes of the one and closes the other itself, and the
// guard attributes the context's targets to the session. A first action
// that failed after the context was made leaves its id too.
func (t *remoteTab) learnTarget() {
	c := chromedp.FromContext(t.ctx)
	if c == nil {
		return
	}
	t.bcID = c.BrowserContextID
	if c.Target != nil {
		t.target = c.Target.TargetID
	}
}

// BrowserContextID is the session's browser context, once learnTarget
// knew it.
func (t *remoteTab) BrowserContextID() cdp.BrowserContextID { return t.bcID }

// guardedRemote is the seam between the cloud connection and the guard: an
// allocator context for chromedp.NewContext whose connection, made by dial,
// runs through the guard's Mux, with the guard on before chromedp opens its
// tab. However the connection is dialled (TLS, a provider's URL shape), it
// must be made through here: a connection without the Mux has no guard on
// popups, frames, workers or WebSockets, and no refusal of chrome:// URLs.
func guardedRemote(g *browserGuard, dial func(ctx context.Context) (chromedp.Transport, error)) (context.Context, context.CancelFunc) {
	a := &cdpmux.Allocator{Dial: dial}
	if g != nil {
		a.Hooks, a.Start = g.Hooks(), g.Start
	}
	return chromedp.NewAllocatorContext(context.Background(), a)
}

func (t *remoteTab) Context() context.Context {
	if c := t.page.Get(); c != nil {
		return c
	}
	return t.ctx
}

// dead covers a replacement tab too: it is a child of the first. A dropped
// connection counts as soon as chromedp knows it, before it has cancelled
// the tab's context.
func (t *remoteTab) Dead() bool {
	if t.Context().Err() != nil {
		return true
	}
	if c := chromedp.FromContext(t.ctx); c != nil && c.Browser != nil {
		select {
		case <-c.Browser.LostConnection:
			return true
		default:
		}
	}
	return false
}

func (t *remoteTab) WrapErr(err error) error {
	if err != nil && t.Dead() && !errors.Is(err, ErrBrowserDead) {
		return fmt.Errorf("%w: %w", remoteDead(t.browser), err)
	}
	return err
}

// close ends the session's browser context, with every page in it (the
// tab, its replacement, its popups), and then the connection; the remote
// browser lives on. The context is ended before the connection goes: a
// page or a context left on a browser shared across sessions stays there,
// with the user's cookies, and nobody to close it.
func (t *remoteTab) close(ctx context.Context) error {
	var err error
	t.once.Do(func() {
		// chromedp's own close (on Cancel) gives detaching, closing and
		// disposing 5 s together; a loaded browser can take longer to
		// answer, and its page then stayed. So the context is disposed of
		// here first, within releaseTimeout, while the connection is up
		// (Cancel drops it). Over a connection already lost there is
		// nothing to do it with: Chromium disposed of the context then
		// (disposeOnDetach).
		ids := t.openTargets()
		if (t.bcID != "" || len(ids) > 0) && !t.Dead() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
			err = disposeContext(cctx, t.ctx, t.bcID)
			if err != nil || t.bcID == "" {
				// The pages at least; the context goes with the
				// connection below.
				for _, id := range ids {
					err = errors.Join(err, browsertab.CloseTarget(cctx, t.ctx, id))
				}
			}
			cancel()
			if err != nil {
				t.warn(ctx, "hybroute: a tab or the session's browser context may stay open on the browser", slog.String("error", err.Error()))
			}
		}
		cerr := chromedp.Cancel(t.ctx)
		if t.target == "" && t.bcID == "" {
			err = cerr // only chromedp knew the tab
		}
		t.cancelAlloc()
		if t.guard != nil {
			t.guard.Wait()
		}
	})
	return err
}

// openTargets are the tabs close closes: the first, and its replacement
// when it was replaced (tabs.go; the first was closed then, best effort).
func (t *remoteTab) openTargets() []target.ID {
	var ids []target.ID
	if p := t.page.Get(); p != nil {
		if c := chromedp.FromContext(p); c != nil && c.Target != nil {
			ids = append(ids, c.Target.TargetID)
		}
	}
	if t.target != "" {
		ids = append(ids, t.target)
	}
	return ids
}

// disposeContext disposes of the browser context id on the browser of
// tabCtx, within ctx, which closes every page in it; a context already
// gone counts as disposed of, and an empty id as nothing to do.
func disposeContext(ctx, tabCtx context.Context, id cdp.BrowserContextID) error {
	c := chromedp.FromContext(tabCtx)
	if id == "" || c == nil || c.Browser == nil {
		return nil
	}
	if _, err := cdp.Call(ctx, c.Browser, target.DisposeBrowserContext, target.DisposeBrowserContextParams{BrowserContextID: id}); err != nil && !contextGone(err) {
		return fmt.Errorf("disposing of the browser context %s: %w", id, err)
	}
	return nil
}

// contextGone reports Chromium's answer to a dispose of a browser context
// that is no longer there ("Failed to find context with id").
func contextGone(err error) bool {
	return strings.Contains(err.Error(), "Failed to find context")
}
