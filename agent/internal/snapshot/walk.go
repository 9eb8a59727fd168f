package snapshot

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute/agent/internal/modeltext"
)

// walkJS reads a document as the snapshot's items in one call. Chromium's
// full AX tree of a 1,500-node page takes hundreds of milliseconds to
// build and carry over the protocol; the page's own DOM gives the same
// roles, names and states in a fraction of that.
//
//go:embed walk.js
var walkJS string

// walkWorld is the isolated world the walk and its ref registry live in:
// the page's scripts see neither.
const walkWorld = "hybroute-snapshot"

// errWalk marks a walk that did not run: the caller reads the AX tree
// instead.
var errWalk = errors.New("the in-page walk failed")

// elsewhereNote stands for a frame whose document no walk of this target
// can read.
const elsewhereNote = "(a frame of another site, in a process of its own: its content is not in this snapshot)"

// walkNode is one item as the walk returns it: a text run (a JSON
// string) or an element.
type walkNode struct {
	text     string
	Role     string     `json:"r"`
	Name     string     `json:"n"`
	Value    string     `json:"v"`
	URL      string     `json:"u"`
	Attrs    []string   `json:"a"`
	Ref      string     `json:"f"`
	Frame    string     `json:"o"`
	Children []walkNode `json:"c"`
	// Kids is how many items of a read follow as this one's children;
	// More, how many items the depth cut under it.
	Kids int `json:"k"`
	More int `json:"m"`
}

func (w *walkNode) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &w.text)
	}
	type plain walkNode
	return json.Unmarshal(b, (*plain)(w))
}

type walkResult struct {
	Next  int        `json:"next"`
	Title string     `json:"title"`
	Size  int        `json:"size"`  // the items as JSON, in characters
	Items []walkNode `json:"items"` // the items, when they came with the walk
}

// The walk's items cross the protocol in messages of at most readChunk
// characters of JSON (a few times that in bytes at most, for text
// outside ASCII): no message, and so no read buffer of the connection
// (chromedp's pipe keeps the size of its largest message for the
// browser's life), grows with the page. The snapshot takes in a page's
// whole tree only up to wholeBudget characters (all its frames
// together): the tree the shaping and the change reports work on. Past
// that, the page shapes its tree itself (readSelect) and the snapshot
// takes in only what its text can show (cutBudget).
const (
	readChunk   = 64 << 10
	wholeBudget = 512 << 10
)

// cutBudget is how much of a shaped tree a snapshot cut at limit bytes
// takes in: more than its text can show, so the cut falls inside it.
// 0: all of it (a snapshot to a file is not cut).
func cutBudget(limit int) int {
	if limit <= 0 {
		return 0
	}
	return max(8*limit, readChunk)
}

// The functions of the walk's world that read its items (walk.js).
const (
	readNext    = `(budget) => globalThis.__hybroute.read(budget)`
	readSelect  = `(o) => globalThis.__hybroute.select(o || {})` // {} is sent as no argument
	readRelease = `() => globalThis.__hybroute.release()`
)

type readResult struct {
	Recs []walkNode `json:"recs"`
	Done bool       `json:"done"`
	Used int        `json:"used"`
}

// selected is what the page's shaping of a tree too large to take in
// whole found.
type selected struct {
	Missing bool `json:"missing"` // no item has the ref
	Nothing bool `json:"nothing"` // no item contains the text
	Lines   int  `json:"lines"`   // lines of the whole shaped text
}

// walkState is what the walks of one snapshot share.
type walkState struct {
	o Options
	// whole is how many characters of whole trees are still taken in;
	// cut, of trees the page shaped or cut (-1: no bound).
	whole, cut int
	// partial: some frame's tree was too large to take in whole, so the
	// items are not the page's whole tree.
	partial bool
	// shaped is the main frame's shaping, when the page did it.
	shaped *selected
}

// walkSnapshot takes the snapshot's items with the in-page walk: the main
// frame's document and the frames it can reach, then each frame of
// another origin in a walk of its own.
// It returns the items, the refs they name, and the document's title.
// mainWorld is the walk's world in the main frame when the caller has it
// already, or the zero world.
func walkSnapshot(ctx context.Context, main cdp.FrameID, mainWorld world, old *Refs, tab target.ID, pageURL string, o Options) ([]*item, Refs, string, *walkState, error) {
	refs := Refs{
		target: tab,
		byRef:  make(map[string]Entry),
		next:   1,
	}
	if old != nil && old.next > 0 {
		// A ref number is never given twice in a tab's session, so a ref
		// of an earlier page or frame never names a node of this one.
		refs.next = old.next
	}
	base, _ := url.Parse(pageURL)
	st := &walkState{o: o, whole: wholeBudget, cut: cutBudget(o.Limit)}
	if o.Limit <= 0 {
		st.whole, st.cut = -1, -1 // a file holds the whole tree
	}
	w := &walker{ctx: ctx, refs: &refs, base: base, main: main, mainWorld: mainWorld, st: st}
	items, title, err := w.frame(main, 0)
	if err != nil {
		return nil, Refs{}, "", nil, err
	}
	refs.partial = st.partial
	return items, refs, title, st, nil
}

type walker struct {
	ctx  context.Context
	refs *Refs
	base *url.URL
	// oopif is the target of a frame of another site the walk runs in,
	// through a session of its own; empty in the tab's own target.
	oopif target.ID
	// mainWorld, when not zero, is the walk's world in frame main.
	main      cdp.FrameID
	mainWorld world
	st        *walkState
}

// world names an execution context of the walk: by the id the frame's
// target gave it, or by its system-wide id, which no other context of
// any process has.
type world struct {
	id     runtime.ExecutionContextID
	unique string
}

func (w world) zero() bool { return w.id == 0 && w.unique == "" }

// in points p at the world.
func (w world) in(p *runtime.CallFunctionOnParams) {
	p.ExecutionContextID, p.UniqueContextID = w.id, w.unique
}

// refName is a ref as the model may write it ([ref=e4], ref=e4, e4).
func refName(ref string) string {
	return strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(ref, "[ref="), "ref="), "]")
}

// maxFrameDepth bounds frames within frames.
const maxFrameDepth = 8

// frame walks the document of frame id and, within it, the frames of
// other origins.
func (w *walker) frame(id cdp.FrameID, depth int) ([]*item, string, error) {
	ctxID := w.mainWorld
	if id != w.main || ctxID.zero() {
		id, err := worldIn(w.ctx, id)
		if err != nil {
			return nil, "", err
		}
		ctxID = world{id: id}
	}
	// A world known by its system-wide id was made at its document's
	// start, which defined the walk there; any other may not have.
	fn := walkJS
	if ctxID.unique != "" {
		fn = walkDefined
	}
	// A small tree comes with the walk, in one round trip.
	inline := readChunk
	if w.st.whole >= 0 {
		inline = min(inline, w.st.whole)
	}
	var res walkResult
	if err := callIn(w.ctx, ctxID, fn, &res, w.refs.next, inline); err != nil {
		return nil, "", err
	}
	if res.Next > w.refs.next {
		w.refs.next = res.Next
	}
	nodes := res.Items
	if res.Size > inline {
		budget, err := w.budget(ctxID, res.Size, depth)
		if err != nil {
			return nil, "", err
		}
		if w.st.shaped == nil || !w.st.shaped.Missing && !w.st.shaped.Nothing || depth > 0 {
			if nodes, err = w.read(ctxID, budget); err != nil {
				return nil, "", err
			}
		}
	} else if w.st.whole >= 0 {
		w.st.whole -= res.Size
	}
	items := make([]*item, 0, len(nodes))
	for i := range nodes {
		items = append(items, w.item(&nodes[i], id, ctxID, depth))
	}
	return items, res.Title, nil
}

// budget decides how much of a frame's tree of size characters the
// snapshot takes in: all of it while the whole trees stay within their
// budget, else what the cut text can show. The main frame's tree is then
// shaped in the page first (its ref, find and depth); a frame's tree
// inside is only cut. It returns the characters to read, -1 for all.
func (w *walker) budget(ctxID world, size, depth int) (int, error) {
	st := w.st
	if st.whole < 0 || size <= st.whole {
		if st.whole >= 0 {
			st.whole -= size
		}
		return -1, nil
	}
	st.partial = true
	if depth == 0 && w.oopif == "" {
		o := st.o
		sel := struct {
			Ref   string `json:"ref,omitempty"`
			Find  string `json:"find,omitempty"`
			Depth int    `json:"depth,omitempty"`
		}{Ref: refName(o.Ref), Find: strings.ToLower(o.Find), Depth: o.Depth}
		st.shaped = new(selected)
		if err := callIn(w.ctx, ctxID, readSelect, st.shaped, sel); err != nil {
			return 0, err
		}
	}
	return st.cut, nil
}

// read takes in the frame's items, in messages of at most readChunk
// characters, up to budget characters (-1: all), and puts them back in
// their tree.
func (w *walker) read(ctxID world, budget int) ([]walkNode, error) {
	var roots []walkNode
	type open struct {
		n    *walkNode
		left int
	}
	var stack []open
	for budget != 0 {
		chunk := readChunk
		if budget > 0 {
			chunk = min(chunk, budget)
		}
		var r readResult
		if err := callIn(w.ctx, ctxID, readNext, &r, chunk); err != nil {
			return nil, err
		}
		for _, rec := range r.Recs {
			dst := &roots
			if len(stack) > 0 {
				top := &stack[len(stack)-1]
				dst = &top.n.Children
				top.left--
			}
			*dst = append(*dst, rec)
			// Only the last child of a list is ever descended into, and
			// its list grows no more until it is done: the pointer holds.
			if rec.Kids > 0 {
				stack = append(stack, open{n: &(*dst)[len(*dst)-1], left: rec.Kids})
			}
			for len(stack) > 0 && stack[len(stack)-1].left == 0 {
				stack = stack[:len(stack)-1]
			}
		}
		if r.Done {
			return roots, nil
		}
		if budget > 0 {
			budget = max(budget-max(r.Used, 1), 0)
			if w.st.cut > 0 {
				w.st.cut = max(w.st.cut-max(r.Used, 1), 0)
			}
		}
		if len(r.Recs) == 0 {
			break
		}
	}
	w.st.partial = true
	// The rest is not read: the page lets go of its tree now, not at
	// the next walk.
	var none any
	_ = callIn(w.ctx, ctxID, readRelease, &none)
	return roots, nil
}

// item turns a walked node into the item that prints, naming its ref in
// the table and reading the frames the walk could not reach.
func (w *walker) item(n *walkNode, frame cdp.FrameID, ctxID world, depth int) *item {
	if n.text != "" {
		return &item{text: n.text}
	}
	it := &item{role: n.Role, name: n.Name, value: n.Value, attrs: n.Attrs, ref: n.Ref, more: n.More}
	if n.URL != "" {
		it.url = shortURL(w.base, n.URL)
	}
	if n.Ref != "" {
		w.refs.byRef[n.Ref] = Entry{frame: frame, oopif: w.oopif, role: n.Role, name: n.Name}
	}
	if len(n.Children) > 0 {
		it.children = make([]*item, 0, len(n.Children))
		for i := range n.Children {
			it.children = append(it.children, w.item(&n.Children[i], frame, ctxID, depth))
		}
	}
	if idx, ok := strings.CutPrefix(n.Frame, "frame:"); ok {
		kids, err := w.childFrame(ctxID, idx, depth+1)
		if err != nil || kids == nil {
			it.value = joinValue(it.value, elsewhereNote)
		} else {
			it.children = kids
		}
	}
	return it
}

// childFrame walks the frame the walk could not reach (another origin),
// by the index the walk gave its element.
func (w *walker) childFrame(ctxID world, idx string, depth int) ([]*item, error) {
	if depth > maxFrameDepth {
		return nil, nil
	}
	i, err := strconv.Atoi(idx)
	if err != nil {
		return nil, err
	}
	p := runtime.CallFunctionOnParams{
		FunctionDeclaration: `(i) => globalThis.__hybroute.frames[i]`,
		Arguments:           []*runtime.CallArgument{{Value: []byte(strconv.Itoa(i))}},
		ObjectGroup:         walkWorld,
	}
	ctxID.in(&p)
	obj, err := chromedp.Call(w.ctx, runtime.CallFunctionOn, p)
	if err != nil || obj.Result == nil || obj.Result.ObjectID == "" {
		return nil, fmt.Errorf("the frame element: %w", errWalk)
	}
	defer releaseWalkObjects(w.ctx)
	d, err := chromedp.Call(w.ctx, dom.DescribeNode, dom.DescribeNodeParams{ObjectID: obj.Result.ObjectID})
	if err != nil || d.Node == nil || d.Node.FrameID == "" {
		return nil, fmt.Errorf("the frame's id: %w", errWalk)
	}
	items, _, err := w.frame(d.Node.FrameID, depth)
	if err == nil || w.oopif != "" {
		return items, err
	}
	// A frame of another site has no document in this target (site
	// isolation gives it a process of its own, a target of its own):
	// the walk runs there, through a session of its own.
	fctx, cancel, err := frameTarget(w.ctx, d.Node.FrameID)
	if err != nil {
		return nil, err
	}
	defer cancel()
	fw := &walker{ctx: fctx, refs: w.refs, base: w.base, oopif: target.ID(d.Node.FrameID), st: w.st}
	items, _, err = fw.frame(d.Node.FrameID, depth)
	return items, err
}

// frameTarget attaches to the target of a frame of another site (its
// target id is the frame's id). Its end detaches and leaves the frame be.
func frameTarget(ctx context.Context, id cdp.FrameID) (context.Context, context.CancelFunc, error) {
	fctx, cancel := chromedp.NewContext(ctx, chromedp.WithTargetID(target.ID(id)), chromedp.WithDetachOnCancel())
	if err := chromedp.Do(fctx); err != nil {
		cancel()
		return nil, nil, fmt.Errorf("%w: attaching to the frame: %w", errWalk, err)
	}
	return fctx, cancel, nil
}

func releaseWalkObjects(ctx context.Context) {
	_, _ = chromedp.Call(ctx, runtime.ReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: walkWorld})
}

// Warm has Chromium make the walk's isolated world as each
// document of the tab starts (and in the one it shows now), with the walk
// defined in it, so the first snapshot of a page just opened neither
// waits for the world nor compiles the walk.
func Warm(ctx context.Context) {
	_, _ = chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: "globalThis.__hybrouteWalk = " + walkJS, WorldName: walkWorld, RunImmediately: new(true),
	})
}

// worldIn is the walk's isolated world in frame id. Chromium keeps one
// world per name and frame for the document's life, so the registry of
// refs lasts as long as the document does.
func worldIn(ctx context.Context, id cdp.FrameID) (runtime.ExecutionContextID, error) {
	w, err := chromedp.Call(ctx, page.CreateIsolatedWorld, page.CreateIsolatedWorldParams{FrameID: id, WorldName: walkWorld})
	if err != nil {
		return 0, fmt.Errorf("%w: %w", errWalk, err)
	}
	return w.ExecutionContextID, nil
}

// callIn calls fn with args in an execution context and decodes its
// value into out.
func callIn(ctx context.Context, ctxID world, fn string, out any, args ...any) error {
	cargs, err := CallArgs(args)
	if err != nil {
		return err
	}
	p := runtime.CallFunctionOnParams{FunctionDeclaration: fn, Arguments: cargs, ReturnByValue: new(true)}
	ctxID.in(&p)
	r, err := chromedp.Call(ctx, runtime.CallFunctionOn, p)
	if err != nil {
		return fmt.Errorf("%w: %w", errWalk, err)
	}
	if r.ExceptionDetails != nil {
		return fmt.Errorf("%w: %s", errWalk, modeltext.ExceptionText(r.ExceptionDetails))
	}
	if r.Result == nil {
		return fmt.Errorf("%w: no result", errWalk)
	}
	if err := json.Unmarshal(r.Result.Value, out); err != nil {
		return fmt.Errorf("%w: %w", errWalk, err)
	}
	return nil
}

// pageNode finds the DOM node of a ref of the in-page walk, in the
// registry of the frame it was walked in.
func pageNode(ctx context.Context, ref string, e Entry, main cdp.FrameID) (cdp.BackendNodeID, error) {
	frame := e.frame
	if frame == "" {
		frame = main
	}
	ctxID, err := worldIn(ctx, frame)
	if err != nil {
		return 0, modeltext.Errorf("the element %s is no longer in the page (its frame is gone); take a new snapshot", ref)
	}
	quoted, err := json.Marshal(ref)
	if err != nil {
		return 0, err
	}
	obj, err := chromedp.Call(ctx, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: `(r) => { const h = globalThis.__hybroute; return h ? h.byRef.get(r) : undefined; }`,
		ExecutionContextID:  ctxID,
		Arguments:           []*runtime.CallArgument{{Value: quoted}},
		ObjectGroup:         walkWorld,
	})
	if err != nil {
		return 0, err
	}
	if obj.Result == nil || obj.Result.ObjectID == "" {
		return 0, modeltext.Errorf("ref %q is from a snapshot of a previous page (the page changed since); call browser_snapshot again", ref)
	}
	defer releaseWalkObjects(ctx)
	d, err := chromedp.Call(ctx, dom.DescribeNode, dom.DescribeNodeParams{ObjectID: obj.Result.ObjectID})
	if err != nil || d.Node == nil {
		return 0, StaleNode(ref, fmt.Errorf("describing the node: %w", err))
	}
	return d.Node.BackendNodeID, nil
}

// pageEntry is what the main frame's registry says of a ref the
// snapshot did not take in (a tree taken in part): its role and name.
func pageEntry(ctx context.Context, ref string, main cdp.FrameID) (Entry, error) {
	id, err := worldIn(ctx, main)
	if err != nil {
		return Entry{}, modeltext.Errorf("the element %s is no longer in the page (its frame is gone); take a new snapshot", ref)
	}
	var info []string
	err = callIn(ctx, world{id: id}, `(r) => { const h = globalThis.__hybroute; return (h && h.info && h.info.get(r)) || []; }`, &info, ref)
	if err != nil {
		return Entry{}, err
	}
	if len(info) != 2 {
		return Entry{}, modeltext.Errorf("ref %q is not in the last snapshot; call browser_snapshot again and use a ref from it", ref)
	}
	return Entry{role: info[0], name: info[1]}, nil
}

// CallArgs are args as the arguments of Runtime.callFunctionOn.
func CallArgs(args []any) ([]*runtime.CallArgument, error) {
	cargs := make([]*runtime.CallArgument, 0, len(args))
	for _, a := range args {
		b, err := json.Marshal(a)
		if err != nil {
			return nil, err
		}
		cargs = append(cargs, &runtime.CallArgument{Value: b})
	}
	return cargs, nil
}
