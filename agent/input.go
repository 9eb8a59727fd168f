package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/hybroute/hybroute/agent/internal/modeltext"
	"github.com/hybroute/hybroute/agent/internal/snapshot"
)

// Tool names of the keyboard and mouse tools of this file.
const (
	ToolClick  = "browser_click"
	ToolType   = "browser_type"
	ToolPress  = "browser_press"
	ToolScroll = "browser_scroll"
)

var inputTools = []toolDef{
	{
		name:   ToolClick,
		desc:   "Click an element by ref (real mouse, scrolled into view). Waits for a navigation it starts; else the result lists what changed.",
		schema: `{"type":"object","properties":{"ref":{"type":"string"},"element":{"type":"string"}},"required":["ref"]}`,
		run:    (*Toolset).click,
	},
	{
		name:   ToolType,
		desc:   "Type into an editable element by its ref, replacing its text; submit presses Enter after.",
		schema: `{"type":"object","properties":{"ref":{"type":"string"},"text":{"type":"string"},"submit":{"type":"boolean","default":false}},"required":["ref","text"]}`,
		run:    (*Toolset).typeText,
	},
	{
		name:   ToolPress,
		desc:   "Press a key or combination on the focused element, e.g. Enter, ArrowDown, Shift+Tab, Control+a, x.",
		schema: `{"type":"object","properties":{"key":{"type":"string"}},"required":["key"]}`,
		run:    (*Toolset).press,
	},
	{
		name:   ToolScroll,
		desc:   "Scroll most of a screen; reports the position and the page size.",
		schema: `{"type":"object","properties":{"direction":{"type":"string","enum":["up","down","left","right"]}},"required":["direction"]}`,
		run:    (*Toolset).scroll,
	},
}

// navWatch sees whether an action (a click, a key, a script) started a
// navigation of the main frame, and waits for it to finish, so the next
// tool sees the new page and the Router's landed-URL check sees where it
// went. The browser reports a navigation that input or a script requests
// before it answers the command that caused it, so no fixed sleep is
// needed to notice one.
type navWatch struct {
	mu      sync.Mutex
	started bool
	done    chan struct{}
	closed  bool
}

// watchNav starts watching the main frame of the call's tab. Stop it with
// the returned func.
func watchNav(ctx context.Context, main cdp.FrameID) (*navWatch, context.CancelFunc, error) {
	w := &navWatch{done: make(chan struct{})}
	lctx, cancel := context.WithCancel(ctx)
	err := chromedp.Listen(lctx, func(ev any) {
		switch ev := ev.(type) {
		case *page.EventFrameRequestedNavigation:
			if ev.FrameID == main && ev.Disposition == page.ClientNavigationDispositionCurrentTab {
				w.start()
			}
		case *page.EventFrameStartedNavigating:
			if ev.FrameID == main {
				w.start()
			}
		case *page.EventFrameStartedLoading:
			if ev.FrameID == main {
				w.start()
			}
		case *page.EventFrameStoppedLoading:
			if ev.FrameID == main {
				w.finish()
			}
		case *page.EventNavigatedWithinDocument:
			// history.pushState or a fragment: the page moved without a
			// load, and its title may have changed with it.
			if ev.FrameID == main {
				w.start()
				w.finish()
			}
		case *page.EventFrameNavigated:
			// A page restored from the back/forward cache loads nothing:
			// its commit is the end of the navigation.
			if ev.Frame != nil && ev.Frame.ID == main && ev.Type == page.NavigationTypeBackForwardCacheRestore {
				w.finish()
			}
		}
	})
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return w, cancel, nil
}

func (w *navWatch) start() {
	w.mu.Lock()
	w.started = true
	w.mu.Unlock()
}

func (w *navWatch) isStarted() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.started
}

func (w *navWatch) finish() {
	w.mu.Lock()
	if w.started && !w.closed {
		w.closed = true
		close(w.done)
	}
	w.mu.Unlock()
}

// navWaitMax bounds the wait for a navigation an action started: a page
// that keeps loading is reported as it is then.
const navWaitMax = 15 * time.Second

// wait waits for a navigation the action started to finish, if it started
// one. It reports whether one started.
func (w *navWatch) wait(ctx context.Context) bool {
	w.mu.Lock()
	started := w.started
	w.mu.Unlock()
	if !started {
		return false
	}
	t := time.NewTimer(navWaitMax)
	defer t.Stop()
	select {
	case <-w.done:
	case <-t.C:
	case <-ctx.Done():
	}
	return true
}

// clickNode clicks the center of the node's box with real input events,
// after scrolling it into view, as a user would.
func clickNode(ctx context.Context, ref string, node cdp.BackendNodeID) error {
	x, y, err := nodeCenter(ctx, ref, node)
	if err != nil {
		return err
	}
	for _, ev := range []input.DispatchMouseEventParams{
		{Type: chromedp.MouseMoved, X: x, Y: y},
		{Type: chromedp.MousePressed, X: x, Y: y, Button: input.MouseButtonLeft, Buttons: 1, ClickCount: 1},
		{Type: chromedp.MouseReleased, X: x, Y: y, Button: input.MouseButtonLeft, ClickCount: 1},
	} {
		if _, err := chromedp.Call(ctx, input.DispatchMouseEvent, ev); err != nil {
			return err
		}
	}
	return nil
}

// nodeCenter scrolls the node into view and returns the center of its
// first box in viewport coordinates.
func nodeCenter(ctx context.Context, ref string, node cdp.BackendNodeID) (float64, float64, error) {
	if _, err := chromedp.Call(ctx, dom.ScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{BackendNodeID: node}); err != nil {
		return 0, 0, snapshot.StaleNode(ref, err)
	}
	q, err := chromedp.Call(ctx, dom.GetContentQuads, dom.GetContentQuadsParams{BackendNodeID: node})
	if err != nil {
		return 0, 0, snapshot.StaleNode(ref, err)
	}
	for _, quad := range q.Quads {
		if len(quad) < 8 {
			continue
		}
		var x, y float64
		for i := 0; i < 8; i += 2 {
			x += quad[i]
			y += quad[i+1]
		}
		x, y = x/4, y/4
		if area(quad) >= 1 {
			return x, y, nil
		}
	}
	return 0, 0, modeltext.Errorf("the element %s has no visible box (it is hidden or has no size); take a new snapshot", ref)
}

func area(q dom.Quad) float64 {
	a := 0.0
	for i := 0; i < 8; i += 2 {
		j := (i + 2) % 8
		a += q[i]*q[j+1] - q[j]*q[i+1]
	}
	if a < 0 {
		a = -a
	}
	return a / 2
}

// typeInto replaces the text of an editable node with text.
func typeInto(ctx context.Context, ref string, node cdp.BackendNodeID, text string) error {
	if _, err := chromedp.Call(ctx, dom.Focus, dom.FocusParams{BackendNodeID: node}); err != nil {
		if strings.Contains(err.Error(), "not focusable") {
			return modeltext.Errorf("the element %s cannot take text (it is not focusable); use a textbox's ref", ref)
		}
		return snapshot.StaleNode(ref, err)
	}
	obj, err := chromedp.Call(ctx, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: node, ObjectGroup: "hybroute-agent"})
	if err != nil {
		return snapshot.StaleNode(ref, err)
	}
	defer func() {
		_, _ = chromedp.Call(ctx, runtime.ReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: "hybroute-agent"})
	}()
	// Select what the field holds, so the text replaces it, as a fill does.
	r, err := chromedp.Call(ctx, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		ObjectID:            obj.Object.ObjectID,
		FunctionDeclaration: selectContentsJS,
		ReturnByValue:       new(true),
	})
	if err != nil {
		return err
	}
	if r.ExceptionDetails == nil && r.Result != nil && string(r.Result.Value) == "false" {
		return modeltext.Errorf("the element %s does not take text (it is not a text field or an editable element); use a textbox's ref", ref)
	}
	if text == "" {
		return pressKeys(ctx, "Delete")
	}
	_, err = chromedp.Call(ctx, input.InsertText, input.InsertTextParams{Text: text})
	return err
}

// selectContentsJS selects an editable element's contents and reports
// whether it is editable at all.
const selectContentsJS = `function() {
	if (this instanceof HTMLInputElement || this instanceof HTMLTextAreaElement) {
		if (typeof this.select === "function") { this.select(); }
		return !this.readOnly && !this.disabled;
	}
	if (this.isContentEditable) {
		const r = document.createRange(); r.selectNodeContents(this);
		const s = window.getSelection(); s.removeAllRanges(); s.addRange(r);
		return true;
	}
	return false;
}`

// keyNames maps the DOM key names a model writes ("Enter", "ArrowDown")
// to chromedp's key runes.
var keyNames = func() map[string]rune {
	m := make(map[string]rune)
	for r, k := range kb.Keys {
		if k.Print && len([]rune(k.Key)) == 1 {
			continue // a printable key is written as itself
		}
		if old, ok := m[k.Key]; !ok || r < old {
			m[k.Key] = r
		}
	}
	m["Space"] = ' '
	m["Esc"] = []rune(kb.Escape)[0]
	m["Return"] = []rune(kb.Enter)[0]
	m["Del"] = []rune(kb.Delete)[0]
	m["Up"], m["Down"], m["Left"], m["Right"] = []rune(kb.ArrowUp)[0], []rune(kb.ArrowDown)[0], []rune(kb.ArrowLeft)[0], []rune(kb.ArrowRight)[0]
	return m
}()

// pressKeys presses a key or a combination: "Enter", "a", "Shift+Tab",
// "Control+a".
func pressKeys(ctx context.Context, combo string) error {
	combo = strings.TrimSpace(combo)
	if combo == "" {
		return modeltext.Errorf("key is empty; give a key name such as Enter, Tab, ArrowDown, Escape or a character")
	}
	parts := []string{combo}
	if len(combo) > 1 && strings.Contains(combo[:len(combo)-1], "+") {
		parts = strings.Split(combo, "+")
		if strings.HasSuffix(combo, "++") {
			parts = append(parts[:len(parts)-2], "+")
		}
	}
	var mods int64
	for _, p := range parts[:len(parts)-1] {
		switch strings.ToLower(strings.TrimSpace(p)) {
		case "alt", "option":
			mods |= int64(chromedp.ModifierAlt)
		case "control", "ctrl":
			mods |= int64(chromedp.ModifierCtrl)
		case "meta", "cmd", "command":
			mods |= int64(chromedp.ModifierMeta)
		case "shift":
			mods |= int64(chromedp.ModifierShift)
		default:
			return modeltext.Errorf("unknown modifier %q in %q; the modifiers are Alt, Control, Meta and Shift", p, combo)
		}
	}
	name := strings.TrimSpace(parts[len(parts)-1])
	if name == "" {
		name = " "
	}
	var r rune
	if rs := []rune(name); len(rs) == 1 {
		r = rs[0]
	} else if kr, ok := keyNames[name]; ok {
		r = kr
	} else if kr, ok := keyNames[strings.ToUpper(name[:1])+name[1:]]; ok {
		r = kr
	} else {
		return modeltext.Errorf("unknown key %q; use a DOM key name such as Enter, Tab, Escape, Backspace, ArrowDown, PageDown, Home, F5, or one character", name)
	}
	events := kb.Encode(r)
	chord := mods&int64(chromedp.ModifierAlt|chromedp.ModifierCtrl|chromedp.ModifierMeta) != 0
	for _, ev := range events {
		if chord && ev.Type == kb.KeyChar {
			continue // a shortcut types nothing
		}
		p := *ev
		p.Modifiers |= mods
		if chord {
			p.Text, p.UnmodifiedText = "", ""
		}
		if _, err := chromedp.Call(ctx, input.DispatchKeyEvent, p); err != nil {
			return err
		}
	}
	return nil
}

// scrollJS scrolls the page by most of a viewport and reports where it is.
const scrollJS = `(() => {
	const dx = %d, dy = %d;
	window.scrollBy({left: dx * Math.round(innerWidth * 0.8), top: dy * Math.round(innerHeight * 0.8), behavior: "instant"});
	const el = document.scrollingElement || document.documentElement;
	return [Math.round(scrollX), Math.round(scrollY), el.scrollWidth, el.scrollHeight, innerWidth, innerHeight];
})()`

func (t *Toolset) click(ctx context.Context, s *session, key string, args json.RawMessage) Result {
	var a struct {
		Ref     string `json:"ref"`
		Element string `json:"element"`
	}
	if err := decode(args, &a); err != nil {
		return argError(err)
	}
	var what, changes string
	var navigated bool
	res, c, err := t.do(ctx, s, key, "", reads|moves|drivesREST, func(ctx context.Context, c *call) error {
		if p := c.rest; p != nil {
			what = a.Ref
			before := p.Landed()
			_, err := p.Click(ctx, a.Ref)
			navigated = p.Landed() != before
			return err
		}
		e, err := s.refs.Resolve(ctx, a.Ref, c.target)
		if err != nil {
			return err
		}
		what = describeRef(a.Ref, e)
		if err := settled(ctx, c, &navigated, func() error { return clickNode(e.In(ctx), a.Ref, e.Node()) }); err != nil || navigated {
			return err
		}
		changes = t.changesAfter(ctx, s, c, "")
		return nil
	})
	return t.finishCall(s, key, res, c, err, func() string {
		return "Clicked " + what + "." + navNote(navigated) + changesNote(changes)
	})
}

func (t *Toolset) typeText(ctx context.Context, s *session, key string, args json.RawMessage) Result {
	var a struct {
		Ref    string `json:"ref"`
		Text   string `json:"text"`
		Submit bool   `json:"submit"`
	}
	if err := decode(args, &a); err != nil {
		return argError(err)
	}
	var what, changes string
	var navigated bool
	res, c, err := t.do(ctx, s, key, "", reads|moves|drivesREST, func(ctx context.Context, c *call) error {
		if p := c.rest; p != nil {
			what = a.Ref
			before := p.Landed()
			_, err := p.Type(ctx, a.Ref, a.Text, a.Submit)
			navigated = p.Landed() != before
			return err
		}
		e, err := s.refs.Resolve(ctx, a.Ref, c.target)
		if err != nil {
			return err
		}
		what = describeRef(a.Ref, e)
		if err := typeInto(e.In(ctx), a.Ref, e.Node(), a.Text); err != nil {
			return err
		}
		if a.Submit {
			if err := settled(ctx, c, &navigated, func() error { return pressKeys(ctx, "Enter") }); err != nil || navigated {
				return err
			}
		}
		changes = t.changesAfter(ctx, s, c, "[ref="+strings.TrimSpace(a.Ref)+"]: "+strings.Join(strings.Fields(a.Text), " "))
		return nil
	})
	return t.finishCall(s, key, res, c, err, func() string {
		msg := fmt.Sprintf("Typed %s into %s.", modeltext.Quote(a.Text, 200), what)
		if a.Submit {
			msg += " Pressed Enter."
		}
		return msg + navNote(navigated) + changesNote(changes)
	})
}

func (t *Toolset) press(ctx context.Context, s *session, key string, args json.RawMessage) Result {
	var a struct {
		Key string `json:"key"`
	}
	if err := decode(args, &a); err != nil {
		return argError(err)
	}
	var navigated bool
	res, c, err := t.do(ctx, s, key, "", reads|moves|drivesREST, func(ctx context.Context, c *call) error {
		if p := c.rest; p != nil {
			before := p.Landed()
			_, err := p.Press(ctx, a.Key)
			navigated = p.Landed() != before
			return err
		}
		return settled(ctx, c, &navigated, func() error { return pressKeys(ctx, a.Key) })
	})
	return t.finishCall(s, key, res, c, err, func() string {
		return "Pressed " + a.Key + "." + navNote(navigated)
	})
}

func (t *Toolset) scroll(ctx context.Context, s *session, key string, args json.RawMessage) Result {
	var a struct {
		Direction string `json:"direction"`
	}
	if err := decode(args, &a); err != nil {
		return argError(err)
	}
	var dx, dy int
	switch strings.ToLower(a.Direction) {
	case "up":
		dy = -1
	case "down":
		dy = 1
	case "left":
		dx = -1
	case "right":
		dx = 1
	default:
		return toolError(fmt.Sprintf("direction %q: use up, down, left or right", a.Direction))
	}
	var pos []int
	res, c, err := t.do(ctx, s, key, "", reads|drivesREST, func(ctx context.Context, c *call) error {
		if p := c.rest; p != nil {
			_, err := p.Scroll(ctx, strings.ToLower(a.Direction))
			return err
		}
		var err error
		pos, err = chromedp.Run(ctx, chromedp.Evaluate[[]int](fmt.Sprintf(scrollJS, dx, dy)))
		return err
	})
	return t.finishCall(s, key, res, c, err, func() string {
		if len(pos) != 6 {
			return "Scrolled " + a.Direction + "."
		}
		return fmt.Sprintf("Scrolled %s. The view now shows x %d–%d, y %d–%d of a page %d wide and %d high.",
			a.Direction, pos[0], pos[0]+pos[4], pos[1], pos[1]+pos[5], pos[2], pos[3])
	})
}

func describeRef(ref string, e snapshot.Entry) string {
	s := ref + " (" + e.Role()
	if e.Name() != "" {
		s += " " + modeltext.Quote(e.Name(), 100)
	}
	return s + ")"
}
