package statesync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute/internal/browsertab"
	"github.com/hybroute/hybroute/state"
)

// A page of an origin the session is not on is a navigation, which meets
// the guard's verdict as every navigation does; the guard then answers it
// with a blank document of its own (Stub), so it sends nothing to the
// site. DOMStorage cannot stand in: Chromium finds a storage only through
// a frame of its origin.

// Browser is one session's browser, as its state is read and written:
// what the root lends of its session for the time of one read or write.
type Browser struct {
	H      *browsertab.Handle
	Front  target.ID // the session's tab, as the guard names it
	Landed string    // the URL the session's page is on
	// Stub makes the guard answer the next navigation of a target with a
	// blank document of its own; the func it returns ends that. Nil: the
	// browser has no guard, and no page of another origin is opened.
	Stub func(target.ID) func()
	// Visitable reports that a blank page of origin may be opened in
	// this browser (its guard would let a page open it).
	Visitable func(origin string) bool
}

// context is the session's browser context. Without the context's id it
// fails: the default context is not the session's, and may be another's.
func (b Browser) context() (browsertab.Context, error) {
	id := b.H.Tab().BrowserContextID()
	c := chromedp.FromContext(b.H.Context())
	if id == "" || c == nil || c.Browser == nil {
		return browsertab.Context{}, errors.New("hybroute: the session's browser context is not known")
	}
	return browsertab.Context{Browser: c.Browser, ID: id, Tab: b.H.Context(), Wrap: b.H.WrapErr, Dead: b.H.Dead}, nil
}

// ReadCookies reads the cookies of the browser context. Partitioned
// cookies are left out: the storageState shape cannot hold their partition.
func (b Browser) ReadCookies(ctx context.Context) ([]state.Cookie, error) {
	bc, err := b.context()
	if err != nil {
		return nil, err
	}
	return bc.ReadCookies(ctx)
}

// WriteCookies sets cs in the browser context; with replace, the context's
// cookies are cleared first. A cookie that expired is left out; one the
// browser refuses fails the write with state.ErrInvalid, once the others are set.
func (b Browser) WriteCookies(ctx context.Context, cs []state.Cookie, replace bool) error {
	bc, err := b.context()
	if err != nil {
		return err
	}
	refused, err := bc.WriteCookies(ctx, cs, replace)
	if err != nil {
		return err
	}
	if len(refused) > 0 {
		return fmt.Errorf("hybroute: setting the cookies: %w: the browser refused %q", state.ErrInvalid, refused)
	}
	return nil
}

// visitStubbed takes the page of tctx (target id) to origin, which the
// guard answers with a blank document: the page is of that origin, and
// nothing went to the site.
func (b Browser) visitStubbed(tctx context.Context, id target.ID, origin string) error {
	defer b.Stub(id)()
	if err := chromedp.Do(tctx, chromedp.Navigate(origin+"/")); err != nil {
		return fmt.Errorf("hybroute: opening a blank page of %s: %w", origin, err)
	}
	return nil
}

// withHiddenTab runs fn in a new tab of the browser context, closed after
// it: a page of other origins than the session's tab's, which stays where
// it is.
func (b Browser) withHiddenTab(ctx context.Context, fn func(tctx context.Context, id target.ID) error) error {
	if b.Stub == nil {
		return errors.New("hybroute: the session's browser has no guard")
	}
	bc, err := b.context()
	if err != nil {
		return err
	}
	return bc.WithHiddenTab(ctx, fn)
}

// Read reads the session's state: its cookies, the storages of its page's
// origin (session storage too), and the local storage of the origins it
// went to and of extra, each in a blank page of its origin. An origin
// Visitable refuses is not visited. Origins with nothing stored are left
// out, as Playwright leaves them.
func (b Browser) Read(ctx context.Context, extra []string) (*state.State, error) {
	cookies, err := b.ReadCookies(ctx)
	if err != nil {
		return nil, err
	}
	st := &state.State{Cookies: cookies}
	current := ""
	if strings.HasPrefix(b.Landed, "http:") || strings.HasPrefix(b.Landed, "https:") {
		tctx, cancel := b.H.Bind(ctx)
		ps, err := browsertab.ReadPage(tctx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("hybroute: reading the page's storage: %w", b.H.WrapErr(err))
		}
		if norm, err := state.CanonicalOrigin(ps.Origin); err == nil {
			current = norm
			st.AddOrigin(norm, ps.Local, ps.Sess)
		}
	}
	var others []string
	for _, o := range append(b.H.Origins.List(), extra...) {
		if o != current && !slices.Contains(others, o) && b.Visitable(o) {
			others = append(others, o)
		}
	}
	if len(others) == 0 {
		return st, nil
	}
	err = b.withHiddenTab(ctx, func(tctx context.Context, id target.ID) error {
		for _, o := range others {
			if err := b.visitStubbed(tctx, id, o); err != nil {
				return err
			}
			ps, err := browsertab.ReadPage(tctx)
			if err != nil {
				return fmt.Errorf("hybroute: reading the storage of %s: %w", o, err)
			}
			st.AddOrigin(o, ps.Local, nil)
		}
		return nil
	})
	return st, err
}

// Write loads st, already split for this browser, into the session. A
// fresh session's tab (nothing on it yet) visits each origin itself, so
// the session storage lands in the tab it belongs to, and ends on
// about:blank. A session in use keeps its page: the local storage is set
// from a tab of its own, and the session storage only of the origin the
// page is on. With replace the context's cookies are cleared first.
func (b Browser) Write(ctx context.Context, st *state.State, fresh, replace bool) error {
	if err := b.WriteCookies(ctx, st.Cookies, replace); err != nil {
		return err
	}
	if len(st.Origins) == 0 {
		return nil
	}
	if b.Stub == nil {
		return errors.New("hybroute: the session's browser has no guard")
	}
	tctx, cancel := b.H.Bind(ctx)
	defer cancel()
	if fresh {
		for _, o := range st.Origins {
			if err := b.visitStubbed(tctx, b.Front, o.Origin); err != nil {
				return err
			}
			if err := browsertab.WritePage(tctx, o.Origin, o.LocalStorage, o.SessionStorage); err != nil {
				return err
			}
		}
		if err := chromedp.Do(tctx, chromedp.Navigate("about:blank")); err != nil {
			return fmt.Errorf("hybroute: leaving the storage pages: %w", b.H.WrapErr(err))
		}
		return nil
	}
	if b.Landed != "" {
		if cur, err := state.CanonicalOrigin(strings.TrimSuffix(originOf(b.Landed), "/")); err == nil {
			for _, o := range st.Origins {
				if o.Origin == cur && len(o.SessionStorage) > 0 {
					if err := browsertab.WritePage(tctx, cur, nil, o.SessionStorage); err != nil {
						return err
					}
				}
			}
		}
	}
	return b.withHiddenTab(ctx, func(hctx context.Context, id target.ID) error {
		for _, o := range st.Origins {
			if len(o.LocalStorage) == 0 {
				continue
			}
			if err := b.visitStubbed(hctx, id, o.Origin); err != nil {
				return err
			}
			if err := browsertab.WritePage(hctx, o.Origin, o.LocalStorage, nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// originOf is scheme://host[:port] of a page URL, or "".
func originOf(u string) string {
	i := strings.Index(u, "://")
	if i < 0 {
		return ""
	}
	rest := u[i+3:]
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		rest = rest[:j]
	}
	return u[:i+3] + rest
}

// TrackOrigins records in h the origin of every frame the tab's pages
// navigate, from the events chromedp receives (no command).
func TrackOrigins(tabCtx context.Context, h *browsertab.Handle) error {
	return chromedp.Listen(tabCtx, func(ev any) {
		if ev, ok := ev.(*page.EventFrameNavigated); ok && ev.Frame != nil {
			if o, err := state.CanonicalOrigin(ev.Frame.SecurityOrigin); err == nil {
				h.Origins.Add(o, state.MaxOrigins)
			}
		}
	})
}

// CopyCookies copies the cookies of h's browser context from to the
// context to (the session moving to a fresh one); it returns the names of
// those to refused.
func CopyCookies(ctx context.Context, h *browsertab.Handle, from, to cdp.BrowserContextID) (refused []string, err error) {
	c := chromedp.FromContext(h.Context())
	if c == nil || c.Browser == nil {
		return nil, errors.New("hybroute: the session's browser is not known")
	}
	bc := func(id cdp.BrowserContextID) browsertab.Context {
		return browsertab.Context{Browser: c.Browser, ID: id, Tab: h.Context(), Wrap: h.WrapErr, Dead: h.Dead}
	}
	cookies, err := bc(from).ReadCookies(ctx)
	if err != nil {
		return nil, err
	}
	return bc(to).WriteCookies(ctx, cookies, false)
}
