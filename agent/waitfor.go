package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute/agent/internal/modeltext"
)

// ToolWaitFor is the name of the wait tool.
const ToolWaitFor = "browser_wait_for"

// The bounds of browser_wait_for: a wait is a pause in the model's work,
// not a way to hold a session.
const (
	maxWait     = 30 * time.Second
	defaultWait = 10 * time.Second
	// waitSlice is the longest one question to the page waits: a
	// navigation in between loses at most one slice's answer.
	waitSlice = time.Second
)

var waitTools = []toolDef{
	{
		name:   ToolWaitFor,
		desc:   fmt.Sprintf("Wait until text appears, or text_gone goes, or for time seconds; with a text, time bounds the wait (default %d). At most %d s.", int(defaultWait/time.Second), int(maxWait/time.Second)),
		schema: fmt.Sprintf(`{"type":"object","properties":{"text":{"type":"string"},"text_gone":{"type":"string"},"time":{"type":"number","minimum":0,"maximum":%d}}}`, int(maxWait/time.Second)),
		run:    (*Toolset).waitFor,
	},
}

// waitTextJS resolves when the page's shown text has (gone false) or no
// longer has (gone true) the text, or after ms, with whether it did.
const waitTextJS = `((text, gone, ms) => new Promise(resolve => {
	const has = () => !!document.body && document.body.innerText.includes(text);
	const done = () => has() !== gone;
	if (done()) return resolve(true);
	const obs = new MutationObserver(() => { if (done()) { obs.disconnect(); clearTimeout(t); resolve(true); } });
	obs.observe(document, {subtree: true, childList: true, characterData: true, attributes: true});
	const t = setTimeout(() => { obs.disconnect(); resolve(done()); }, ms);
}))(%s, %t, %d)`

func (t *Toolset) waitFor(ctx context.Context, s *session, key string, args json.RawMessage) Result {
	var a struct {
		Text     *string  `json:"text"`
		TextGone *string  `json:"text_gone"`
		Time     *float64 `json:"time"`
	}
	if err := decode(args, &a); err != nil {
		return argError(err)
	}
	if a.Text != nil && a.TextGone != nil {
		return toolError("give text or text_gone, not both")
	}
	if a.Text == nil && a.TextGone == nil && a.Time == nil {
		return toolError("give text (wait until it appears), text_gone (until it is gone) or time (seconds)")
	}
	bound := defaultWait
	if a.Time != nil {
		if *a.Time < 0 || *a.Time > maxWait.Seconds() {
			return toolError(fmt.Sprintf("time %v: wait from 0 to %d seconds", *a.Time, int(maxWait/time.Second)))
		}
		bound = time.Duration(*a.Time * float64(time.Second))
	}
	text, gone := "", false
	switch {
	case a.Text != nil:
		text = *a.Text
	case a.TextGone != nil:
		text, gone = *a.TextGone, true
	}
	if (a.Text != nil || a.TextGone != nil) && strings.TrimSpace(text) == "" {
		return toolError("the text to wait for is empty")
	}
	var seen bool
	res, c, err := t.do(ctx, s, key, "", reads|moves, func(ctx context.Context, c *call) error {
		if a.Text == nil && a.TextGone == nil {
			tm := time.NewTimer(bound)
			defer tm.Stop()
			select {
			case <-tm.C:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		var err error
		seen, err = waitText(ctx, text, gone, bound)
		c.moved = true // the page may have gone on meanwhile: its title is read again
		return err
	})
	return t.finishCall(s, key, res, c, err, func() string {
		switch {
		case a.Text == nil && a.TextGone == nil:
			return fmt.Sprintf("Waited %v.", bound)
		case seen && gone:
			return "The text " + modeltext.Quote(text, 200) + " is not on the page."
		case seen:
			return "The text " + modeltext.Quote(text, 200) + " is on the page."
		case gone:
			return fmt.Sprintf("The text %s is still on the page after %v.", modeltext.Quote(text, 200), bound)
		}
		return fmt.Sprintf("The text %s did not appear within %v.", modeltext.Quote(text, 200), bound)
	})
}

// waitText asks the page, a slice at a time, until the text is there (or
// gone) or bound has passed. A page that navigates meanwhile loses the
// slice's question; the next one asks the new page.
func waitText(ctx context.Context, text string, gone bool, bound time.Duration) (bool, error) {
	q, err := json.Marshal(text)
	if err != nil {
		return false, err
	}
	deadline := time.Now().Add(bound)
	for {
		left := time.Until(deadline)
		slice := min(max(left, 0), waitSlice)
		r, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{
			Expression:    fmt.Sprintf(waitTextJS, q, gone, slice.Milliseconds()),
			AwaitPromise:  new(true),
			ReturnByValue: new(true),
		})
		switch {
		case ctx.Err() != nil:
			return false, ctx.Err()
		case err == nil && r.ExceptionDetails == nil && r.Result != nil && string(r.Result.Value) == "true":
			return true, nil
		case err != nil && !navigatedAway(err):
			return false, err
		case err == nil && r.ExceptionDetails != nil:
			return false, fmt.Errorf("in the page: %s", modeltext.ExceptionText(r.ExceptionDetails))
		}
		if left <= 0 {
			return false, nil
		}
		if err != nil {
			// The page was being replaced: give the new one a moment.
			settle(ctx)
		}
	}
}

// navigatedAway reports an evaluation the page's navigation cut short.
func navigatedAway(err error) bool {
	m := err.Error()
	return strings.Contains(m, "context was destroyed") || strings.Contains(m, "navigated or closed") || strings.Contains(m, "Cannot find context")
}
