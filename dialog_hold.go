package hybroute

import (
	"context"
	"fmt"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute/internal/browsertab"
)

// With DialogPolicy.Hold, alert, confirm and prompt wait for the caller's
// answer instead of the policy's. A page that opens one stops until it is
// answered: the command that made it open (a click, a script) does not
// return before. So the call running when a dialog opens is ended at once,
// with ErrDialogOpen, and the tab is not taken for wedged; the dialog is
// in the call's Result.Dialogs with Pending set. Until Router.AnswerDialog
// answers it, calls on the session are refused with ErrDialogOpen rather
// than wait on a page that answers nothing.

// pendingDialog is the session's dialog that waits for the caller, if one
// does.
func pendingDialog(h *browsertab.Handle) (Dialog, bool) {
	d, ok := h.Held.Pending()
	return Dialog(d), ok
}

// interrupts returns the run's context, ended with ErrDialogOpen when a
// held dialog opens (on a router that holds them). stop ends the watch
// with the run.
func interrupts(h *browsertab.Handle, ctx context.Context, hold bool) (context.Context, func()) {
	return h.Held.Interrupts(ctx, hold, ErrDialogOpen)
}

// AnswerDialog answers the dialog that waits in the session sessionKey
// ([DialogPolicy.Hold]): accept or dismiss it, and for an accepted prompt
// the text it returns. It returns the dialog it answered, or [ErrNoDialog].
// The page goes on as if a user had answered; the next call sees where.
func (r *Router) AnswerDialog(ctx context.Context, sessionKey string, accept bool, promptText string) (Dialog, error) {
	key, err := normalizeKey(sessionKey)
	if err != nil {
		return Dialog{}, err
	}
	for _, e := range r.sessionEntries(key) {
		d, tab := e.h.Held.Waiting()
		if d == nil {
			continue
		}
		actx, cancel := browsertab.Bind(tab, ctx)
		_, err := chromedp.Call(actx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: accept, PromptText: promptText})
		cancel()
		if err != nil && ctx.Err() != nil {
			return Dialog(*d), err // the caller gave up: the dialog may still wait
		}
		// Answered, or gone (with its tab, or closed by the browser: the
		// answer then fails): either way nothing waits any more, and the
		// session must not stay refused for it.
		e.h.Held.Take(d)
		if err != nil && tab.Err() == nil {
			return Dialog(*d), fmt.Errorf("hybroute: answering the %s dialog: %w", d.Type, e.h.WrapErr(err))
		}
		out := Dialog(*d)
		out.Pending, out.Accepted = false, accept
		return out, nil
	}
	return Dialog{}, ErrNoDialog
}
