package agent

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute/agent/internal/modeltext"
	"github.com/hybroute/hybroute/agent/internal/snapshot"
)

// Tool names of the pointer tools beyond browser_click.
const (
	ToolHover = "browser_hover"
	ToolDrag  = "browser_drag"
)

var pointerTools = []toolDef{
	{
		name:   ToolHover,
		desc:   "Hover an element by ref (scrolled into view): opens hover menus and tooltips.",
		schema: `{"type":"object","properties":{"ref":{"type":"string"},"element":{"type":"string"}},"required":["ref"]}`,
		run:    (*Toolset).hover,
	},
	{
		name:   ToolDrag,
		desc:   "Drag one element onto another with the real mouse: drag and drop, sortable lists, sliders.",
		schema: `{"type":"object","properties":{"start_ref":{"type":"string"},"end_ref":{"type":"string"},"start_element":{"type":"string"},"end_element":{"type":"string"}},"required":["start_ref","end_ref"]}`,
		run:    (*Toolset).drag,
	},
}

func (t *Toolset) hover(ctx context.Context, s *session, key string, args json.RawMessage) Result {
	var a refArgs
	if err := decode(args, &a); err != nil {
		return argError(err)
	}
	return t.onRef(ctx, s, key, a.Ref, func(ctx context.Context, e snapshot.Entry) (string, error) {
		x, y, err := nodeCenter(ctx, a.Ref, e.Node())
		if err != nil {
			return "", err
		}
		return "Hovered over", mouse(ctx, input.DispatchMouseEventParams{Type: chromedp.MouseMoved, X: x, Y: y})
	})
}

// refArgs are the arguments of a tool on one element.
type refArgs struct {
	Ref     string `json:"ref"`
	Element string `json:"element"`
}

// onRef runs a tool's action on the element of a ref of the last
// snapshot, watching for a navigation it starts, and words the result as
// the action's verb, the element and what followed.
func (t *Toolset) onRef(ctx context.Context, s *session, key, ref string, act func(ctx context.Context, e snapshot.Entry) (string, error)) Result {
	var verb, what string
	var navigated bool
	res, c, err := t.do(ctx, s, key, "", reads|moves, func(ctx context.Context, c *call) error {
		e, err := s.refs.Resolve(ctx, ref, c.target)
		if err != nil {
			return err
		}
		what = describeRef(ref, e)
		return settled(ctx, c, &navigated, func() error {
			var err error
			verb, err = act(e.In(ctx), e)
			return err
		})
	})
	return t.finishCall(s, key, res, c, err, func() string {
		return verb + " " + what + "." + navNote(navigated)
	})
}

func (t *Toolset) drag(ctx context.Context, s *session, key string, args json.RawMessage) Result {
	var a struct {
		StartRef     string `json:"start_ref"`
		EndRef       string `json:"end_ref"`
		StartElement string `json:"start_element"`
		EndElement   string `json:"end_element"`
	}
	if err := decode(args, &a); err != nil {
		return argError(err)
	}
	var from, to string
	var navigated bool
	res, c, err := t.do(ctx, s, key, "", reads|moves, func(ctx context.Context, c *call) error {
		start, err := s.refs.Resolve(ctx, a.StartRef, c.target)
		if err != nil {
			return err
		}
		end, err := s.refs.Resolve(ctx, a.EndRef, c.target)
		if err != nil {
			return err
		}
		from, to = describeRef(a.StartRef, start), describeRef(a.EndRef, end)
		if start.CrossSite() || end.CrossSite() {
			// One mouse drags across one target's coordinates.
			return modeltext.Errorf("a drag into or out of a frame of another site is not supported; drag between elements of the page (or of one same-site frame)")
		}
		return settled(ctx, c, &navigated, func() error {
			return dragNodes(ctx, a.StartRef, start.Node(), a.EndRef, end.Node())
		})
	})
	return t.finishCall(s, key, res, c, err, func() string {
		return "Dragged " + from + " onto " + to + "." + navNote(navigated)
	})
}

func mouse(ctx context.Context, ev input.DispatchMouseEventParams) error {
	_, err := chromedp.Call(ctx, input.DispatchMouseEvent, ev)
	return err
}

// dragSteps is how many mouse moves a drag takes from start to end: a
// widget that follows the mouse sees it travel, not jump.
const dragSteps = 8

// dragNodes drags with the mouse from the center of one node to the center
// of another. Chromium does not run an HTML drag and drop for synthetic
// mouse input by itself, so drags are intercepted: when the page starts
// one, the browser hands over its data and the drag goes on as drag events
// at the mouse's places. A page that drags with plain mouse events sees
// the same moves either way.
func dragNodes(ctx context.Context, fromRef string, from cdp.BackendNodeID, toRef string, to cdp.BackendNodeID) error {
	x1, y1, err := nodeCenter(ctx, fromRef, from)
	if err != nil {
		return err
	}
	if _, err := chromedp.Call(ctx, input.SetInterceptDrags, input.SetInterceptDragsParams{Enabled: true}); err != nil {
		return err
	}
	defer func() {
		_, _ = chromedp.Call(context.WithoutCancel(ctx), input.SetInterceptDrags, input.SetInterceptDragsParams{Enabled: false})
	}()
	var mu sync.Mutex
	var data *input.DragData
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	if err := chromedp.Listen(lctx, func(ev any) {
		if d, ok := ev.(*input.EventDragIntercepted); ok {
			mu.Lock()
			data = d.Data
			mu.Unlock()
		}
	}); err != nil {
		return err
	}
	dragging := func() *input.DragData {
		mu.Lock()
		defer mu.Unlock()
		return data
	}
	if err := mouse(ctx, input.DispatchMouseEventParams{Type: chromedp.MouseMoved, X: x1, Y: y1}); err != nil {
		return err
	}
	if err := mouse(ctx, input.DispatchMouseEventParams{Type: chromedp.MousePressed, X: x1, Y: y1, Button: input.MouseButtonLeft, Buttons: 1, ClickCount: 1}); err != nil {
		return err
	}
	// Released whatever happens below, so no button stays down in the tab.
	x2, y2 := x1, y1
	defer func() {
		_ = mouse(context.WithoutCancel(ctx), input.DispatchMouseEventParams{Type: chromedp.MouseReleased, X: x2, Y: y2, Button: input.MouseButtonLeft, ClickCount: 1})
	}()
	// A first small move starts a drag, as a hand's would.
	if err := mouse(ctx, input.DispatchMouseEventParams{Type: chromedp.MouseMoved, X: x1 + 3, Y: y1 + 3, Button: input.MouseButtonLeft, Buttons: 1}); err != nil {
		return err
	}
	settle(ctx) // the interception's event arrives before this answer
	tx, ty, err := nodeCenter(ctx, toRef, to)
	if err != nil {
		return err
	}
	entered := false
	for i := 1; i <= dragSteps; i++ {
		x2 = x1 + (tx-x1)*float64(i)/dragSteps
		y2 = y1 + (ty-y1)*float64(i)/dragSteps
		if d := dragging(); d != nil {
			typ := input.DispatchDragEventTypeDragOver
			if !entered {
				typ, entered = input.DispatchDragEventTypeDragEnter, true
			}
			if _, err := chromedp.Call(ctx, input.DispatchDragEvent, input.DispatchDragEventParams{Type: typ, X: x2, Y: y2, Data: d}); err != nil {
				return err
			}
			continue
		}
		if err := mouse(ctx, input.DispatchMouseEventParams{Type: chromedp.MouseMoved, X: x2, Y: y2, Button: input.MouseButtonLeft, Buttons: 1}); err != nil {
			return err
		}
	}
	if d := dragging(); d != nil {
		_, err := chromedp.Call(ctx, input.DispatchDragEvent, input.DispatchDragEventParams{Type: input.DispatchDragEventTypeDrop, X: x2, Y: y2, Data: d})
		return err
	}
	return nil
}
