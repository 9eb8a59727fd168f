package snapshot

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hybroute/hybroute/agent/internal/modeltext"
)

// Options shape the text a snapshot returns. The ref table always
// covers the whole tree, so a shaped snapshot leaves every ref usable.
type Options struct {
	Depth int    // levels shown; 0: all
	Ref   string // the subtree of this ref of the last snapshot
	Find  string // only what contains this text, with the path to it
	Limit int    // bytes of text; 0: no cut
	// Expand shows the items of a fold of the last snapshot (fold.go),
	// by the id it gave: f1, or f1:40 for its items from index 40 on.
	Expand string
	// Unfolded shows every run whole (a snapshot written to a file).
	Unfolded bool
}

// renderItems writes the items as snapshot text, no deeper than o.Depth,
// with the runs of f folded (nil: none).
func renderItems(items []*item, o Options, f *folds) string {
	var b strings.Builder
	writeList(&b, items, 0, o.Depth, f)
	return strings.TrimRight(b.String(), "\n")
}

// selectItems is the text o asks for: full is the whole tree's text, f
// the runs a snapshot of the whole tree folds.
func selectItems(items []*item, full string, o Options, f *folds) (string, error) {
	if len(items) == 0 {
		return "(the page is empty)", nil
	}
	text := full
	if o.Ref == "" && o.Find == "" && o.Depth == 0 && !o.Unfolded && f != nil && len(f.list) > 0 {
		text = renderItems(items, o, f)
	}
	if o.Ref != "" || o.Find != "" || o.Depth > 0 {
		roots := items
		if o.Ref != "" {
			ref := refName(o.Ref)
			it := findRef(items, ref)
			if it == nil {
				return "", modeltext.Errorf("ref %q is not in the page as it is now; call browser_snapshot without ref and use a ref from it", ref)
			}
			roots = []*item{it}
		}
		if o.Find != "" {
			roots = prune(roots, strings.ToLower(o.Find))
			if len(roots) == 0 {
				return fmt.Sprintf("(nothing in the page contains %s)", modeltext.Quote(o.Find, 200)), nil
			}
		}
		text = renderItems(roots, o, nil)
	}
	if text == "" {
		return "(the page is empty)", nil
	}
	return Truncate(text, o.Limit), nil
}

func findRef(items []*item, ref string) *item {
	for _, it := range items {
		if it.ref == ref {
			return it
		}
		if f := findRef(it.children, ref); f != nil {
			return f
		}
	}
	return nil
}

// prune keeps the items that contain find (lower case) whole, each inside
// the whole of its nearest surrounding unit (contextRoles: its table row,
// list item, form) where that is not large, and the items above them with
// only the children that lead there; a table keeps its header row, so a
// cell found is read with its column's name.
func prune(items []*item, find string) []*item {
	out, _ := pruneUnits(items, find)
	return out
}

// pruneUnits is prune; bare reports a match kept that no unit holds yet.
func pruneUnits(items []*item, find string) (out []*item, bare bool) {
	for _, it := range items {
		if matches(it, find) {
			out = append(out, it)
			bare = bare || !contextRoles[it.role]
			continue
		}
		kids, kidsBare := pruneUnits(it.children, find)
		if len(kids) == 0 {
			continue
		}
		if kidsBare && contextRoles[it.role] && countItems(it.children) <= maxUnitItems {
			out = append(out, it)
			continue
		}
		if tableRoles[it.role] {
			if h := headerRow(it.children); h != nil && !slices.Contains(kids, h) {
				kids = append([]*item{h}, kids...)
			}
		}
		cp := *it
		cp.children = kids
		out = append(out, &cp)
		bare = bare || kidsBare
	}
	return out, bare
}

// maxUnitItems bounds the unit a match is shown in: a form that is the
// whole page is no surrounding.
const maxUnitItems = 200

// contextRoles are the units a match is shown whole inside of: what is
// found in them is read with what stands beside it.
var contextRoles = map[string]bool{"row": true, "listitem": true, "form": true, "article": true, "treeitem": true}

var tableRoles = map[string]bool{"table": true, "grid": true, "treegrid": true}

// headerRow is the first row of a table's children (or of their row
// groups) that holds a column header, nil if none does.
func headerRow(items []*item) *item {
	for _, it := range items {
		switch it.role {
		case "row":
			if slices.ContainsFunc(it.children, func(c *item) bool { return c.role == "columnheader" }) {
				return it
			}
		case "rowgroup":
			if h := headerRow(it.children); h != nil {
				return h
			}
		}
	}
	return nil
}

// matches reports whether the item's text as write shows it contains
// find: a link's URL redacted and cut, so that find cannot ask about a
// credential the model is never shown.
func matches(it *item, find string) bool {
	shownURL := ""
	if it.url != "" {
		shownURL = modeltext.Cut(modeltext.URL(it.url), 500)
	}
	for _, s := range [...]string{it.text, modeltext.Cut(it.name, 300), modeltext.Cut(it.value, 500), it.role, shownURL} {
		if s != "" && strings.Contains(strings.ToLower(s), find) {
			return true
		}
	}
	return false
}

func countItems(items []*item) int {
	n := len(items)
	for _, it := range items {
		n += countItems(it.children)
	}
	return n
}
