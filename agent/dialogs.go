package agent

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent/internal/modeltext"
)

// ToolHandleDialog is the name of the dialog tool.
const ToolHandleDialog = "browser_handle_dialog"

var dialogTools = []toolDef{
	{
		name:   ToolHandleDialog,
		desc:   "Answer the dialog (alert, confirm, prompt) the page waits on.",
		schema: `{"type":"object","properties":{"accept":{"type":"boolean","description":"true: OK, false: Cancel"},"prompt_text":{"type":"string","description":"For a prompt"}},"required":["accept"]}`,
		run:    (*Toolset).handleDialog,
	},
}

// dialogWaits is the result of an action the page answered with a dialog
// that waits for the model.
const dialogWaits = "The page opened a dialog and waits for your answer (below). Answer it with browser_handle_dialog before anything else: the page does nothing until then."

// dialogOpened reports a call that a dialog held for the model ended: the
// call's own result lists the dialog, open. A call refused because one
// was already open lists none, and stays an error.
func dialogOpened(err error, res hybroute.Result) bool {
	if !errors.Is(err, hybroute.ErrDialogOpen) {
		return false
	}
	for _, d := range res.Dialogs {
		if d.Pending {
			return true
		}
	}
	return false
}

func (t *Toolset) handleDialog(ctx context.Context, s *session, key string, args json.RawMessage) Result {
	var a struct {
		Accept     bool    `json:"accept"`
		PromptText *string `json:"prompt_text"`
	}
	if err := decode(args, &a); err != nil {
		return argError(err)
	}
	text := ""
	if a.PromptText != nil {
		text = *a.PromptText
	}
	d, err := t.r.AnswerDialog(ctx, key, a.Accept, text)
	switch {
	case errors.Is(err, hybroute.ErrNoDialog):
		return toolError("no dialog waits for an answer. Unless the server lets the model answer dialogs (hybroute mcp --dialogs model), they are answered as they open, and the results list them.")
	case err != nil:
		return toolError(describe(err, nil, key))
	}
	quoted := modeltext.Quote(modeltext.PageText(d.Message), 200)
	msg := "Dismissed the " + d.Type + " " + quoted + "."
	if a.Accept {
		msg = "Accepted the " + d.Type + " " + quoted
		if d.Type == "prompt" {
			msg += " with " + modeltext.Quote(text, 200)
		}
		msg += "."
	}
	// Where the page is now, through the Router like any call: what the
	// answer made the page do is checked.
	var navigated bool
	res, c, err := t.do(ctx, s, key, "", reads|moves, func(ctx context.Context, c *call) error {
		return withNavFlag(ctx, c, &navigated, func() error { return nil })
	})
	return t.finishCall(s, key, res, c, err, func() string { return msg + navNote(navigated) })
}
