// Package snapshot is the toolset's snapshot engine: it reads a tab's
// page as text, names its elements by refs, resolves a ref back to its
// element, and says what an action changed.
package snapshot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute/agent/internal/modeltext"
)

// A snapshot is the page's accessibility tree as compact text, one node a
// line, indented by depth, in the form models already know from
// playwright-mcp's aria snapshots:
//
//	- heading "Orders" [level=1]
//	- textbox "Search" [ref=e3]: shoes
//	- button "Go" [ref=e4]
//	- link "Next page" [ref=e5]:
//	  - /url: /orders?page=2
//	- paragraph: Showing 20 of 312 orders
//
// Every interactive node (a control role, or anything focusable) carries a
// ref that browser_click and browser_type take. The tree is read in the
// page (walk.js), where a ref names the element in a registry of
// the walk's isolated world, which lives as long as the document does; the
// same element keeps its ref across snapshots of the same tab. Where the
// walk cannot run, Chromium's AX tree is read instead, and a ref names the
// node's backend DOM node id.

// Entry is what a ref stands for.
type Entry struct {
	node cdp.BackendNodeID // 0: a ref of the in-page walk, found in its frame's registry
	// frame is the frame whose walk named the ref; empty for the main
	// frame.
	frame cdp.FrameID
	// oopif is the target of the frame of another site the node is in;
	// empty for a node of the tab's own target.
	oopif target.ID
	// ctx, once resolved, runs commands on the node's target when that is
	// not the tab's (a frame of another site).
	ctx  context.Context
	role string
	name string
}

// Node is the element's backend DOM node id, once the ref is resolved.
func (e Entry) Node() cdp.BackendNodeID { return e.node }

// CrossSite: the element is in a frame of another site, a target of its
// own, whose coordinates are not the page's.
func (e Entry) CrossSite() bool { return e.oopif != "" }

// Role is the element's role, as the snapshot showed it.
func (e Entry) Role() string { return e.role }

// Name is the element's accessible name, as the snapshot showed it.
func (e Entry) Name() string { return e.name }

// In is the context that reaches the node: the frame's own target, or
// the tab's.
func (e Entry) In(ctx context.Context) context.Context {
	if e.ctx != nil {
		return e.ctx
	}
	return ctx
}

// Refs maps the refs of a session's last snapshot to DOM nodes. It
// belongs to one tab: refs of another tab's snapshot do not resolve.
type Refs struct {
	target target.ID
	doc    cdp.LoaderID // the document the snapshot was taken of
	byRef  map[string]Entry
	byNode map[cdp.BackendNodeID]string
	next   int
	// text is the whole tree as text (no option, no cut): what the next
	// action's changes are reported against. Empty when the page was too
	// large to take in whole (partial).
	text string
	// folds are the signatures of the runs the last snapshot folded, by
	// their ids (fold.go).
	folds []string
	// partial: the snapshot took in only part of the page's tree, so
	// byRef holds only the refs of that part; the others are found in
	// the main frame's registry in the page.
	partial bool
}

// Text is the whole tree of the last snapshot as text (no option, no
// cut): what the next action's changes are reported against.
func (t *Refs) Text() string { return t.text }

// Doc is the document the last snapshot was taken of.
func (t *Refs) Doc() cdp.LoaderID { return t.doc }

// KeepFolds gives the folds of the snapshot taken before the last back
// to the table, for a snapshot the model was shown only as changes: the
// fold ids it knows are that one's.
func (t *Refs) KeepFolds(before []string) { t.folds = before }

// Folds are the signatures of the folds the last snapshot shown whole
// has, by id (for KeepFolds).
func (t *Refs) Folds() []string { return t.folds }

// Target is the tab the last snapshot was taken in.
func (t *Refs) Target() target.ID { return t.target }

// Resolve resolves a ref of the last snapshot in tab id, if the tab still
// shows the document the snapshot was taken of: backend node ids are not
// unique across documents (a new renderer counts afresh, and a page in the
// back/forward cache keeps its nodes alive), so a ref of another document
// could name an unrelated node.
func (t *Refs) Resolve(ctx context.Context, ref string, id target.ID) (Entry, error) {
	e, err := t.lookup(ref, id)
	if err != nil {
		return e, err
	}
	doc, main, err := DocumentID(ctx)
	if err != nil {
		return Entry{}, err
	}
	if doc != t.doc {
		return Entry{}, modeltext.Errorf("ref %q is from a snapshot of a previous page (the page changed since); call browser_snapshot again", ref)
	}
	if e.node == 0 && e.role == "" && e.frame == "" && e.oopif == "" {
		// A ref of a tree taken in part (lookup): the main frame's
		// registry knows it, or it is not in the last snapshot.
		if e, err = pageEntry(ctx, ref, main); err != nil {
			return Entry{}, err
		}
	}
	if e.node == 0 {
		nctx := ctx
		if e.oopif != "" {
			// The session with the frame's target ends with the call.
			fctx, cancel, err := frameTarget(ctx, cdp.FrameID(e.oopif))
			if err != nil {
				return Entry{}, modeltext.Errorf("ref %q is in a frame of another site that is no longer there; call browser_snapshot again", ref)
			}
			context.AfterFunc(ctx, cancel)
			nctx, e.ctx, main = fctx, fctx, cdp.FrameID(e.oopif)
		}
		if e.node, err = pageNode(nctx, ref, e, main); err != nil {
			return Entry{}, err
		}
	}
	return e, nil
}

// DocumentID names the document the tab's main frame shows, and the
// frame.
func DocumentID(ctx context.Context) (cdp.LoaderID, cdp.FrameID, error) {
	ft, err := chromedp.Call(ctx, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		return "", "", err
	}
	if ft.FrameTree == nil || ft.FrameTree.Frame == nil {
		return "", "", nil
	}
	return ft.FrameTree.Frame.LoaderID, ft.FrameTree.Frame.ID, nil
}

// lookup finds a ref of the last snapshot in tab id.
func (t *Refs) lookup(ref string, id target.ID) (Entry, error) {
	ref = refName(strings.TrimSpace(ref))
	if t.byRef == nil {
		return Entry{}, modeltext.Errorf("ref %q: there is no snapshot of this page yet; call browser_snapshot first and use a ref from it", ref)
	}
	if t.target != id {
		return Entry{}, modeltext.Errorf("ref %q is from a snapshot of another tab (the session changed tabs or browsers since); call browser_snapshot again", ref)
	}
	e, ok := t.byRef[ref]
	if !ok && t.partial && strings.HasPrefix(ref, "e") {
		return Entry{}, nil // resolved in the page (Resolve)
	}
	if !ok {
		return Entry{}, modeltext.Errorf("ref %q is not in the last snapshot; call browser_snapshot again and use a ref from it", ref)
	}
	return e, nil
}

// interactiveRoles get a ref whether or not the browser calls them
// focusable (a disabled button is still worth naming).
var interactiveRoles = map[string]bool{
	"button": true, "link": true, "textbox": true, "searchbox": true, "checkbox": true,
	"radio": true, "combobox": true, "listbox": true, "option": true, "menuitem": true,
	"menuitemcheckbox": true, "menuitemradio": true, "tab": true, "switch": true,
	"slider": true, "spinbutton": true, "treeitem": true, "ListBoxOption": true,
	"DisclosureTriangle": true, "MenuListOption": true,
}

// transparentRoles are containers that say nothing by themselves: without a
// name their children take their place.
var transparentRoles = map[string]bool{
	"none": true, "generic": true, "presentation": true, "LabelText": true,
	"GenericContainer": true, "Section": true, "LayoutTable": true, "LayoutTableRow": true,
	"LayoutTableCell": true, "Pre": true, "Abbr": true, "Ruby": true, "MenuListPopup": true,
}

// item is one node of the tree as it is printed.
type item struct {
	text     string // a text run: printed as "- text: ..." or inline
	more     int    // items under it the page's depth cut left out (walk.js)
	role     string
	name     string
	value    string
	url      string
	attrs    []string
	ref      string
	children []*item
}

type snapshotter struct {
	old     *Refs
	refs    Refs
	pageURL *url.URL
	// frames are the AX trees of the child frames, by the backend node id
	// of the iframe element that holds each.
	frames map[cdp.BackendNodeID]*axDoc
}

// axDoc is the AX tree of one document.
type axDoc struct {
	nodes map[accessibility.NodeID]*accessibility.Node
	root  *accessibility.Node
	// elsewhere: the frame's document is in another process (a site of
	// its own): its tree is not in this target.
	elsewhere bool
}

func newAXDoc(nodes []*accessibility.Node) *axDoc {
	d := &axDoc{nodes: make(map[accessibility.NodeID]*accessibility.Node, len(nodes))}
	for _, n := range nodes {
		d.nodes[n.NodeID] = n
		if d.root == nil && n.ParentID == "" {
			d.root = n
		}
	}
	return d
}

// Shot is a snapshot's text and what it read of the page.
type Shot struct {
	Text string
	// Title is the page's title, when TitleRead: the read of the tree
	// gave it, without a round trip of its own.
	Title     string
	TitleRead bool
}

// Take reads the accessibility tree of the tab of ctx, with its frames',
// and renders it as o asks; refs, the session's ref table, then holds the
// refs of the whole tree. worlds knows the walk's world in the tab;
// pageURL is the page's URL as the caller last saw it.
func Take(ctx context.Context, worlds *Worlds, refs *Refs, tab target.ID, pageURL string, o Options) (Shot, error) {
	if w, ok := worlds.Get(tab); ok {
		// The refs are keyed by the document the frame tree names, which
		// is what an action checks them against; it is read while the
		// walk runs, and a document other than the events' one (they have
		// not told of a navigation yet) sends the snapshot the long way.
		cur := make(chan cdp.LoaderID, 1)
		go func() {
			doc, _, _ := DocumentID(ctx)
			cur <- doc
		}()
		old := *refs
		if old.target != tab {
			old.next = 0
		}
		items, next, title, st, err := walkSnapshot(ctx, cdp.FrameID(tab), world{unique: w.ID}, &old, tab, w.URL, o)
		doc := <-cur
		if err == nil && doc == w.Doc {
			return keepWalk(refs, items, next, doc, o, title, st)
		}
		if err != nil && !errors.Is(err, errWalk) {
			return Shot{}, err
		}
		// The world went with its document, or the frame shows another
		// one: the long way finds the page as it is now.
		worlds.forget(tab)
	}
	// A tab's main frame has the tab's target id: its world is asked for
	// while the frame tree is read, not after.
	worldID := make(chan runtime.ExecutionContextID, 1)
	go func() {
		id, _ := worldIn(ctx, cdp.FrameID(tab))
		worldID <- id
	}()
	ft, err := chromedp.Call(ctx, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		return Shot{}, err
	}
	var doc cdp.LoaderID
	var main cdp.FrameID
	if ft.FrameTree != nil && ft.FrameTree.Frame != nil {
		doc, main, pageURL = ft.FrameTree.Frame.LoaderID, ft.FrameTree.Frame.ID, ft.FrameTree.Frame.URL
	}
	old := *refs
	if old.target != tab {
		old.next = 0
	}
	var mainWorld world
	if main == cdp.FrameID(tab) {
		mainWorld.id = <-worldID
	}
	items, next, title, st, err := walkSnapshot(ctx, main, mainWorld, &old, tab, pageURL, o)
	if err == nil {
		return keepWalk(refs, items, next, doc, o, title, st)
	}
	if !errors.Is(err, errWalk) {
		return Shot{}, err
	}
	// The walk could not run (a document between two states, a frame
	// torn down): Chromium's AX tree still reads the page, if it is one
	// whose tree is not too large for one message.
	if err := axFits(ctx); err != nil {
		return Shot{}, err
	}
	ax, err := chromedp.Call(ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		return Shot{}, err
	}
	// The web area's name is the document's title: the where-line's,
	// without a round trip of its own.
	var titleRead bool
	for _, n := range ax.Nodes {
		if n.ParentID == "" {
			if axString(n.Role) == "RootWebArea" {
				title, titleRead = axString(n.Name), true
			}
			break
		}
	}
	frames := childFrames(ctx, ft.FrameTree)
	old = *refs
	if old.doc != doc {
		// Another document: its nodes are not this one's. The numbers go
		// on, so a ref of the old page never names a node of this one.
		old.byNode = nil
	}
	items, next = buildSnapshot(ax.Nodes, frames, &old, tab, pageURL)
	return keep(refs, items, next, doc, o, title, titleRead)
}

// keep makes next the session's ref table, refs, and renders the items as
// o asks.
func keep(refs *Refs, items []*item, next Refs, doc cdp.LoaderID, o Options, title string, titleRead bool) (Shot, error) {
	next.doc = doc
	next.text = renderItems(items, Options{}, nil)
	f := findFolds(items)
	next.folds = f.sigs()
	shot := Shot{Title: title, TitleRead: titleRead}
	var text string
	var err error
	if o.Expand != "" {
		text, err = expandFold(f, refs.folds, o.Expand, o.Limit)
	} else {
		text, err = selectItems(items, next.text, o, f)
	}
	if err != nil {
		// The page was read: its title stands, whatever o asked.
		return shot, err
	}
	*refs = next
	shot.Text = text
	return shot, nil
}

// maxAXElements is the most elements a document may have for its AX
// tree to be read whole, in one message: Chromium's full tree of a page
// of 100,000 items is tens of megabytes, which the process would take in
// at once.
const maxAXElements = 20000

// axFits tells whether the AX tree of the tab's document can be read
// whole: it can when its elements are few enough, or cannot be counted.
func axFits(ctx context.Context) error {
	r, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{Expression: "document.getElementsByTagName('*').length", ReturnByValue: new(true)})
	if err != nil || r.ExceptionDetails != nil || r.Result == nil {
		return nil
	}
	n, err := strconv.Atoi(string(r.Result.Value))
	if err != nil || n <= maxAXElements {
		return nil
	}
	return modeltext.Errorf("the page (%d elements) could not be read in the page and is too large to read otherwise; take the snapshot again", n)
}

// keepWalk keeps the refs and renders the items of an in-page walk. A
// tree the page shaped itself (too large to take in whole) is rendered
// as it came, cut at o.Limit with the count of lines the page gave; a
// tree taken in part leaves no text to report changes against.
func keepWalk(refs *Refs, items []*item, next Refs, doc cdp.LoaderID, o Options, title string, st *walkState) (Shot, error) {
	sel := st.shaped
	if sel == nil {
		shot, err := keep(refs, items, next, doc, o, title, true)
		if err == nil && st.partial {
			refs.text = ""
		}
		return shot, err
	}
	shot := Shot{Title: title, TitleRead: true}
	var text string
	switch {
	case sel.Missing:
		return shot, modeltext.Errorf("ref %q is not in the page as it is now; call browser_snapshot without ref and use a ref from it", refName(o.Ref))
	case o.Expand != "":
		return shot, modeltext.Errorf("expand %s: the page is too large to fold; read a part of it with find or ref", modeltext.Quote(o.Expand, 100))
	case sel.Nothing:
		text = fmt.Sprintf("(nothing in the page contains %s)", modeltext.Quote(o.Find, 200))
	default:
		text = renderItems(items, Options{Depth: o.Depth}, nil)
		if text == "" {
			text = "(the page is empty)"
		} else {
			text = truncateLines(text, o.Limit, sel.Lines)
		}
	}
	next.doc = doc
	*refs = next
	shot.Text = text
	return shot, nil
}

// childFrames reads the AX trees of the frames under ft, by the iframe
// element that holds each. A frame of another site lives in a process of
// its own (site isolation), with its own target: its tree is marked as
// elsewhere.
func childFrames(ctx context.Context, ft *page.FrameTree) map[cdp.BackendNodeID]*axDoc {
	if ft == nil || len(ft.ChildFrames) == 0 {
		return nil
	}
	out := make(map[cdp.BackendNodeID]*axDoc)
	var walk func(*page.FrameTree)
	walk = func(ft *page.FrameTree) {
		for _, cf := range ft.ChildFrames {
			if cf == nil || cf.Frame == nil {
				continue
			}
			owner, err := chromedp.Call(ctx, dom.GetFrameOwner, dom.GetFrameOwnerParams{FrameID: cf.Frame.ID})
			if err != nil || owner.BackendNodeID == 0 {
				continue
			}
			ax, err := chromedp.Call(ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{FrameID: cf.Frame.ID})
			if err != nil {
				out[owner.BackendNodeID] = &axDoc{elsewhere: true}
				continue
			}
			out[owner.BackendNodeID] = newAXDoc(ax.Nodes)
			walk(cf)
		}
	}
	walk(ft)
	return out
}

// renderSnapshot renders the nodes of a full AX tree (the first is the
// root) within limit bytes and returns the text and the refs it named. old
// is the previous ref table: a node it named in the same tab keeps its ref.
func renderSnapshot(nodes []*accessibility.Node, old *Refs, tab target.ID, pageURL string, limit int) (string, Refs) {
	items, refs := buildSnapshot(nodes, nil, old, tab, pageURL)
	text, _ := selectItems(items, renderItems(items, Options{}, nil), Options{Limit: limit}, nil)
	return text, refs
}

// buildSnapshot turns the main frame's AX nodes and its frames' trees into
// the items that print, naming the refs.
func buildSnapshot(nodes []*accessibility.Node, frames map[cdp.BackendNodeID]*axDoc, old *Refs, tab target.ID, pageURL string) ([]*item, Refs) {
	sn := &snapshotter{
		old:    old,
		frames: frames,
		refs: Refs{
			target: tab,
			byRef:  make(map[string]Entry),
			byNode: make(map[cdp.BackendNodeID]string),
			next:   1,
		},
	}
	if old != nil && old.target == tab && old.next > 0 {
		sn.refs.next = old.next
	}
	sn.pageURL, _ = url.Parse(pageURL)
	d := newAXDoc(nodes)
	if d.root == nil {
		return nil, sn.refs
	}
	return sn.rootItems(d, 0), sn.refs
}

// rootItems are the items of a document: its root's children when the
// root is the web area, which says nothing by itself.
func (sn *snapshotter) rootItems(d *axDoc, depth int) []*item {
	if axString(d.root.Role) == "RootWebArea" {
		return sn.children(d, d.root, depth)
	}
	return sn.build(d, d.root, depth)
}

// maxDepth bounds the recursion on pathological trees.
const maxDepth = 400

func (sn *snapshotter) children(d *axDoc, n *accessibility.Node, depth int) []*item {
	var out []*item
	for _, id := range n.ChildIDs {
		if c := d.nodes[id]; c != nil {
			out = append(out, sn.build(d, c, depth+1)...)
		}
	}
	return mergeText(out)
}

// build turns a node into the items that print for it: none, itself, or
// (for an ignored or transparent node) its children.
func (sn *snapshotter) build(d *axDoc, n *accessibility.Node, depth int) []*item {
	if depth > maxDepth {
		return nil
	}
	role := axString(n.Role)
	switch role {
	case "InlineTextBox", "ListMarker":
		return nil
	case "StaticText":
		if t := collapse(axString(n.Name)); t != "" {
			return []*item{{text: t}}
		}
		return nil
	}
	kids := sn.children(d, n, depth)
	name := collapse(axString(n.Name))
	var frameNote string
	if role == "Iframe" || role == "IframePresentational" {
		role = "iframe"
		switch f := sn.frames[n.BackendDOMNodeID]; {
		case f == nil && len(kids) == 0, f != nil && f.elsewhere:
			// Not a frame of this target: with site isolation, a frame of
			// another site is a target of its own.
			frameNote = "(a frame of another site, in a process of its own: its content is not in this snapshot)"
		case f.root != nil:
			kids = sn.rootItems(f, depth)
		}
	}
	focusable := false
	var attrs []string
	var linkURL string
	for _, p := range n.Properties {
		if p == nil || p.Value == nil {
			continue
		}
		v := axString(p.Value)
		switch p.Name {
		case accessibility.PropertyNameFocusable:
			focusable = v == "true"
		case accessibility.PropertyNameLevel:
			if role == "heading" {
				attrs = append(attrs, "level="+v)
			}
		case accessibility.PropertyNameChecked:
			switch v {
			case "true":
				attrs = append(attrs, "checked")
			case "mixed":
				attrs = append(attrs, "checked=mixed")
			}
		case accessibility.PropertyNamePressed:
			if v == "true" {
				attrs = append(attrs, "pressed")
			}
		case accessibility.PropertyNameSelected:
			if v == "true" {
				attrs = append(attrs, "selected")
			}
		case accessibility.PropertyNameExpanded:
			if v == "true" {
				attrs = append(attrs, "expanded")
			}
		case accessibility.PropertyNameDisabled:
			if v == "true" {
				attrs = append(attrs, "disabled")
			}
		case accessibility.PropertyNameFocused:
			if v == "true" && role != "RootWebArea" {
				attrs = append(attrs, "focused")
			}
		case accessibility.PropertyNameURL:
			if role == "link" {
				linkURL = sn.shortURL(v)
			}
		}
	}
	interactive := n.BackendDOMNodeID != 0 && role != "RootWebArea" && (interactiveRoles[role] || focusable)
	if (n.Ignored && role != "iframe") || (transparentRoles[role] && name == "" && !interactive) {
		return kids
	}
	it := &item{role: role, name: name, attrs: attrs, url: linkURL, value: joinValue(collapse(axString(n.Value)), frameNote)}
	if interactive {
		it.ref = sn.ref(n.BackendDOMNodeID, role, name)
	}
	// The text of a button or a link is its name: do not print it twice.
	if len(kids) == 1 && kids[0].text != "" && (name == "" || kids[0].text == name || kids[0].text == it.value) {
		if name == "" && kids[0].text != it.value {
			it.value = joinValue(it.value, kids[0].text)
		}
		kids = nil
	}
	it.children = kids
	return []*item{it}
}

// ref gives the node its ref: the one it had in the previous snapshot of
// the same tab, or the next number.
func (sn *snapshotter) ref(node cdp.BackendNodeID, role, name string) string {
	if r, ok := sn.refs.byNode[node]; ok {
		return r
	}
	r, ok := "", false
	if sn.old != nil && sn.old.target == sn.refs.target {
		r, ok = sn.old.byNode[node]
	}
	if !ok {
		r = "e" + strconv.Itoa(sn.refs.next)
		sn.refs.next++
	}
	sn.refs.byRef[r] = Entry{node: node, role: role, name: name}
	sn.refs.byNode[node] = r
	return r
}

// shortURL writes a link's URL relative to the page when it is on the same
// origin: shorter, and what the page's author wrote.
func (sn *snapshotter) shortURL(raw string) string { return shortURL(sn.pageURL, raw) }

func shortURL(base *url.URL, raw string) string {
	u, err := url.Parse(raw)
	if err != nil || base == nil || u.Scheme != base.Scheme || u.Host != base.Host || u.Opaque != "" {
		return raw
	}
	u.Scheme, u.Host, u.User = "", "", nil
	if s := u.String(); s != "" {
		return s
	}
	return raw
}

// mergeText joins adjacent text runs into one.
func mergeText(items []*item) []*item {
	out := items[:0]
	for _, it := range items {
		if it.text != "" && len(out) > 0 && out[len(out)-1].text != "" {
			prev := out[len(out)-1]
			prev.text = joinValue(prev.text, it.text)
			continue
		}
		out = append(out, it)
	}
	return out
}

func joinValue(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + " " + b
}

// write writes an item and its children at depth; max > 0 writes no
// deeper than max levels, and marks an item whose children it left out;
// f, when not nil, are the runs it folds.
func write(b *strings.Builder, it *item, depth, max int, f *folds) {
	writeIndent(b, depth)
	if it.text != "" {
		b.WriteString("- text: ")
		b.WriteString(it.text)
		b.WriteByte('\n')
		return
	}
	b.WriteString("- ")
	b.WriteString(it.role)
	if it.name != "" {
		b.WriteByte(' ')
		b.WriteString(modeltext.Quote(it.name, 300))
	}
	for _, a := range it.attrs {
		b.WriteString(" [")
		b.WriteString(a)
		b.WriteByte(']')
	}
	if it.ref != "" {
		b.WriteString(" [ref=")
		b.WriteString(it.ref)
		b.WriteByte(']')
	}
	if it.value != "" {
		b.WriteString(": ")
		b.WriteString(modeltext.Cut(it.value, 500))
	}
	if len(it.children) == 0 && it.more == 0 && it.url == "" {
		b.WriteByte('\n')
		return
	}
	if it.value == "" {
		b.WriteByte(':')
	}
	b.WriteByte('\n')
	if it.url != "" {
		writeIndent(b, depth+1)
		b.WriteString("- /url: ")
		b.WriteString(modeltext.Cut(modeltext.URL(it.url), 500))
		b.WriteByte('\n')
	}
	if it.more > 0 {
		writeIndent(b, depth+1)
		fmt.Fprintf(b, "- … %d more below\n", it.more)
		return
	}
	if max > 0 && depth+1 >= max && len(it.children) > 0 {
		writeIndent(b, depth+1)
		fmt.Fprintf(b, "- … %d more below\n", countItems(it.children))
		return
	}
	writeList(b, it.children, depth+1, max, f)
}

// writeList writes items at depth, each run of f as its first items and
// a line for the rest.
func writeList(b *strings.Builder, items []*item, depth, max int, f *folds) {
	for i := 0; i < len(items); i++ {
		c := items[i]
		if c.text != "" && (namesControl(items, i+1, c.text) || namesControl(items, i-1, c.text)) {
			continue // a label beside its control: the control's line names it
		}
		if fd := f.at(c); fd != nil {
			writeIndent(b, depth)
			b.WriteString(foldLine(fd, 0))
			b.WriteByte('\n')
			i += len(fd.hidden) - 1
			continue
		}
		write(b, c, depth, max, f)
	}
}

// namesControl reports whether items[i] is a control named text.
func namesControl(items []*item, i int, text string) bool {
	return i >= 0 && i < len(items) && items[i].ref != "" && items[i].name == text
}

func writeIndent(b *strings.Builder, depth int) {
	for range depth {
		b.WriteString("  ")
	}
}

// truncate cuts text at a line boundary within limit bytes and says so.
func Truncate(text string, limit int) string {
	if limit <= 0 || len(text) <= limit {
		return text
	}
	return truncateLines(text, limit, strings.Count(text, "\n")+1)
}

// truncateLines is Truncate of a text that is the first part of one of
// total lines (a tree the page shaped, taken in up to a budget).
func truncateLines(text string, limit, total int) string {
	if limit <= 0 || len(text) <= limit && strings.Count(text, "\n")+1 >= total {
		return text
	}
	cutAt := len(text)
	if len(text) > limit {
		cutAt = strings.LastIndexByte(text[:limit], '\n')
		if cutAt <= 0 {
			cutAt = limit
		}
	}
	shown := strings.Count(text[:cutAt], "\n") + 1
	return text[:cutAt] + fmt.Sprintf("\n\n[snapshot cut at %d bytes: %d of %d lines shown. Scroll with browser_scroll, or read a part of the page with browser_exec (for example document.querySelector(...).innerText).]", limit, shown, total)
}

// axString is the value of an AX value as text.
func axString(v *accessibility.Value) string {
	if v == nil || len(v.Value) == 0 {
		return ""
	}
	raw := v.Value
	switch {
	case raw[0] == '"' && len(raw) >= 2 && raw[len(raw)-1] == '"' && !bytes.ContainsAny(raw[1:len(raw)-1], "\\\""):
		return string(raw[1 : len(raw)-1]) // a string without escapes: most names and roles
	case raw[0] != '"' && raw[0] != '{' && raw[0] != '[' && string(raw) != "null":
		return string(raw) // true, false, a number
	}
	var x any
	if err := json.Unmarshal(v.Value, &x); err != nil {
		return string(v.Value)
	}
	switch x := x.(type) {
	case string:
		return x
	case nil:
		return ""
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	return string(v.Value)
}

// collapse folds runs of white space into one space.
func collapse(s string) string {
	clean := true
	for i := 0; i < len(s) && clean; i++ {
		switch c := s[i]; {
		case c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || c >= 0x80:
			clean = false // c >= 0x80: Unicode spaces are for Fields to find
		case c == ' ':
			clean = i > 0 && i < len(s)-1 && s[i+1] != ' '
		}
	}
	if clean {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// StaleNode is the error of a ref whose node is no longer in the page.
func StaleNode(ref string, err error) error {
	msg := err.Error()
	if strings.Contains(msg, "No node") || strings.Contains(msg, "not found") ||
		strings.Contains(msg, "Could not compute") || strings.Contains(msg, "detached") {
		return modeltext.Errorf("the element %s is no longer in the page (it changed since the snapshot); take a new snapshot", ref)
	}
	if strings.Contains(msg, "does not have a layout object") {
		// Chromium's answer for an element that is not rendered
		// (display: none), as a hidden menu's link is.
		return modeltext.Errorf("the element %s has no visible box (it is hidden or has no size); take a new snapshot", ref)
	}
	return err
}
