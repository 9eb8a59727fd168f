package agent

import (
	"context"
	"encoding/json"

	"github.com/hybroute/hybroute/agent/internal/snapshot"
)

// ToolSnapshot reads the page as text.
const ToolSnapshot = "browser_snapshot"

var snapshotTools = []toolDef{
	{
		name:   ToolSnapshot,
		desc:   "The page as an accessibility tree, a line per element: - role \"name\" [state] [ref=e4]: value. Tools take the refs; they hold until the page changes. A run of 8+ alike items (list items, rows) shows 3 and the expand call for the rest.",
		schema: snapshotSchema,
		run:    (*Toolset).snapshot,
	},
}

func (t *Toolset) snapshot(ctx context.Context, s *session, key string, args json.RawMessage) Result {
	var a snapshotArgs
	if err := decode(args, &a); err != nil {
		return argError(err)
	}
	o, err := a.options(t.cfg.snapshotLimit)
	if err != nil {
		return argError(err)
	}
	if a.File != "" {
		if err := t.checkSnapshotFile(a.File); err != nil {
			return argError(err)
		}
	}
	var text string
	res, c, err := t.do(ctx, s, key, "", reads|light|drivesREST, func(ctx context.Context, c *call) error {
		if p := c.rest; p != nil {
			raw, _, err := p.Snapshot(ctx)
			text = restSnapshot(raw, o.Limit)
			return readErr(err)
		}
		if o.Find != "" {
			if err := s.secrets.refuseFind(ctx, s, c); err != nil {
				return err
			}
		}
		var err error
		text, err = t.takeSnapshot(ctx, s, c, o)
		return err
	})
	if err == nil && a.File != "" {
		text, err = t.writeSnapshotFile(a.File, text)
	}
	return t.finishCall(s, key, res, c, err, func() string { return text })
}

// takeSnapshot takes a snapshot of the call's tab into the session's
// refs, and keeps the page's title when the read gave it.
func (t *Toolset) takeSnapshot(ctx context.Context, s *session, c *call, o snapshot.Options) (string, error) {
	shot, err := snapshot.Take(ctx, &s.worlds, &s.refs, c.target, c.url, o)
	if shot.TitleRead {
		c.title = shot.Title
	}
	return shot.Text, err
}
