package hybroute

import (
	"context"
	"errors"
)

// RunRoute reports, from inside a run of [Router.Exec] or
// [Router.NavigateWith] (ctx is the run's), where the run's browser is:
// [RouteLocal] for the local Chromium (a fallback from the cloud
// included), [RouteCloud] for a remote browser. A tool that writes what
// the browser saved to disk (a download) needs to know whether that disk
// is this machine's.
func (r *Router) RunRoute(ctx context.Context) (Route, error) {
	e, _ := ctx.Value(runKey{}).(*entry)
	if e == nil {
		return RouteCloud, errors.New("hybroute: RunRoute needs the context of a run of Exec or NavigateWith")
	}
	return e.route, nil
}
