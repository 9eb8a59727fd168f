package snapshot

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hybroute/hybroute/agent/internal/modeltext"
)

// A snapshot folds the repeated structures of a page (a catalogue's list
// items, a table's rows, a select's options): of a run of at least foldMin
// siblings of the same shape it shows the first foldShow and, in their
// place, one line that says how many more there are and the call that
// shows them:
//
//   - … 297 more listitem like these: browser_snapshot {"expand":"f1"}
//
// A card built of elements without a role (a div's heading, text and
// button) reads as a group of siblings; a group that repeats, with
// something to act on in it, folds the same way, a group at a time:
//
//   - … 27 more heading+paragraph+button like these: browser_snapshot {"expand":"f2"}
//
// The model reads the pattern and the count for a few lines, and the rest
// is one call away. The ref table still holds every ref of the tree.
const (
	foldMin  = 8
	foldShow = 3
	// maxGroup is the most siblings a repeated group has.
	maxGroup = 4
)

// foldRoles are the roles of repeated units. Prose (paragraphs, headings)
// and form controls are never folded: they are read or acted on one by
// one.
var foldRoles = map[string]bool{
	"listitem": true, "row": true, "option": true, "article": true, "treeitem": true, "link": true,
	"img": true, "figure": true, "term": true, "definition": true, "menuitem": true, "ListBoxOption": true,
	"MenuListOption": true,
}

// formRoles are the fields of a form: a form of many fields is filled
// field by field, and is never folded.
var formRoles = map[string]bool{
	"textbox": true, "searchbox": true, "combobox": true, "listbox": true, "checkbox": true, "radio": true,
	"spinbutton": true, "slider": true, "switch": true,
}

// fold is one run of similar siblings the text leaves out.
type fold struct {
	id     string  // f1, f2, … in document order
	hidden []*item // the siblings the text leaves out
	unit   int     // siblings a repetition has: 1, or a group's
	// sig recognises the run in a later tree of the page (a list that
	// grew is the same list): its first hidden item as it prints.
	sig string
}

// folds are the runs of a tree, by the first item each leaves out.
type folds struct {
	byFirst map[*item]*fold
	list    []*fold
}

// findFolds finds the runs of items (and of everything under them) that
// a snapshot folds.
func findFolds(items []*item) *folds {
	f := &folds{byFirst: map[*item]*fold{}}
	f.scan(items)
	return f
}

func (f *folds) scan(items []*item) {
	var shapes []string // of any role, for the groups; made when needed
	for i := 0; i < len(items); {
		j := i + 1
		if shape := shapeOf(items[i]); shape != "" {
			for j < len(items) && shapeOf(items[j]) == shape {
				j++
			}
			if j-i >= foldMin {
				f.add(items[i+foldShow:j], 1)
			}
		}
		if j-i < foldMin && len(items)-i >= foldMin*2 {
			if shapes == nil {
				shapes = make([]string, len(items))
				for k, it := range items {
					shapes[k] = looseShape(it)
				}
			}
			if p, n := group(items[i:], shapes[i:]); n >= foldMin {
				j = i + n*p
				f.add(items[i+foldShow*p:j], p)
			}
		}
		for _, it := range items[i:j] {
			f.scan(it.children)
		}
		i = j
	}
}

func (f *folds) add(hidden []*item, unit int) {
	fd := &fold{id: "f" + strconv.Itoa(len(f.list)+1), hidden: hidden, unit: unit, sig: itemText(hidden[0])}
	f.byFirst[hidden[0]] = fd
	f.list = append(f.list, fd)
}

// group finds a group of 2 to maxGroup siblings at the start of items
// that repeats right after itself, and holds something to act on: its
// length and how many times it is there in a row.
func group(items []*item, shapes []string) (size, times int) {
	for p := 2; p <= maxGroup && 2*p <= len(items); p++ {
		if !actionable(items[:p]) || uniform(shapes[:p]) || slices.ContainsFunc(items[:p], func(it *item) bool { return formRoles[it.role] }) {
			continue
		}
		n := 1
		for (n+1)*p <= len(items) && slices.Equal(shapes[n*p:(n+1)*p], shapes[:p]) {
			n++
		}
		if n >= foldMin {
			return p, n
		}
	}
	return 0, 0
}

// actionable: an item or a child of one has a ref.
func actionable(items []*item) bool {
	for _, it := range items {
		if it.ref != "" || slices.ContainsFunc(it.children, func(c *item) bool { return c.ref != "" }) {
			return true
		}
	}
	return false
}

// uniform: all the shapes are one (a run, not a group).
func uniform(shapes []string) bool {
	for _, s := range shapes[1:] {
		if s != shapes[0] {
			return false
		}
	}
	return true
}

// looseShape is shapeOf for an item of any role.
func looseShape(it *item) string {
	if it.text != "" {
		return "text"
	}
	var b strings.Builder
	b.WriteString(it.role)
	for _, c := range it.children {
		b.WriteByte(' ')
		if c.text != "" {
			b.WriteString("text")
		} else {
			b.WriteString(c.role)
		}
	}
	return b.String()
}

// shapeOf is what makes siblings alike: the role and the roles of the
// children; "" for an item that is never folded alone.
func shapeOf(it *item) string {
	if it.text != "" || !foldRoles[it.role] {
		return ""
	}
	return looseShape(it)
}

// itemText is the text an item prints as, up to its first 500 bytes.
func itemText(it *item) string {
	var b strings.Builder
	write(&b, it, 0, 0, nil)
	return modeltext.Cut(b.String(), 500)
}

// foldLine is the line that stands for a fold's items from index from.
func foldLine(fd *fold, from int) string {
	id := fd.id
	if from > 0 {
		id += ":" + strconv.Itoa(from)
	}
	roles := make([]string, fd.unit)
	for i, it := range fd.hidden[:fd.unit] {
		roles[i] = cmp.Or(it.role, "text")
	}
	return fmt.Sprintf(`- … %d more %s like these: browser_snapshot {"expand":"%s"}`, fd.count()-from, strings.Join(roles, "+"), id)
}

// count is how many repetitions the fold leaves out.
func (fd *fold) count() int { return len(fd.hidden) / fd.unit }

// at is the fold whose first hidden item is it, if any.
func (f *folds) at(it *item) *fold {
	if f == nil {
		return nil
	}
	return f.byFirst[it]
}

// sigs are the signatures of the folds, in the order of their ids.
func (f *folds) sigs() []string {
	out := make([]string, len(f.list))
	for i, fd := range f.list {
		out[i] = fd.sig
	}
	return out
}

// expandFold renders the items of a fold of the last snapshot (id, or
// id:from for the items from that index on), within limit bytes: past
// it, a fold line offers the rest. last are the signatures of the last
// snapshot's folds: the fold is found by its signature, so a page that
// changed elsewhere still finds it.
func expandFold(f *folds, last []string, expand string, limit int) (string, error) {
	id, fromText, paged := strings.Cut(strings.TrimSpace(expand), ":")
	from := 0
	if paged {
		n, err := strconv.Atoi(fromText)
		if err != nil || n < 0 {
			return "", modeltext.Errorf("expand %s: write a fold's id as the snapshot gives it, e.g. f1 or f1:40", modeltext.Quote(expand, 100))
		}
		from = n
	}
	n, err := strconv.Atoi(strings.TrimPrefix(id, "f"))
	if err != nil || !strings.HasPrefix(id, "f") || n < 1 || n > len(last) {
		return "", modeltext.Errorf("expand %s: the last snapshot has no such fold; call browser_snapshot and use an expand it offers", modeltext.Quote(expand, 100))
	}
	var fd *fold
	for _, c := range f.list {
		if c.sig == last[n-1] && (fd == nil || c.id == id) {
			fd = c
		}
	}
	if fd == nil {
		return "", modeltext.Errorf("expand %s: those items are no longer in the page as they were (it changed since); call browser_snapshot again", modeltext.Quote(expand, 100))
	}
	if from >= fd.count() {
		return "", modeltext.Errorf("expand %s: the fold has %d items (from 0 to %d)", modeltext.Quote(expand, 100), fd.count(), fd.count()-1)
	}
	var b strings.Builder
	for i := from; i < fd.count(); i++ {
		mark := b.Len()
		for _, it := range fd.hidden[i*fd.unit : (i+1)*fd.unit] {
			write(&b, it, 0, 0, f)
		}
		if limit > 0 && b.Len() > limit && i > from {
			// The items before this one, the first of them cut if it alone
			// is past the limit, and the line that offers the rest.
			return Truncate(strings.TrimRight(b.String()[:mark], "\n"), limit) + "\n" + foldLine(fd, i), nil
		}
	}
	return Truncate(strings.TrimRight(b.String(), "\n"), limit), nil
}
