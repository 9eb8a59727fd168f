package agent

import (
	"context"
	"slices"
	"strings"

	"github.com/hybroute/hybroute/agent/internal/snapshot"
)

// changesAfter tells the model what an action changed in the page, when
// the session holds a snapshot of the same document to compare with: the
// lines of the tree that went and came, or the whole new tree where that
// is shorter. It returns "" when there is nothing to compare with (no
// snapshot yet, another tab, another document): the model then takes a
// snapshot itself, as before. The action's own result does not depend on
// it, so a failure to read the tree is no error of the action.
//
// echo, when not empty, is a line the action's own result says already
// (the field a typing filled, with the text typed): it is left out.
func (t *Toolset) changesAfter(ctx context.Context, s *session, c *call, echo string) string {
	prev, prevDoc, prevFolds := s.refs.Text(), s.refs.Doc(), s.refs.Folds()
	if prev == "" || s.refs.Target() != c.target || ctx.Err() != nil {
		return ""
	}
	text, err := t.takeSnapshot(ctx, s, c, snapshot.Options{Limit: t.cfg.snapshotLimit})
	if err != nil || s.refs.Doc() != prevDoc {
		return ""
	}
	// Where the focus is is no change of the page: a click on a field
	// or a button moves it, and every action would report it.
	diff := snapshot.Compact(snapshot.LineDiff(snapshot.WithoutFocus(prev), snapshot.WithoutFocus(s.refs.Text())))
	echoOnly := false
	if echo != "" && diff != "" {
		lines := strings.Split(diff, "\n")
		lines = slices.DeleteFunc(lines, func(l string) bool { return strings.HasPrefix(l, "~ ") && strings.HasSuffix(l, echo) })
		diff, echoOnly = strings.Join(lines, "\n"), len(lines) == 0
	}
	if diff != "" && len(diff) >= len(text) {
		return "The page now:\n" + text
	}
	// The model is shown no fold of this tree: an expand still means the
	// folds of the last tree it was shown.
	s.refs.KeepFolds(prevFolds)
	switch {
	case echoOnly:
		return "Nothing else changed."
	case diff == "":
		return "The page's tree did not change."
	}
	return changesHead + diff
}

// changesHead heads the lines an action changed (snapshot.Compact): the
// refs of the last snapshot that are not among them still hold.
const changesHead = "Changes (+ new, - gone, ~ now; other refs hold):\n"

// changesNote puts the changes after an action's result line.
func changesNote(changes string) string {
	if changes == "" {
		return ""
	}
	return "\n\n" + changes
}
