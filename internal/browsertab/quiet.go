package browsertab

import (
	"context"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Quiet stops the work a call left going in its tab when the call's
// caller ended it (a client that hung up, a deadline): the dialog the
// page waits on is dismissed, the script it runs is terminated, and its
// loads stop (the document, its subresources, its fetches: what
// window.stop() stops). The session's next call then starts on a quiet
// page, not one still loading or spinning. Best effort: each step is
// bounded by ProbeTimeout, on contexts of the browser's, not the ended
// call's.
func (h *Handle) Quiet() {
	if h.Dead() {
		return
	}
	if w, _ := h.Held.Waiting(); w != nil {
		ctx, cancel := context.WithTimeout(context.Background(), ProbeTimeout)
		_, _, _ = h.AnswerDialog(ctx, false, "")
		cancel()
	}
	c := chromedp.FromContext(h.Context())
	if c == nil || c.Target == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), ProbeTimeout)
	defer cancel()
	// terminateExecution ends the script that runs now, or else the next
	// one to start: the evaluation after it takes that, if nothing ran.
	_, _ = cdp.Call(ctx, c.Target, runtime.TerminateExecution, cdp.Empty{})
	_, _ = cdp.Call(ctx, c.Target, runtime.Evaluate, runtime.EvaluateParams{Expression: "0"})
	_, _ = cdp.Call(ctx, c.Target, page.StopLoading, cdp.Empty{})
}

// AfterRun is the tab's part of the end of a run that returned runErr:
// what a call its caller ended (callerErr) set going in the page stops
// with it (Quiet); a dialog held for the caller that ended the run is the
// run's error (open says it); and a run its caller cut short leaves the
// page perhaps wedged, so the next call asks the tab before it relies on
// it.
func (h *Handle) AfterRun(runErr, callerErr error, open func(Dialog) error) error {
	if callerErr != nil {
		h.Quiet()
	}
	if d, ok := h.Held.Pending(); ok && runErr != nil && callerErr == nil {
		// The dialog, not the run, ended the call: the tab is fine and
		// waits for the caller's answer.
		runErr = open(d)
	}
	if runErr != nil && callerErr != nil {
		h.SetProbeFirst(true)
	}
	return runErr
}
