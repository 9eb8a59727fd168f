package browsertab

import (
	"context"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// SetViewport gives a new tab a viewport of width x height CSS pixels; 0
// for either leaves Chromium's own. It runs when the tab is made (for the
// sidecar's spare, ahead of any call), so a call pays nothing for it.
// Device-metrics emulation, not a window size: it holds for the page
// whatever headless mode makes of the window.
func SetViewport(tabCtx context.Context, width, height int) error {
	if width <= 0 || height <= 0 {
		return nil
	}
	_, err := chromedp.Call(tabCtx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: int64(width), Height: int64(height), DeviceScaleFactor: 1,
	})
	return err
}
