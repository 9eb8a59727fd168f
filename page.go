package hybroute

import (
	"context"
	"errors"
	"fmt"

	"github.com/hybroute/hybroute/route"
)

// runKey marks the context a call's run gets with the call's entry, so code
// inside the run can ask the router about the page it drives.
type runKey struct{}

// errNotInRun is CheckPage's answer outside a run.
var errNotInRun = errors.New("hybroute: CheckPage needs the context of a run of Exec or NavigateWith")

// CheckPage applies the landed-URL rule to the page's current URL, from
// inside a run of [Router.Exec] or [Router.NavigateWith] (ctx is the run's):
// it returns the URL, and an error wrapping a [*netpolicy.BlockedError] when the
// page is where its browser must not be (metadata anywhere, a private
// address on a remote browser). The router checks the URL after every call
// too; a run that reads the page (its text, a screenshot) checks first, so
// nothing is read from a page that wandered off between calls. It costs no
// round trip to the browser: the URL is kept from the tab's events.
func (r *Router) CheckPage(ctx context.Context) (string, error) {
	e, _ := ctx.Value(runKey{}).(*entry)
	if e == nil {
		return "", errNotInRun
	}
	u := e.landedURL()
	if err := r.pol.refuse(r.pol.classify(ctx, u), e.route); err != nil {
		return u, fmt.Errorf("hybroute: the page is at a blocked address: %w", err)
	}
	return u, nil
}

// RunRoute reports, from inside a run of [Router.Exec] or
// [Router.NavigateWith] (ctx is the run's), which browser the run drives:
// route.Local for the local Chromium (a fallback included), route.Cloud for
// a remote browser. ok is false outside a run. A tool that hands the
// browser something of this machine (a file to upload) asks it first: a
// remote browser must not be given paths of this machine.
func (r *Router) RunRoute(ctx context.Context) (where route.Route, ok bool) {
	e, _ := ctx.Value(runKey{}).(*entry)
	if e == nil {
		return 0, false
	}
	if e.route == route.Local {
		return route.Local, true
	}
	return route.Cloud, true
}
