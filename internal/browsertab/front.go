package browsertab

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// A session's front tab is the page its calls run in; its other pages
// (popups, tabs the caller opened) wait in Pages or are attached when
// first made the front. Which page is the front, and what arms a fresh
// one, is the root's; these are the moves.

// ErrOnePage is the error of a page switch asked of a tab that has one
// page (a session driven through a REST API).
var ErrOnePage = errors.New("hybroute: a session of this browser has one tab")

// Order lists a session's pages as Tabs lists them: the front first (when
// there is one), then the others in id order.
func Order[V any](front target.ID, others map[target.ID]V) []target.ID {
	ids := []target.ID{}
	if front != "" {
		ids = append(ids, front)
	}
	return append(ids, slices.Sorted(maps.Keys(others))...)
}

// PageContext is a context on the page id, to make it the front: the one
// kept from when it was the front before (fresh false: it has the front's
// listeners still), or one newly attached within attachTimeout (fresh
// true: it needs them).
func (h *Handle) PageContext(ctx context.Context, id target.ID, attachTimeout time.Duration) (tctx context.Context, stop context.CancelFunc, fresh bool, err error) {
	ft, ok := h.Paged()
	if !ok {
		return nil, nil, false, ErrOnePage
	}
	if pg, ok := h.Pages.Take(id); ok {
		return pg.Ctx, pg.Stop, false, nil
	}
	actx, cancel := context.WithTimeout(ctx, attachTimeout)
	defer cancel()
	tctx, stop, err = ft.Attach(actx, id)
	return tctx, stop, true, err
}

// SwapFront makes tctx, which stop ends, the front page, and keeps the
// page that was the front among Pages, with its context and listeners.
func (h *Handle) SwapFront(ft PagedTab, tctx context.Context, stop context.CancelFunc) {
	old, oldStop := ft.Swap(tctx, stop)
	if c := chromedp.FromContext(old); c != nil && c.Target != nil {
		h.Pages.Put(c.Target.TargetID, Page{Ctx: old, Stop: oldStop})
	}
}

// CurrentURL is the URL of the current history entry of tctx's page, as
// the browser has it ("about:blank" for a page with none), asked within
// ctx.
func CurrentURL(tctx, ctx context.Context) (string, error) {
	qctx, cancel := Bind(tctx, ctx)
	defer cancel()
	h, err := chromedp.Call(qctx, page.GetNavigationHistory, cdp.Empty{})
	if err != nil {
		return "", err
	}
	u := "about:blank"
	if i := int(h.CurrentIndex); i >= 0 && i < len(h.Entries) {
		u = h.Entries[i].URL
	}
	return u, nil
}

// Describe is the URL and the title of a target's info, as a list of
// tabs shows them.
func Describe(ti *target.Info) (u, title string) {
	if ti == nil {
		return "", ""
	}
	return ti.URL, strings.TrimSpace(ti.Title)
}
