package sidecar

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute/internal/browsertab"
	"github.com/hybroute/hybroute/internal/egress"
)

// Tab is one session's tab: a page target in a browser context of its own.
// Its page can be swapped for another in the same browser context (Swap);
// its process stays the tab's for life, and so do the browser context and
// its door unless the tab moves to a fresh one (Renew).
type Tab struct {
	key   string           // the session's cache key, for errors
	front browsertab.Front // the page calls run in; its stop detaches chromedp from it
	proc  *Proc
	// the viewport of every page of the tab (Config)
	viewW, viewH int

	mu   sync.Mutex
	bcID cdp.BrowserContextID
	door *egress.Door // the context's own door into the egress proxy, and its grant (internal/egress)

	// settle tells the sidecar that the key's first call is done, so the
	// spare it took may be replaced now (refillLater); nil for a tab that
	// took no part in the spare's cycle. Set before the tab is handed out.
	settle func()

	closeOnce sync.Once
	closeErr  error
}

// Settled is called when the first call on the tab has ended.
func (t *Tab) Settled() {
	if t.settle != nil {
		t.settle()
	}
}

// Context returns the chromedp context bound to the tab's page. Run
// chromedp actions on a context bound to it (tab.Bind); never cancel it
// yourself, close the tab instead.
func (t *Tab) Context() context.Context { return t.front.Get() }

// Swap makes tctx, a page in the tab's browser context that stop detaches
// from, the tab's page, and returns the page it was.
func (t *Tab) Swap(tctx context.Context, stop context.CancelFunc) (context.Context, context.CancelFunc) {
	return t.front.Swap(tctx, stop)
}

// OpenPage opens a fresh page in the tab's browser context (its cookies
// and storage), with the sidecar's viewport; it does not make it the
// tab's page (Swap does). A ctx that ends first undoes it.
func (t *Tab) OpenPage(ctx context.Context) (context.Context, context.CancelFunc, error) {
	tctx, stop, err := browsertab.Open(ctx, t.proc.ctx,
		chromedp.WithExistingBrowserContext(t.BrowserContextID()), chromedp.WithDetachOnCancel())
	if err != nil {
		return nil, nil, err
	}
	if err := browsertab.SetViewport(tctx, t.viewW, t.viewH); err != nil {
		stop()
		return nil, nil, err
	}
	return tctx, stop, nil
}

// Attach opens a chromedp context on the page id, an existing page of the
// tab's browser context.
func (t *Tab) Attach(ctx context.Context, id target.ID) (context.Context, context.CancelFunc, error) {
	return browsertab.Open(ctx, t.proc.ctx, chromedp.WithTargetID(id), chromedp.WithDetachOnCancel())
}

// Replace opens a fresh page in the tab's browser context (its cookies
// and storage stay) and makes it the tab's page, for a page that stopped
// answering. retire detaches from the old one.
func (t *Tab) Replace(ctx context.Context) (retire func(), err error) {
	tctx, stop, err := t.OpenPage(ctx)
	if err != nil {
		return nil, err
	}
	_, oldStop := t.Swap(tctx, stop)
	return oldStop, nil
}

// BrowserContextID is the tab's browser context.
func (t *Tab) BrowserContextID() cdp.BrowserContextID {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.bcID
}

// Proc is the process the tab is on.
func (t *Tab) Proc() *Proc { return t.proc }

// Door is the browser context's own door into the egress proxy: the grant
// set on it is what the context's connections may reach.
func (t *Tab) Door() *egress.Door {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.door
}

// Dead reports whether the Chromium process under the tab has died.
func (t *Tab) Dead() bool { return t.proc.Dead() }

// WrapErr turns the error of a chromedp call on the tab into one that wraps
// Config.Dead when the process died under it; other errors pass unchanged.
func (t *Tab) WrapErr(err error) error { return t.proc.Wrap(err) }

// Close detaches from the tab and disposes of its browser context (which
// closes the page and drops its cookies and storage).
func (t *Tab) Close() error {
	t.closeOnce.Do(func() {
		bcID, door := t.BrowserContextID(), t.Door()
		// Last, after the context: nothing of it connects through the
		// door then.
		defer door.Close()
		t.front.Stopper()()
		if err := disposeContext(t.proc, bcID); err != nil {
			t.closeErr = fmt.Errorf("hybroute: disposing of the browser context of local tab %q: %w", t.key, err)
		}
	})
	return t.closeErr
}

// Renew moves t to a fresh browser context with a door of its own, and a
// fresh page in it that becomes the tab's page: for a session whose
// context ran documents that a grant about to be given must not reach
// (egress.Door.Clean). The old door grants nothing from the start. The
// fresh context is the spare when one is ready (Open's fast path), on t's
// process only. carry copies what follows the session (its cookies) from
// the old context to the new one. retire disposes of the old context,
// which ends whatever ran there (pages, frames, workers, its history and
// back-forward cache), and then closes its door. On an error the tab stays
// where it was, its door granting nothing.
func (s *Sidecar) Renew(ctx context.Context, t *Tab, carry func(ctx context.Context, from, to cdp.BrowserContextID) error) (retire func(), err error) {
	oldBC, oldDoor := t.BrowserContextID(), t.Door()
	oldDoor.Set(egress.Grant{})
	nt, err := s.Open(ctx, t.key)
	if err != nil {
		return nil, err
	}
	if nt.proc != t.proc {
		// The tab's browser died and another started: the session goes
		// with its browser, not to the new one.
		_ = nt.Close()
		return nil, t.proc.Wrap(errors.New("hybroute: the session's browser is gone"))
	}
	if err := carry(ctx, oldBC, nt.BrowserContextID()); err != nil {
		_ = nt.Close()
		return nil, err
	}
	t.mu.Lock()
	t.bcID, t.door = nt.BrowserContextID(), nt.Door()
	t.mu.Unlock()
	t.settle = nt.settle // the spare it took is made again when this call is done
	_, oldStop := t.front.Swap(nt.front.Get(), nt.front.Stopper())
	return func() {
		if oldStop != nil {
			oldStop()
		}
		if err := disposeContext(t.proc, oldBC); err != nil {
			t.proc.guard.Log().Warn("hybroute: disposing of a session's old browser context", "key", t.key, "err", err)
		}
		oldDoor.Close()
	}, nil
}

// makeTab makes a browser context and a tab in it on proc. A cancelled fctx
// undoes whatever was made before makeTab returns.
func (s *Sidecar) makeTab(fctx context.Context, proc *Proc, key string) (*Tab, error) {
	// The context's own door into the egress proxy: a connection through
	// it is this context's, and reaches what its session was granted.
	door, err := proc.egress.OpenDoor(fctx)
	if err != nil {
		return nil, err
	}
	// Not under fctx: a cancel after Chromium made the context would leak it.
	cctx, cancel := context.WithTimeout(context.Background(), browsertab.ControlTimeout)
	res, err := cdp.Call(cctx, proc.browser, target.CreateBrowserContext,
		target.CreateBrowserContextParams{DisposeOnDetach: new(true),
			ProxyServer: "http://" + door.Addr(), ProxyBypassList: proxyBypassList})
	cancel()
	if err != nil {
		door.Close()
		return nil, proc.Wrap(fmt.Errorf("creating a browser context: %w", err))
	}
	door.Bind(string(res.BrowserContextID))
	tctx, stop := chromedp.NewContext(proc.ctx,
		chromedp.WithExistingBrowserContext(res.BrowserContextID),
		// Cancelling detaches only; close disposes of the browser context,
		// which closes the page in one step.
		chromedp.WithDetachOnCancel())
	t := &Tab{key: key, bcID: res.BrowserContextID, proc: proc, door: door,
		viewW: s.cfg.ViewportWidth, viewH: s.cfg.ViewportHeight}
	t.front.Swap(tctx, stop)
	unhook := context.AfterFunc(fctx, stop)
	err = chromedp.Do(tctx) // creates and attaches the page; binds it to tctx
	if err == nil {
		err = browsertab.SetViewport(tctx, t.viewW, t.viewH)
	}
	if !unhook() || err != nil {
		// Best effort: if the dispose fails the browser is going away, and
		// the context goes with it.
		t.Close()
		if ferr := fctx.Err(); ferr != nil {
			return nil, ferr
		}
		return nil, proc.Wrap(fmt.Errorf("opening a tab: %w", err))
	}
	return t, nil
}

// disposeContext disposes of the browser context bcID on proc, which
// closes its pages and ends its workers, and drops its cookies, storage
// and history. A context of a process that ended went with it.
func disposeContext(proc *Proc, bcID cdp.BrowserContextID) error {
	if proc.Ended() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), browsertab.ControlTimeout)
	defer cancel()
	_, err := cdp.Call(ctx, proc.browser, target.DisposeBrowserContext,
		target.DisposeBrowserContextParams{BrowserContextID: bcID})
	if err != nil && proc.Ended() {
		return nil
	}
	return err
}
