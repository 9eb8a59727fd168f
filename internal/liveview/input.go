package liveview

import (
	"context"
	"strings"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/hybroute/hybroute/internal/redact"
)

// The page's modifier bits (view.html's mods) are CDP's: Alt 1, Ctrl 2,
// Meta 4, Shift 8.
const modMask = int64(chromedp.ModifierAlt | chromedp.ModifierCtrl | chromedp.ModifierMeta | chromedp.ModifierShift)

// dispatch relays one input of the person to the tab.
func (c *conn) dispatch(tab context.Context, m msg) error {
	mods := m.Mods & modMask
	switch m.T {
	case "mouse":
		typ := input.DispatchMouseEventType(m.Type)
		switch typ {
		case input.DispatchMouseEventTypeMousePressed, input.DispatchMouseEventTypeMouseReleased, input.DispatchMouseEventTypeMouseMoved:
		default:
			return nil
		}
		x, y := c.clamp(m.X, m.Y)
		p := input.DispatchMouseEventParams{Type: typ, X: x, Y: y, Modifiers: mods, Buttons: m.Buttons & 7}
		switch m.Button {
		case "left", "middle", "right":
			p.Button = input.MouseButton(m.Button)
		default:
			p.Button = input.MouseButtonNone
		}
		if typ != input.DispatchMouseEventTypeMouseMoved {
			p.ClickCount = min(max(m.Clicks, 1), 3)
		}
		_, err := chromedp.Call(tab, input.DispatchMouseEvent, p)
		return err
	case "wheel":
		x, y := c.clamp(m.X, m.Y)
		_, err := chromedp.Call(tab, input.DispatchMouseEvent, input.DispatchMouseEventParams{
			Type: input.DispatchMouseEventTypeMouseWheel, X: x, Y: y, DeltaX: clampDelta(m.DX), DeltaY: clampDelta(m.DY), Modifiers: mods})
		return err
	case "text":
		if m.Text == "" {
			return nil
		}
		_, err := chromedp.Call(tab, input.InsertText, input.InsertTextParams{Text: m.Text})
		return err
	case "key":
		for _, ev := range keyEvents(m.Key, mods) {
			if _, err := chromedp.Call(tab, input.DispatchKeyEvent, *ev); err != nil {
				return err
			}
		}
	}
	return nil
}

// clamp keeps a point on the page's viewport, as the last frame gave it.
func (c *conn) clamp(x, y float64) (float64, float64) {
	c.fmu.Lock()
	w, h := c.width, c.height
	c.fmu.Unlock()
	if w > 0 {
		x = min(max(x, 0), w-1)
	}
	if h > 0 {
		y = min(max(y, 0), h-1)
	}
	return x, y
}

func clampDelta(d float64) float64 { return min(max(d, -10000), 10000) }

// keyNames are the keys by their DOM name ("Enter", "ArrowDown"): the
// runes of chromedp's key table that are not printed as themselves.
var keyNames = func() map[string]rune {
	m := make(map[string]rune)
	for r, k := range kb.Keys {
		if k.Print && len([]rune(k.Key)) == 1 {
			continue
		}
		if old, ok := m[k.Key]; !ok || r < old {
			m[k.Key] = r
		}
	}
	return m
}()

// keyEvents are the key events of one key press the person made: a DOM
// key value (one character, or a name such as Enter) with modifiers. A
// chord (Ctrl, Alt or Meta held) types nothing.
func keyEvents(key string, mods int64) []*input.DispatchKeyEventParams {
	var r rune
	if rs := []rune(key); len(rs) == 1 {
		r = rs[0]
	} else if kr, ok := keyNames[key]; ok {
		r = kr
	} else {
		return nil
	}
	chord := mods&int64(chromedp.ModifierAlt|chromedp.ModifierCtrl|chromedp.ModifierMeta) != 0
	var out []*input.DispatchKeyEventParams
	for _, ev := range kb.Encode(r) {
		if chord && ev.Type == kb.KeyChar {
			continue
		}
		p := *ev
		p.Modifiers |= mods
		if chord {
			p.Text, p.UnmodifiedText = "", ""
		}
		out = append(out, &p)
	}
	return out
}

// normalizeURL is what a person typed in the address bar as a URL, as a
// browser's address bar reads it: a bare host gets https://, a host:port
// http://. Anything else goes as typed, and the Router decides on it.
func normalizeURL(s string) string {
	s = strings.TrimSpace(s)
	switch {
	case s == "" || strings.Contains(s, "://") || strings.HasPrefix(s, "about:") || strings.HasPrefix(s, "data:"):
		return s
	case !strings.Contains(s, ":"):
		return "https://" + s
	}
	return "http://" + s
}

// errorText is err as the person reads it, with the credentials of any
// URL in it redacted.
func errorText(err error) string {
	fs := strings.Fields(err.Error())
	for i, f := range fs {
		if strings.Contains(f, "://") {
			fs[i] = redact.Display(f)
		}
	}
	s := strings.Join(fs, " ")
	return redact.Cut(s, 600, len(s))
}
