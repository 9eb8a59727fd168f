package hybroute

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute/internal/browsertab"
	"github.com/hybroute/hybroute/internal/guard"
	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/route"
	"github.com/hybroute/hybroute/state"
)

// A storage state in and out of one session's browser context: cookies
// through Storage.getCookies/setCookies with the context's id, local and
// session storage by a script in a page of each origin. A page of an origin
// the session is not on is a navigation, which meets the guard's verdict as
// every navigation does; the guard then answers it with a blank document
// of its own (stubbed pages), so it sends nothing to the site. DOMStorage
// cannot stand in: Chromium finds a storage only through a frame of its
// origin.

// errStateNoCDP is the error of a state asked of a browser without CDP.
var errStateNoCDP = fmt.Errorf("%w: storage state needs a browser driven over CDP", ErrNoCDPEndpoint)

// stateBrowser is e's browser context, as its state is read and written.
// Without the context's id it fails: the default context is not the
// session's, and may be another's.
func stateBrowser(e *entry) (browsertab.Context, error) {
	if _, ok := e.h.Paged(); !ok {
		return browsertab.Context{}, errStateNoCDP // the kinds driven over CDP are the ones with pages
	}
	id := e.h.Tab().BrowserContextID()
	c := chromedp.FromContext(e.h.Context())
	if id == "" || c == nil || c.Browser == nil {
		return browsertab.Context{}, errors.New("hybroute: the session's browser context is not known")
	}
	return browsertab.Context{Browser: c.Browser, ID: id, Tab: e.h.Context(), Wrap: e.h.WrapErr, Dead: e.h.Dead}, nil
}

// readCookies reads the cookies of e's browser context. Partitioned
// cookies are left out: the storageState shape cannot hold their partition.
func readCookies(ctx context.Context, e *entry) ([]state.Cookie, error) {
	bc, err := stateBrowser(e)
	if err != nil {
		return nil, err
	}
	return bc.ReadCookies(ctx)
}

// writeCookies sets cs in e's browser context; with replace, the context's
// cookies are cleared first. A cookie that expired is left out; one the
// browser refuses fails the write with state.ErrInvalid, once the others are set.
func writeCookies(ctx context.Context, e *entry, cs []state.Cookie, replace bool) error {
	bc, err := stateBrowser(e)
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
func visitStubbed(tctx context.Context, g *guard.Guard, id target.ID, origin string) error {
	defer g.Stub(id)()
	if err := chromedp.Do(tctx, chromedp.Navigate(origin+"/")); err != nil {
		return fmt.Errorf("hybroute: opening a blank page of %s: %w", origin, err)
	}
	return nil
}

// withHiddenTab runs fn in a new tab of e's browser context, closed after
// it: a page of other origins than the session's tab's, which stays where
// it is.
func withHiddenTab(ctx context.Context, e *entry, fn func(tctx context.Context, id target.ID) error) error {
	bc, err := stateBrowser(e)
	if err != nil {
		return err
	}
	return bc.WithHiddenTab(ctx, fn)
}

// readEntryState reads e's state: its cookies, the storages of its page's
// origin (session storage too), and the local storage of the origins it
// went to and of extra, each in a blank page of its origin. An origin
// the guard would refuse on e's browser is not visited. Origins with
// nothing stored are left out, as Playwright leaves them.
func (r *Router) readEntryState(ctx context.Context, e *entry, extra []string) (*state.State, error) {
	cookies, err := readCookies(ctx, e)
	if err != nil {
		return nil, err
	}
	st := &state.State{Cookies: cookies}
	current := ""
	if landed := e.landedURL(); strings.HasPrefix(landed, "http:") || strings.HasPrefix(landed, "https:") {
		tctx, cancel := e.h.Bind(ctx)
		ps, err := browsertab.ReadPage(tctx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("hybroute: reading the page's storage: %w", e.h.WrapErr(err))
		}
		if norm, err := state.CanonicalOrigin(ps.Origin); err == nil {
			current = norm
			st.AddOrigin(norm, ps.Local, ps.Sess)
		}
	}
	var others []string
	for _, o := range append(e.h.Origins.List(), extra...) {
		if o != current && !slices.Contains(others, o) && r.pol.Refuse(r.pol.Classify(ctx, o+"/"), e.route) == nil {
			others = append(others, o)
		}
	}
	if len(others) == 0 {
		return st, nil
	}
	err = withHiddenTab(ctx, e, func(tctx context.Context, id target.ID) error {
		for _, o := range others {
			if err := visitStubbed(tctx, e.bg, id, o); err != nil {
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

// writeEntryState loads st, already filtered for e's browser, into e. A
// fresh session's tab (nothing on it yet) visits each origin itself, so
// the session storage lands in the tab it belongs to, and ends on
// about:blank. A session in use keeps its page: the local storage is set
// from a tab of its own, and the session storage only of the origin the
// page is on. With replace the context's cookies are cleared first.
func (r *Router) writeEntryState(ctx context.Context, e *entry, st *state.State, fresh, replace bool) error {
	if err := writeCookies(ctx, e, st.Cookies, replace); err != nil {
		return err
	}
	if len(st.Origins) == 0 {
		return nil
	}
	if e.bg == nil {
		return errors.New("hybroute: the session's browser has no guard")
	}
	tctx, cancel := e.h.Bind(ctx)
	defer cancel()
	if fresh {
		for _, o := range st.Origins {
			if err := visitStubbed(tctx, e.bg, e.gs.Tab(), o.Origin); err != nil {
				return err
			}
			if err := browsertab.WritePage(tctx, o.Origin, o.LocalStorage, o.SessionStorage); err != nil {
				return err
			}
		}
		if err := chromedp.Do(tctx, chromedp.Navigate("about:blank")); err != nil {
			return fmt.Errorf("hybroute: leaving the storage pages: %w", e.h.WrapErr(err))
		}
		return nil
	}
	if landed := e.landedURL(); landed != "" {
		if cur, err := state.CanonicalOrigin(strings.TrimSuffix(originOf(landed), "/")); err == nil {
			for _, o := range st.Origins {
				if o.Origin == cur && len(o.SessionStorage) > 0 {
					if err := browsertab.WritePage(tctx, cur, nil, o.SessionStorage); err != nil {
						return err
					}
				}
			}
		}
	}
	return withHiddenTab(ctx, e, func(hctx context.Context, id target.ID) error {
		for _, o := range st.Origins {
			if len(o.LocalStorage) == 0 {
				continue
			}
			if err := visitStubbed(hctx, e.bg, id, o.Origin); err != nil {
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

// trackOrigins records the origin of every frame the tab's pages
// navigate, from the events chromedp receives (no command).
func trackOrigins(tabCtx context.Context, e *entry) error {
	return chromedp.Listen(tabCtx, func(ev any) {
		if ev, ok := ev.(*page.EventFrameNavigated); ok && ev.Frame != nil {
			if o, err := state.CanonicalOrigin(ev.Frame.SecurityOrigin); err == nil {
				e.h.Origins.Add(o, state.MaxOrigins)
			}
		}
	})
}

// stateHosts decides, for a state going to a browser at w, which of its
// cookies and origins may go there. On the local browser every cookie may,
// and every origin its guard would let a page open. On a remote browser
// only what the router would send there: a public host, or a private one
// the options let remote browsers open, never one hybrid routing keeps
// local, never one whose lookup failed (unsure: kept local).
type stateHosts struct {
	r    *Router
	w    route.Route
	seen map[string]bool
}

func (h *stateHosts) allowed(ctx context.Context, rawURL string) bool {
	if ok, done := h.seen[rawURL]; done {
		return ok
	}
	v := h.r.pol.Classify(ctx, rawURL)
	ok := h.r.pol.Refuse(v, h.w) == nil
	if h.w == route.Cloud {
		// A name under a private-use suffix is private data whatever
		// it resolves to here.
		ok = ok && v.ResolveErr == nil && !netpolicy.PrivateUseName(v.Host) &&
			(v.Class == netpolicy.ClassPublic || v.Class == netpolicy.ClassPrivate) && !h.r.pol.RoutesLocally(v)
	}
	h.seen[rawURL] = ok
	return ok
}

// cookieURL is a URL of the host a cookie's domain names.
func cookieURL(domain string) string {
	host := strings.TrimPrefix(domain, ".")
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		host = "[" + host + "]"
	}
	return "https://" + host + "/"
}

// split parts st into what may go to a browser at w (kept) and what may
// not (dropped). On the local browser every cookie is kept without a
// lookup.
func (r *Router) split(ctx context.Context, st *state.State, w route.Route) (kept, dropped *state.State) {
	kept, dropped = &state.State{}, &state.State{}
	if st == nil {
		return kept, dropped
	}
	h := &stateHosts{r: r, w: w, seen: map[string]bool{}}
	for _, c := range st.Cookies {
		if w == route.Local || h.allowed(ctx, cookieURL(c.Domain)) {
			kept.Cookies = append(kept.Cookies, c)
		} else {
			dropped.Cookies = append(dropped.Cookies, c)
		}
	}
	for _, o := range st.Clone().Origins {
		if h.allowed(ctx, o.Origin+"/") {
			kept.Origins = append(kept.Origins, o)
		} else {
			dropped.Origins = append(dropped.Origins, o)
		}
	}
	return kept, dropped
}

// originsOf lists the origins of st.
func originsOf(st *state.State) []string {
	if st == nil {
		return nil
	}
	out := make([]string, len(st.Origins))
	for i, o := range st.Origins {
		out[i] = o.Origin
	}
	return out
}
