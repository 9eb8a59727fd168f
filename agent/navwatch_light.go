package agent

import (
	"context"

	"github.com/chromedp/cdproto/cdp"
)

// watchAct runs act watching the main frame for a navigation it starts,
// lets the page run what act queued when wait is set and none started yet,
// waits for a navigation that started to finish, and records whether one
// started.
func watchAct(ctx context.Context, c *call, navigated *bool, act func() error, wait bool) error {
	w, stop, err := watchNav(ctx, cdp.FrameID(c.target))
	if err != nil {
		return err
	}
	defer stop()
	if err := act(); err != nil {
		return err
	}
	if wait && !w.isStarted() {
		settle(ctx)
	}
	*navigated = w.wait(ctx)
	c.moved = c.moved || *navigated
	return nil
}
