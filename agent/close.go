package agent

import (
	"context"
	"encoding/json"
)

const ToolClose = "browser_close"

var closeTools = []toolDef{
	{
		name:   ToolClose,
		desc:   "Close this session's browsers; the next call starts afresh.",
		schema: noArgs,
		run:    (*Toolset).closeTool,
	},
}

func (t *Toolset) closeTool(ctx context.Context, _ *session, key string, args json.RawMessage) Result {
	if err := decode(args, &struct{}{}); err != nil {
		return argError(err)
	}
	if err := t.Release(ctx, key); err != nil {
		// The sessions are gone from the Router whatever their release said.
		return Result{Text: "Closed the session's browsers (releasing one reported: " + scrubKey(innermost(err), key) + "). The next browser call starts a fresh session."}
	}
	return Result{Text: "Closed the session's browsers. The next browser call starts a fresh session."}
}
