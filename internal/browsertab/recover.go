package browsertab

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chromedp/chromedp"
)

// ReplaceError is the failure to open a fresh tab in place of one that
// does not answer: the session has no usable tab left.
type ReplaceError struct{ Err error }

func (e *ReplaceError) Error() string {
	return "replacing a tab that does not answer: " + e.Err.Error()
}
func (e *ReplaceError) Unwrap() error { return e.Err }

// Recover runs at the start of a call when the previous call ended by its
// deadline (ProbeFirst). A call that its deadline ended may have left the
// page unable to answer (a script in an endless loop holds the renderer's
// main thread; every later command on the tab would wait for it), while
// its browser context, with the cookies and storage, is fine. So the tab
// is asked a trivial question first (Probe); a tab that does not answer is
// replaced by a fresh tab in the same browser context (Tab.Replace),
// within replaceTimeout.
//
// A tab that answered, or had no probe due, returns nil, nil. A replaced
// tab returns retire, which lets go of the old one (Abandon, then the
// tab's own retire) and must run once, off the call's path. The error is
// ctx's when the caller gave up (ask again next time), else a
// *ReplaceError.
func (h *Handle) Recover(ctx context.Context, replaceTimeout time.Duration) (retire func(), err error) {
	if !h.ProbeFirst() {
		return nil, nil
	}
	if Probe(ctx, h.Context()) == nil {
		h.SetProbeFirst(false)
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err // the caller gave up, not the tab
	}
	old := h.Context()
	// First stop the script that holds the renderer: Chromium may put the
	// new tab in the same renderer process (same site, a process limit).
	Terminate(old)
	rctx, cancel := context.WithTimeout(ctx, replaceTimeout)
	retireTab, err := h.tab.Replace(rctx)
	cancel()
	if err != nil {
		return nil, &ReplaceError{Err: h.WrapErr(err)}
	}
	h.SetProbeFirst(false)
	return func() {
		Abandon(old)
		retireTab()
	}, nil
}

// ToBlank sends a tab that was refused a page to about:blank, so it never
// stays on a blocked page or its error page. It reports whether the tab
// is there, and returns err with any failure to send it.
func ToBlank(tabCtx context.Context, err error) (bool, error) {
	if blank := chromedp.Do(tabCtx, chromedp.Navigate("about:blank")); blank != nil {
		return false, errors.Join(err, fmt.Errorf("hybroute: sending the tab to about:blank: %w", blank))
	}
	return true, err
}
