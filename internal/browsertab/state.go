package browsertab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute/state"
)

// A storage state in and out of one session's browser context: cookies
// through Storage.getCookies/setCookies with the context's id, local and
// session storage by a script in a page of each origin. Which cookies and
// origins may go to a browser, and which origins a page may visit, is the
// root's to decide; this is only the browser's side.
//
// Storage is the storages of one page's origin.
type Storage struct {
	Origin string       `json:"origin"`
	Local  []state.Item `json:"l"`
	Sess   []state.Item `json:"s"`
}

// Context is a session's browser context, as its state is read and
// written.
type Context struct {
	Browser *chromedp.Browser
	ID      cdp.BrowserContextID
	Tab     context.Context   // the session's tab, whose browser a hidden tab opens on
	Wrap    func(error) error // names a dead browser in an error
	Dead    func() bool       // the browser under the session is gone
}

// ReadCookies reads the cookies of the context. Partitioned cookies are
// left out: the storageState shape cannot hold their partition.
func (c Context) ReadCookies(ctx context.Context) ([]state.Cookie, error) {
	res, err := cdp.Call(ctx, c.Browser, storage.GetCookies, storage.GetCookiesParams{BrowserContextID: c.ID})
	if err != nil {
		return nil, fmt.Errorf("hybroute: reading the cookies: %w", c.Wrap(err))
	}
	out := make([]state.Cookie, 0, len(res.Cookies))
	for _, x := range res.Cookies {
		if x == nil || x.PartitionKey != nil || x.PartitionKeyOpaque {
			continue
		}
		sc := state.Cookie{Name: x.Name, Value: x.Value, Domain: x.Domain, Path: x.Path, Expires: x.Expires,
			HTTPOnly: x.HTTPOnly, Secure: x.Secure, SameSite: string(x.SameSite)}
		if x.Session {
			sc.Expires = -1
		}
		if sc.SameSite == "" {
			sc.SameSite = "Lax" // what Chromium does with one that names none, and what Playwright writes
		}
		out = append(out, sc)
	}
	return out, nil
}

// WriteCookies sets cs in the context; with replace, the context's
// cookies are cleared first. A cookie that expired is left out. It
// returns the cookies the browser refused (name@domain), which the
// others do not wait for.
func (c Context) WriteCookies(ctx context.Context, cs []state.Cookie, replace bool) (refused []string, err error) {
	if replace {
		if _, err := cdp.Call(ctx, c.Browser, storage.ClearCookies, storage.ClearCookiesParams{BrowserContextID: c.ID}); err != nil {
			return nil, fmt.Errorf("hybroute: clearing the cookies: %w", c.Wrap(err))
		}
	}
	now := float64(time.Now().Unix())
	ps := make([]*network.CookieParam, 0, len(cs))
	for _, x := range cs {
		if x.Expires > 0 && x.Expires < now {
			continue
		}
		p := &network.CookieParam{Name: x.Name, Value: x.Value, Domain: x.Domain, Path: x.Path,
			Secure: x.Secure, HTTPOnly: x.HTTPOnly, SameSite: network.CookieSameSite(x.SameSite)}
		if x.Expires > 0 {
			p.Expires = cdp.TimeSinceEpoch(x.Expires)
		}
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		return nil, nil
	}
	if _, err := cdp.Call(ctx, c.Browser, storage.SetCookies, storage.SetCookiesParams{Cookies: ps, BrowserContextID: c.ID}); err == nil {
		return nil, nil
	} else if c.Dead() || ctx.Err() != nil {
		return nil, fmt.Errorf("hybroute: setting the cookies: %w", c.Wrap(err))
	}
	// Chromium refuses the whole list for one cookie it will not take,
	// and does not say which: one at a time, the others are set, and the
	// caller hears which ones it refused.
	for _, p := range ps {
		if _, err := cdp.Call(ctx, c.Browser, storage.SetCookies, storage.SetCookiesParams{Cookies: []*network.CookieParam{p}, BrowserContextID: c.ID}); err != nil {
			if c.Dead() || ctx.Err() != nil {
				return nil, fmt.Errorf("hybroute: setting the cookies: %w", c.Wrap(err))
			}
			refused = append(refused, p.Name+"@"+p.Domain)
		}
	}
	return refused, nil
}

// WithHiddenTab runs fn in a new tab of the context, closed after it: a
// page of other origins than the session's tab's, which stays where it is.
func (c Context) WithHiddenTab(ctx context.Context, fn func(tctx context.Context, id target.ID) error) error {
	tctx, stop, err := Open(ctx, c.Tab, chromedp.WithExistingBrowserContext(c.ID), chromedp.WithDetachOnCancel())
	if err != nil {
		return fmt.Errorf("hybroute: opening a tab for the storage: %w", c.Wrap(err))
	}
	defer stop()
	defer Abandon(tctx)
	t := chromedp.FromContext(tctx)
	if t == nil || t.Target == nil {
		return errors.New("hybroute: the storage tab has no target")
	}
	cctx, cancel := Bind(tctx, ctx)
	defer cancel()
	return fn(cctx, t.Target.TargetID)
}

// readStorageJS reads the page's storages. A document no storage is
// allowed to (the browser's error page, which a failed navigation commits
// under the URL it failed to load; a sandboxed one) throws on the
// storage's getter: it has nothing stored.
const readStorageJS = `(() => {
	const read = get => {
		let s;
		try { s = get(); } catch (e) { return []; }
		const out = []; for (let i = 0; i < s.length; i++) { const k = s.key(i); out.push({name: k, value: s.getItem(k)}); } return out;
	};
	return {origin: location.origin, l: read(() => localStorage), s: read(() => sessionStorage)};
})()`

// writeStorageJS sets the items of d ({l, s}) in the page's storages and
// returns the page's origin, so the caller sees where they went.
const writeStorageJS = `((d) => {
	for (const it of d.l || []) localStorage.setItem(it.name, it.value);
	for (const it of d.s || []) sessionStorage.setItem(it.name, it.value);
	return location.origin;
})(%s)`

// ReadPage reads the storages of the page of tctx.
func ReadPage(tctx context.Context) (Storage, error) {
	return chromedp.Run(tctx, chromedp.Evaluate[Storage](readStorageJS))
}

// WritePage sets local and sess in the page of tctx, which must be at
// origin.
func WritePage(tctx context.Context, origin string, local, sess []state.Item) error {
	d, err := json.Marshal(Storage{Local: local, Sess: sess})
	if err != nil {
		return err
	}
	got, err := chromedp.Run(tctx, chromedp.Evaluate[string](fmt.Sprintf(writeStorageJS, d)))
	if err != nil {
		return fmt.Errorf("hybroute: setting the storage of %s: %w", origin, err)
	}
	if got != origin {
		return fmt.Errorf("hybroute: setting the storage of %s: the page is at %s", origin, got)
	}
	return nil
}
