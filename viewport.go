package hybroute

import (
	"context"

	"github.com/hybroute/hybroute/internal/browsertab"
)

// The default viewport of the local browser's tabs. Headless Chromium's own
// is what is left of an 800x600 window (780x437), smaller than any page is
// designed for; agents screenshot and click in it.
const (
	DefaultViewportWidth  = 1280
	DefaultViewportHeight = 720
)

// setViewport gives a new local tab the configured viewport. It runs when
// the tab is made (for the spare, ahead of any call), so a call pays
// nothing for it. Device-metrics emulation, not a window size: it holds
// for the page whatever headless mode makes of the window.
func setViewport(tabCtx context.Context, cfg *config) error {
	return browsertab.SetViewport(tabCtx, cfg.viewportW, cfg.viewportH)
}
