package hybroute

import (
	"context"

	"github.com/hybroute/hybroute/internal/guard"
	"github.com/hybroute/hybroute/internal/remotetab"
)

// connectRemote opens a session's tab on the browser at wsURL, as a cloud
// session does, with the guard g (nil: an unguarded browser, for the
// controls of the guard's tests and benchmarks).
func connectRemote(ctx context.Context, wsURL, browser string, g *guard.Guard) (*remotetab.Tab, error) {
	return remotetab.Connect(ctx, remotetab.Config{URL: wsURL, Browser: browser, Guard: g, Died: remoteDead(browser)})
}
