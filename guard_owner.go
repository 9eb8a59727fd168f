package hybroute

import (
	"errors"

	sc "github.com/hybroute/hybroute/internal/sidecar"

	"github.com/hybroute/hybroute/internal/guard"
	"github.com/hybroute/hybroute/internal/remotetab"
)

// The guard (internal/guard) pauses what the pages of a browser ask for
// and asks internal/floor about each URL: the same verdict and policy as
// the plan. The guard knows a session as a guard.Session (entry.gs) and a
// call as a guard.Scope, which the call hands it (entry.guard); it holds
// nothing of the router's.

// enableGuard makes the browser's guard watch the entry's tab, which
// also keeps where its main frame is (landedURL). It returns what the sessions'
// WaitGroup runs until the tab closes: the guard then forgets the entry.
func (r *Router) enableGuard(e *entry) (func(), error) {
	if _, ok := e.h.Tab().(*restTab); ok {
		// No CDP, no guard in that browser: its landing is what its
		// REST answers report (restpage.go).
		return func() {}, nil
	}
	tabCtx := e.h.Context()
	var g *guard.Guard
	switch t := e.h.Tab().(type) {
	case *remotetab.Tab:
		g = t.Guard()
	case *sc.Tab:
		g = t.Proc().Guard()
	}
	if g == nil {
		return nil, errors.New("hybroute: the tab's browser has no guard")
	}
	if err := g.Register(&e.gs, e.key, tabCtx, e.h.Tab().BrowserContextID()); err != nil {
		return nil, err
	}
	e.bg = g
	tab := e.gs.Tab()
	return func() {
		select {
		case <-tabCtx.Done():
		case <-g.Done():
		}
		g.Unregister(&e.gs, tab)
	}, nil
}
