// Package remotetab is a session's tab on a remote browser. Over CDP: a
// cloud provider's session or the CDP override. It connects through the
// guard's Mux (every target of the browser runs under the guard), in a
// browser context of the session's own, and closes what it opened.
// Through a provider's REST API (RESTTab): a server's tab, which only its
// driver moves.
package remotetab

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
	"github.com/hybroute/hybroute/internal/guard"
)

// disposeTimeout bounds the disposal of a session's browser context at
// Close, which runs while the connection is up.
const disposeTimeout = 10 * time.Second

// Tab is a tab on a browser reached over CDP: a cloud session or the
// CDP override.
type Tab struct {
	ctx         context.Context      // the first tab's: it holds the connection to the browser
	target      target.ID            // the first tab's target, once known (learnTarget)
	bcID        cdp.BrowserContextID // the session's browser context, once known (learnTarget)
	page        browsertab.Front     // the tab calls run in, once the first was replaced (tablist.go) or another made the front (tablist.go)
	cancelAlloc context.CancelFunc
	guard       *guard.Guard // the guard of this connection's browser
	once        sync.Once
	browser     string // names the browser in errors: "the cloud browser of Steel"
	died        error  // Config.Died
}

// allocator is the one place a remote browser is dialled: the
// websocket URL exactly as the provider handed it out (TLS when it says
// wss, no port needed, the key left in its query), with the provider's
// HTTP client, and never a /json/version on a websocket URL (an http(s)
// endpoint is resolved by cdpconn.Resolve, with its checks). The
// connection runs through the guard g's Mux (Guarded; nil g: no
// guard, for benchmarks only).
//
// single makes the URL good for one dial only (a session whose provider
// serves one websocket per session, [provider.Session].SingleConnection): a second
// dial fails with ErrSecondConnection rather than reaching the provider.
func allocator(wsURL string, hc *http.Client, g *guard.Guard, single bool) (context.Context, context.CancelFunc) {
	return guarded(g, DialOnce(single, func(ctx context.Context) (chromedp.Transport, error) {
		ws, err := cdpconn.Resolve(ctx, hc, wsURL, nil)
		if err != nil {
			return nil, err
		}
		return cdpconn.Dial(ctx, ws, hc)
	}))
}

// DialOnce is dial, or with single, dial good for one call: the next ones
// fail with ErrSecondConnection without dialling.
func DialOnce[T any](single bool, dial func(context.Context) (T, error)) func(context.Context) (T, error) {
	if !single {
		return dial
	}
	var dialled atomic.Bool
	return func(ctx context.Context) (T, error) {
		if dialled.Swap(true) {
			var zero T
			return zero, ErrSecondConnection
		}
		return dial(ctx)
	}
}

// ErrSecondConnection is the error of a second dial of a session that
// serves one websocket.
var ErrSecondConnection = errors.New("hybroute: the provider serves one CDP connection per session, and this session's is taken")

// Config says which remote browser to connect to, and how.
type Config struct {
	// URL is the browser's CDP endpoint, as its provider handed it out
	// (ws, wss, http or https).
	URL string
	// HTTPClient dials it (nil: http.DefaultClient).
	HTTPClient *http.Client
	// Browser names the browser in errors: "the cloud browser of Steel".
	Browser string
	// Guard is the guard of the connection's browser: every target it
	// has runs under it. Nil only in benchmarks of the unguarded browser.
	Guard *guard.Guard
	// Single: the provider serves one websocket per session, so a second
	// dial fails with ErrSecondConnection rather than reaching it.
	Single bool
	// Died is what a call on the tab fails with once the connection
	// ended (WrapErr); the caller's sentinel of a dead browser.
	Died error
}

// Connect opens a new tab on the browser at c.URL through
// allocator, in a browser context of the session's own. chromedp ties
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
func Connect(ctx context.Context, c Config) (*Tab, error) {
	actx, cancelAlloc := allocator(c.URL, c.HTTPClient, c.Guard, c.Single)
	tctx, _ := chromedp.NewContext(actx, chromedp.WithNewBrowserContext()) // ended by close, with chromedp.Cancel
	t := &Tab{ctx: tctx, cancelAlloc: cancelAlloc, guard: c.Guard, browser: c.Browser, died: c.Died}
	if t.died == nil {
		t.died = fmt.Errorf("%s died (its CDP connection ended)", c.Browser)
	}
	err := browsertab.FirstAction(ctx, tctx, OpenSettleTimeout, func(state browsertab.OpenState) {
		switch state {
		case browsertab.OpenSettled:
			t.learnTarget()
		case browsertab.OpenUnsettled:
			t.warn(ctx, "hybroute: a tab's opening cut short did not settle in time; its tab may stay open on the browser")
		}
		_ = t.Close(ctx)
	})
	if err != nil {
		return nil, err // cdpconn's errors carry no credential
	}
	t.learnTarget()
	return t, nil
}

// warn logs what may leave a tab open on the remote browser.
func (t *Tab) warn(ctx context.Context, msg string, attrs ...slog.Attr) {
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
func (t *Tab) learnTarget() {
	c := chromedp.FromContext(t.ctx)
	if c == nil {
		return
	}
	t.bcID = c.BrowserContextID
	if c.Target != nil {
		t.target = c.Target.TargetID
	}
}

// Conn is the first tab's context: it holds the connection to the
// browser, and a child of it is a new tab on that browser.
func (t *Tab) Conn() context.Context { return t.ctx }

// Guard is the guard of the tab's browser.
func (t *Tab) Guard() *guard.Guard { return t.guard }

// BrowserContextID is the session's browser context, once learnTarget
// knew it.
func (t *Tab) BrowserContextID() cdp.BrowserContextID { return t.bcID }

// guarded is the seam between the cloud connection and the guard: an
// allocator context for chromedp.NewContext whose connection, made by dial,
// runs through the guard's Mux, with the guard on before chromedp opens its
// tab. However the connection is dialled (TLS, a provider's URL shape), it
// must be made through here: a connection without the Mux has no guard on
// popups, frames, workers or WebSockets, and no refusal of chrome:// URLs.
func guarded(g *guard.Guard, dial func(ctx context.Context) (chromedp.Transport, error)) (context.Context, context.CancelFunc) {
	a := &cdpmux.Allocator{Dial: dial}
	if g != nil {
		a.Hooks, a.Start = g.Hooks(), g.Start
	}
	return chromedp.NewAllocatorContext(context.Background(), a)
}

func (t *Tab) Context() context.Context {
	if c := t.page.Get(); c != nil {
		return c
	}
	return t.ctx
}

// dead covers a replacement tab too: it is a child of the first. A dropped
// connection counts as soon as chromedp knows it, before it has cancelled
// the tab's context.
func (t *Tab) Dead() bool {
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

func (t *Tab) WrapErr(err error) error {
	if err != nil && t.Dead() && !errors.Is(err, t.died) {
		return fmt.Errorf("%w: %w", t.died, err)
	}
	return err
}

// close ends the session's browser context, with every page in it (the
// tab, its replacement, its popups), and then the connection; the remote
// browser lives on. The context is ended before the connection goes: a
// page or a context left on a browser shared across sessions stays there,
// with the user's cookies, and nobody to close it.
func (t *Tab) Close(ctx context.Context) error {
	var err error
	t.once.Do(func() {
		// chromedp's own close (on Cancel) gives detaching, closing and
		// disposing 5 s together; a loaded browser can take longer to
		// answer, and its page then stayed. So the context is disposed of
		// here first, within disposeTimeout, while the connection is up
		// (Cancel drops it). Over a connection already lost there is
		// nothing to do it with: Chromium disposed of the context then
		// (disposeOnDetach).
		ids := t.openTargets()
		if (t.bcID != "" || len(ids) > 0) && !t.Dead() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), disposeTimeout)
			err = DisposeContext(cctx, t.ctx, t.bcID)
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
// when it was replaced (tablist.go; the first was closed then, best effort).
func (t *Tab) openTargets() []target.ID {
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

// DisposeContext disposes of the browser context id on the browser of
// tabCtx, within ctx, which closes every page in it; a context already
// gone counts as disposed of, and an empty id as nothing to do.
func DisposeContext(ctx, tabCtx context.Context, id cdp.BrowserContextID) error {
	c := chromedp.FromContext(tabCtx)
	if id == "" || c == nil || c.Browser == nil {
		return nil
	}
	if _, err := cdp.Call(ctx, c.Browser, target.DisposeBrowserContext, target.DisposeBrowserContextParams{BrowserContextID: id}); err != nil && !ContextGone(err) {
		return fmt.Errorf("disposing of the browser context %s: %w", id, err)
	}
	return nil
}

// ContextGone reports Chromium's answer to a dispose of a browser context
// that is no longer there ("Failed to find context with id").
func ContextGone(err error) bool {
	return strings.Contains(err.Error(), "Failed to find context")
}

func (t *Tab) Attach(ctx context.Context, id target.ID) (context.Context, context.CancelFunc, error) {
	return browsertab.Open(ctx, t.ctx, chromedp.WithTargetID(id))
}

func (t *Tab) OpenPage(ctx context.Context) (context.Context, context.CancelFunc, error) {
	return browsertab.Open(ctx, t.ctx)
}

func (t *Tab) Swap(tctx context.Context, stop context.CancelFunc) (context.Context, context.CancelFunc) {
	old := t.Context()
	_, oldStop := t.page.Swap(tctx, stop)
	return old, oldStop
}

// OpenSettleTimeout bounds how long an opening its caller cut short is
// still waited for, so that the tab it made can be closed. It outlasts the
// guard's setup of the new target (guard.TargetSetupTimeout), the longest step
// of an opening on a loaded browser: a shorter bound left tabs open there.
const OpenSettleTimeout = guard.TargetSetupTimeout + 15*time.Second

// Replace opens a fresh tab on the remote browser, in the browser context
// of the first (chromedp gives a child context its parent's), and makes it
// the tab's front page. The first tab's context holds the connection to the
// browser, so it lives on (closed), and the new tab is its child. Its
// retire closes a replacement that is itself replaced (chromedp closes a
// child tab when its context ends); the first tab's context stays.
func (t *Tab) Replace(ctx context.Context) (func(), error) {
	tctx, stop, err := browsertab.Open(ctx, t.ctx)
	if err != nil {
		return nil, err
	}
	_, oldStop := t.page.Swap(tctx, stop)
	if oldStop == nil {
		oldStop = func() {}
	}
	return oldStop, nil
}
