package hybroute

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"unicode/utf8"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// JavaScript dialogs (alert, confirm, prompt, beforeunload) stop the page
// until someone answers them. Nobody watches a headless tab, so the router
// answers every dialog as soon as it opens, by the DialogPolicy, and
// reports it in the Result of the call it opened during (or of the next
// call, for one a timer opened between calls).

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
	// with [Router.AnswerDialog] (dialog_hold.go): the call that is
	// running when one opens returns at once with [ErrDialogOpen], and
	// calls on the session are refused with it until it is answered.
	// Accept and PromptText are then unused; beforeunload is still
	// answered by KeepPageOnBeforeUnload.
	Hold bool
}

// accepts reports whether the policy accepts a dialog of type t.
func (p DialogPolicy) accepts(t page.DialogType) bool {
	if t == page.DialogTypeBeforeunload {
		return !p.KeepPageOnBeforeUnload
	}
	return p.Accept
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

// maxDialogsKept bounds the dialogs one Result reports; a page that opens
// alerts in a loop is reported by its first ones and a count.
const maxDialogsKept = 16

// dialogRecord is the dialogs a tab opened since the last call took them.
type dialogRecord struct {
	mu      sync.Mutex
	list    []Dialog
	dropped int
}

func (d *dialogRecord) add(x Dialog) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.list) >= maxDialogsKept {
		d.dropped++
		return
	}
	d.list = append(d.list, x)
}

// take returns the recorded dialogs and forgets them. Dialogs past the
// bound are summed up in a last entry of type "dropped".
func (d *dialogRecord) take() []Dialog {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.list
	if d.dropped > 0 {
		out = append(out, Dialog{Type: "dropped", Message: fmt.Sprintf("%d more dialogs were answered the same way and not listed", d.dropped)})
	}
	d.list, d.dropped = nil, 0
	return out
}

// cutMessage cuts s to at most max bytes on a rune boundary, noting the
// real length.
func cutMessage(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	note := fmt.Sprintf("… [%d bytes]", len(s))
	cut := limit - len(note)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:max(cut, 0)] + note
}

// watchDialogs subscribes to the dialogs of the entry's current tab and
// returns the loop that answers them until the tab closes. Like the guard's,
// the loop runs in the sessions' WaitGroup.
func (r *Router) watchDialogs(e *entry, tabCtx context.Context) func() {
	if _, ok := e.tab.(*restTab); ok {
		return func() {} // its server answers its dialogs
	}
	sctx, stop := context.WithCancel(tabCtx)
	events := chromedp.Events(sctx, page.JavascriptDialogOpening)
	return func() {
		defer stop()
		var answers sync.WaitGroup
		defer answers.Wait()
		for ev, err := range events {
			if err != nil {
				return // the tab is gone
			}
			d := Dialog{Type: string(ev.Type), Message: cutMessage(ev.Message, MaxDialogMessage), Accepted: r.cfg.dialogs.accepts(ev.Type)}
			if r.cfg.dialogs.Hold && ev.Type != page.DialogTypeBeforeunload {
				d.Accepted, d.Pending, d.DefaultPrompt = false, true, cutMessage(ev.DefaultPrompt, MaxDialogMessage)
				e.dialogs.add(d)
				e.held.open(d, tabCtx)
				continue
			}
			// Recorded before it is answered: the call the dialog held
			// up sees it when it goes on.
			e.dialogs.add(d)
			// Answered from another goroutine than the one receiving
			// events, which the answer's reply needs.
			answers.Go(func() {
				_, err := chromedp.Call(tabCtx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{
					Accept: d.Accepted, PromptText: r.cfg.dialogs.PromptText,
				})
				if err != nil && tabCtx.Err() == nil {
					r.log.LogAttrs(tabCtx, slog.LevelDebug, "hybroute: answering a dialog",
						slog.String("cache_key", e.key), slog.String("type", d.Type), slog.String("error", err.Error()))
				}
			})
		}
	}
}
