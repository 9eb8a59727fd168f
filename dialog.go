package hybroute

import (
	"context"
	"log/slog"

	"github.com/hybroute/hybroute/internal/browsertab"
	"github.com/hybroute/hybroute/internal/remotetab"
)

// JavaScript dialogs (alert, confirm, prompt, beforeunload) stop the page
// until someone answers them. Nobody watches a headless tab, so the router
// answers every dialog as soon as it opens, by the DialogPolicy, and
// reports it in the Result of the call it opened during (or of the next
// call, for one a timer opened between calls). internal/browsertab does
// the answering and the recording on plain copies of DialogPolicy and
// Dialog, converted here: the types users see are documented here, and a
// conversion between structs that differ does not compile.

// DialogPolicy is how the router answers the JavaScript dialogs of its tabs
// ([WithDialogPolicy]). The zero value dismisses alert, confirm and prompt
// (confirm returns false, prompt returns null) and lets a page that asks
// "leave this page?" (beforeunload) go: the navigation the caller asked for
// goes on. Dismissing that one would cancel every later navigation of the
// tab, each asking again: the page would hold the session.
type DialogPolicy struct {
	// Accept accepts alert, confirm and prompt instead: confirm returns
	// true, prompt returns PromptText.
	Accept bool
	// PromptText is what an accepted prompt returns ("" by default, not
	// the prompt's default value).
	PromptText string
	// KeepPageOnBeforeUnload dismisses beforeunload dialogs: the page
	// stays, and the navigation that would have left it fails.
	KeepPageOnBeforeUnload bool
	// Hold leaves alert, confirm and prompt open for the caller to answer
	// with [Router.AnswerDialog]. A page that opens one stops until it is
	// answered, so the call running when one opens returns at once with
	// [ErrDialogOpen] (its Result.Dialogs has it, Pending; the tab is not
	// taken for wedged), and calls on the session are refused with it
	// until it is answered.
	// Accept and PromptText are then unused; beforeunload is still
	// answered by KeepPageOnBeforeUnload.
	Hold bool
}

// Dialog is one JavaScript dialog a page opened, and how it was answered.
type Dialog struct {
	Type     string // "alert", "confirm", "prompt" or "beforeunload"
	Message  string // what the page asked, cut to MaxDialogMessage bytes
	Accepted bool
	// Pending: the dialog is open, held for the caller's answer
	// ([DialogPolicy.Hold]). DefaultPrompt is a prompt's default text.
	Pending       bool
	DefaultPrompt string
}

// MaxDialogMessage bounds a reported dialog's message, in bytes: a page
// chooses the text, and it ends up in logs and in a model's context.
const MaxDialogMessage = 1024

// takeDialogs returns the dialogs the session's tabs opened since the last
// call took them, as a Result reports them, and forgets them.
func takeDialogs(h *browsertab.Handle) []Dialog {
	ds := h.Dialogs.Take()
	if ds == nil {
		return nil
	}
	out := make([]Dialog, len(ds))
	for i, d := range ds {
		out[i] = Dialog(d)
	}
	return out
}

// watchDialogs subscribes to the dialogs of the entry's current tab and
// returns the loop that answers them until the tab closes. Like the guard's,
// the loop runs in the sessions' WaitGroup.
func (r *Router) watchDialogs(e *entry, tabCtx context.Context) func() {
	if _, ok := e.h.Tab().(*remotetab.RESTTab); ok {
		return func() {} // its server answers its dialogs
	}
	return browsertab.Answerer{
		Policy: r.cfg.Dialogs, MaxMessage: MaxDialogMessage,
		Dialogs: &e.h.Dialogs, Held: &e.h.Held,
		Failed: func(d browsertab.Dialog, err error) {
			r.log.LogAttrs(tabCtx, slog.LevelDebug, "hybroute: answering a dialog",
				slog.String("cache_key", e.key), slog.String("type", d.Type), slog.String("error", err.Error()))
		},
	}.Watch(tabCtx)
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
		if d, ok, err := e.h.AnswerDialog(ctx, accept, promptText); ok {
			return Dialog(d), err
		}
	}
	return Dialog{}, ErrNoDialog
}
