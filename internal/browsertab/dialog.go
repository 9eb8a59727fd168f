package browsertab

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/chromedp/cdproto"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// JavaScript dialogs (alert, confirm, prompt, beforeunload) stop the page
// until someone answers them. Nobody watches a headless tab, so each is
// answered as soon as it opens, by a DialogPolicy, and recorded for the
// call it opened during; or, held, left open for the caller to answer,
// ending the call it interrupts.
//
// DialogPolicy and Dialog are plain data with the same fields as the
// root's public DialogPolicy and Dialog, which convert to and from them:
// the root documents its users' types, and the compiler keeps the two in
// step (a conversion between structs that differ does not compile).

// DialogPolicy is how a tab's dialogs are answered.
type DialogPolicy struct {
	Accept                 bool   // accept alert, confirm and prompt
	PromptText             string // what an accepted prompt returns
	KeepPageOnBeforeUnload bool   // dismiss beforeunload: the page stays
	Hold                   bool   // leave alert, confirm and prompt for the caller
}

// Accepts reports whether the policy accepts a dialog of type t.
func (p DialogPolicy) Accepts(t page.DialogType) bool {
	if t == page.DialogTypeBeforeunload {
		return !p.KeepPageOnBeforeUnload
	}
	return p.Accept
}

// Dialog is one dialog a page opened, and how it was answered.
type Dialog struct {
	Type          string // "alert", "confirm", "prompt" or "beforeunload"
	Message       string // what the page asked, cut (CutMessage)
	Accepted      bool
	Pending       bool   // held for the caller's answer
	DefaultPrompt string // a held prompt's default text
}

// maxDialogsKept bounds the dialogs one take reports; a page that opens
// alerts in a loop is reported by its first ones and a count.
const maxDialogsKept = 16

// Dialogs is the dialogs a session's tabs opened since the last call
// took them. The zero value is empty and ready.
type Dialogs struct {
	mu      sync.Mutex
	list    []Dialog
	dropped int
}

// Add records one dialog.
func (d *Dialogs) Add(x Dialog) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.list) >= maxDialogsKept {
		d.dropped++
		return
	}
	d.list = append(d.list, x)
}

// Take returns the recorded dialogs and forgets them. Dialogs past the
// bound are summed up in a last entry of type "dropped".
func (d *Dialogs) Take() []Dialog {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.list
	if d.dropped > 0 {
		out = append(out, Dialog{Type: "dropped", Message: fmt.Sprintf("%d more dialogs were answered the same way and not listed", d.dropped)})
	}
	d.list, d.dropped = nil, 0
	return out
}

// CutMessage cuts s to at most limit bytes on a rune boundary, noting the
// real length: a page chooses the text, and it ends up in logs and in a
// model's context.
func CutMessage(s string, limit int) string {
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

// Answerer answers the dialogs of one tab by a policy, recording each in
// Dialogs, or holding it in Held.
type Answerer struct {
	Policy     DialogPolicy
	MaxMessage int // a message and a default prompt are cut to it (CutMessage)
	Dialogs    *Dialogs
	Held       *Held
	// Failed is told of an answer the browser refused while the tab
	// lives; nil tells no one.
	Failed func(d Dialog, err error)
}

// Watch subscribes to the dialogs of the tab tabCtx and returns the loop
// that answers them until the tab closes. The loop must be run (or the
// tab closed) for the subscription to end.
func (a Answerer) Watch(tabCtx context.Context) func() {
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
			d := Dialog{Type: string(ev.Type), Message: CutMessage(ev.Message, a.MaxMessage), Accepted: a.Policy.Accepts(ev.Type)}
			if a.Policy.Hold && ev.Type != page.DialogTypeBeforeunload {
				d.Accepted, d.Pending, d.DefaultPrompt = false, true, CutMessage(ev.DefaultPrompt, a.MaxMessage)
				a.Dialogs.Add(d)
				a.Held.Open(d, tabCtx)
				continue
			}
			// Recorded before it is answered: the call the dialog held
			// up sees it when it goes on.
			a.Dialogs.Add(d)
			// Answered from another goroutine than the one receiving
			// events, which the answer's reply needs.
			answers.Go(func() {
				_, err := chromedp.Call(tabCtx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{
					Accept: d.Accepted, PromptText: a.Policy.PromptText,
				})
				if err != nil && tabCtx.Err() == nil && a.Failed != nil {
					a.Failed(d, err)
				}
			})
		}
	}
}

// Held is a session's dialog left for the caller (DialogPolicy.Hold), and
// the call it ends when it opens. A page that opens one stops until it is
// answered: the command that made it open does not return before, so the
// running call is ended at once rather than taken for a wedged tab. The
// zero value holds none.
type Held struct {
	mu        sync.Mutex
	d         *Dialog
	tab       context.Context // the tab it opened in, which takes the answer
	interrupt func()          // ends the running call; nil between calls
}

// Open records a dialog the caller answers, and ends the running call.
func (h *Held) Open(d Dialog, tab context.Context) {
	h.mu.Lock()
	h.d, h.tab = &d, tab
	stop := h.interrupt
	h.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// Pending is the dialog that waits, if one does.
func (h *Held) Pending() (Dialog, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.d == nil {
		return Dialog{}, false
	}
	return *h.d, true
}

// Waiting is the dialog that waits and the tab it opened in, which takes
// the answer; nil when none waits. Take it once it is answered.
func (h *Held) Waiting() (*Dialog, context.Context) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.d, h.tab
}

// Interrupts returns the run's context, ended with cause when a held
// dialog opens (when hold is set). stop ends the watch with the run.
func (h *Held) Interrupts(ctx context.Context, hold bool, cause error) (context.Context, func()) {
	if !hold {
		return ctx, func() {}
	}
	cctx, cancel := context.WithCancelCause(ctx)
	h.mu.Lock()
	h.interrupt = func() { cancel(cause) }
	h.mu.Unlock()
	return cctx, func() {
		h.mu.Lock()
		h.interrupt = nil
		h.mu.Unlock()
		cancel(nil)
	}
}

// Take forgets the held dialog d once it is answered.
func (h *Held) Take(d *Dialog) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.d == d {
		h.d, h.tab = nil, nil
	}
}

// detachedPage is Chromium's answer to a page-level command sent while the
// tab swaps the document it shows (a reload or a navigation committing in
// a new frame host): for that moment no page is attached to the target.
const detachedPage = "Not attached to an active page"

// attachWait bounds how long WhileAttaching waits for a tab to be on a
// document again.
const attachWait = 3 * time.Second

// WhileAttaching runs cmd, and runs it again while Chromium answers that
// the tab is between two documents, within attachWait and ctx: a command
// right after a reload can meet the swap, and the swap ends on its own (a
// new renderer process to start, which on a loaded machine takes a while).
// Any other error, or the same one for longer, is cmd's answer.
func WhileAttaching(ctx context.Context, cmd func() error) error {
	deadline := time.Now().Add(attachWait)
	for try := 1; ; try++ {
		err := cmd()
		var ce *cdproto.Error
		if err == nil || !errors.As(err, &ce) || ce.Message != detachedPage || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(min(try, 5)) * 20 * time.Millisecond):
		}
	}
}

// AnswerDialog answers the session's held dialog: accept or dismiss it,
// and for an accepted prompt the text it returns. ok is false when none
// waits. It returns the dialog it answered (Pending cleared, Accepted as
// answered), or, when the answer failed, the dialog as it waited.
func (h *Handle) AnswerDialog(ctx context.Context, accept bool, promptText string) (d Dialog, ok bool, err error) {
	w, tab := h.Held.Waiting()
	if w == nil {
		return Dialog{}, false, nil
	}
	actx, cancel := Bind(tab, ctx)
	// A dialog that opened as a navigation started waits in a page that
	// is, for that moment, no tab's active page: the answer is asked again
	// until the page is attached, or the dialog went with its document.
	err = WhileAttaching(actx, func() error {
		_, err := chromedp.Call(actx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: accept, PromptText: promptText})
		return err
	})
	cancel()
	if err != nil && ctx.Err() != nil {
		return *w, true, err // the caller gave up: the dialog may still wait
	}
	// Answered, or gone (with its tab, or closed by the browser: the
	// answer then fails): either way nothing waits any more, and the
	// session must not stay refused for it.
	h.Held.Take(w)
	if err != nil && tab.Err() == nil {
		return *w, true, fmt.Errorf("hybroute: answering the %s dialog: %w", w.Type, h.WrapErr(err))
	}
	d = *w
	d.Pending, d.Accepted = false, accept
	return d, true, nil
}
