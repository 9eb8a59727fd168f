package snapshot

import (
	"fmt"
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
// The model reads the pattern and the count for a few lines, and the rest
// is one call away. The ref table still holds every ref of the tree.
const (
	foldMin  = 8
	foldShow = 3
)

// foldRoles are the roles of repeated units. Prose (paragraphs, headings)
// and form controls are never folded: they are read or acted on one by
// one.
var foldRoles = map[string]bool{
	"listitem": true, "row": true, "option": true, "article": true, "treeitem": true, "link": true,
	"img": true, "figure": true, "term": true, "definition": true, "menuitem": true, "ListBoxOption": true,
	"MenuListOption": true,
}

// fold is one run of similar siblings the text leaves out.
type fold struct {
	id     string  // f1, f2, … in document order
	hidden []*item // the siblings the text leaves out
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
	for i := 0; i < len(items); {
		j := i + 1
		if shape := shapeOf(items[i]); shape != "" {
			for j < len(items) && shapeOf(items[j]) == shape {
				j++
			}
			if j-i >= foldMin {
				hidden := items[i+foldShow : j]
				fd := &fold{id: "f" + strconv.Itoa(len(f.list)+1), hidden: hidden}
				fd.sig = itemText(hidden[0])
				f.byFirst[hidden[0]] = fd
				f.list = append(f.list, fd)
			}
		}
		for _, it := range items[i:j] {
			f.scan(it.children)
		}
		i = j
	}
}

// shapeOf is what makes siblings alike: the role and the roles of the
// children; "" for an item that is never folded.
func shapeOf(it *item) string {
	if it.text != "" || !foldRoles[it.role] {
		return ""
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
	return fmt.Sprintf(`- … %d more %s like these: browser_snapshot {"expand":"%s"}`, len(fd.hidden)-from, fd.hidden[0].role, id)
}

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
	if from >= len(fd.hidden) {
		return "", modeltext.Errorf("expand %s: the fold has %d items (from 0 to %d)", modeltext.Quote(expand, 100), len(fd.hidden), len(fd.hidden)-1)
	}
	var b strings.Builder
	for i := from; i < len(fd.hidden); i++ {
		mark := b.Len()
		write(&b, fd.hidden[i], 0, 0, f)
		if limit > 0 && b.Len() > limit && i > from {
			// The items before this one, the first of them cut if it alone
			// is past the limit, and the line that offers the rest.
			return Truncate(strings.TrimRight(b.String()[:mark], "\n"), limit) + "\n" + foldLine(fd, i), nil
		}
	}
	return Truncate(strings.TrimRight(b.String(), "\n"), limit), nil
}
