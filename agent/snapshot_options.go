package agent

import (
	"fmt"
	"strings"

	"github.com/hybroute/hybroute/agent/internal/modeltext"
)

// snapOptions shape what browser_snapshot returns. The ref table always
// covers the whole tree, so a shaped snapshot leaves every ref usable.
type snapOptions struct {
	depth int    // levels shown; 0: all
	ref   string // the subtree of this ref of the last snapshot
	find  string // only what contains this text, with the path to it
	limit int    // bytes of text; 0: no cut
}

// snapshotArgs are browser_snapshot's arguments.
type snapshotArgs struct {
	Depth *int   `json:"depth"`
	Ref   string `json:"ref"`
	Find  string `json:"find"`
	File  string `json:"file"`
}

// snapshotSchema is browser_snapshot's input schema.
const snapshotSchema = `{"type":"object","properties":{` +
	`"depth":{"type":"integer","minimum":1,"description":"Show only this many levels of the tree (1: the top level); deeper parts are counted, not shown"},` +
	`"ref":{"type":"string","description":"Show only the subtree of this element, by its ref from the last snapshot, e.g. e12"},` +
	`"find":{"type":"string","description":"Show only the elements whose role, name, value, text or link contains this text (any case), with the elements above them and everything inside them"},` +
	`"file":{"type":"string","description":"Write the snapshot to this file name in the directory the operator allows, instead of returning it; the result says where. Only a plain file name, no directories"}` +
	`},"additionalProperties":false}`

func (a snapshotArgs) options(limit int) (snapOptions, error) {
	o := snapOptions{ref: strings.TrimSpace(a.Ref), find: strings.TrimSpace(a.Find), limit: limit}
	if a.Depth != nil {
		if *a.Depth < 1 {
			return o, modeltext.Errorf("depth %d: give 1 or more (1 shows the top level only), or leave it out for the whole tree", *a.Depth)
		}
		o.depth = *a.Depth
	}
	if a.File != "" {
		o.limit = 0 // a file holds the whole tree
	}
	return o, nil
}

// renderItems writes the items as snapshot text, no deeper than o.depth.
func renderItems(items []*item, o snapOptions) string {
	var b strings.Builder
	for _, it := range items {
		write(&b, it, 0, o.depth)
	}
	return strings.TrimRight(b.String(), "\n")
}

// selectItems is the text o asks for: full is the whole tree's text.
func selectItems(items []*item, full string, o snapOptions) (string, error) {
	if len(items) == 0 {
		return "(the page is empty)", nil
	}
	text := full
	if o.ref != "" || o.find != "" || o.depth > 0 {
		roots := items
		if o.ref != "" {
			ref := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(o.ref, "[ref="), "ref="), "]")
			it := findRef(items, ref)
			if it == nil {
				return "", modeltext.Errorf("ref %q is not in the page as it is now; call browser_snapshot without ref and use a ref from it", ref)
			}
			roots = []*item{it}
		}
		if o.find != "" {
			roots = prune(roots, strings.ToLower(o.find))
			if len(roots) == 0 {
				return fmt.Sprintf("(nothing in the page contains %s)", modeltext.Quote(o.find, 200)), nil
			}
		}
		text = renderItems(roots, o)
	}
	if text == "" {
		return "(the page is empty)", nil
	}
	return truncate(text, o.limit), nil
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

// prune keeps the items that contain find (lower case) whole, and the
// items above them with only the children that lead there.
func prune(items []*item, find string) []*item {
	var out []*item
	for _, it := range items {
		if matches(it, find) {
			out = append(out, it)
			continue
		}
		if kids := prune(it.children, find); len(kids) > 0 {
			cp := *it
			cp.children = kids
			out = append(out, &cp)
		}
	}
	return out
}

func matches(it *item, find string) bool {
	for _, s := range [...]string{it.text, it.name, it.value, it.role, it.url} {
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
