package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute/agent/internal/modeltext"
	"github.com/hybroute/hybroute/internal/browsertab"
)

// Tool names of the navigation tools.
const (
	ToolNavigate = "browser_navigate"
	ToolBack     = "browser_back"
	ToolForward  = "browser_forward"
	ToolReload   = "browser_reload"
	ToolResize   = "browser_resize"
)

// The bounds of browser_resize, in CSS pixels: a viewport a page can be
// laid out in, and no image a model cannot take.
const (
	minViewport = 200
	maxViewport = 4096
)

var navTools = []toolDef{
	{
		name:   ToolNavigate,
		desc:   "Open a URL in this tab and wait for the load (localhost:3000, example.com are completed). Local and private hosts open in the local browser, public ones in the cloud; metadata addresses are refused.",
		schema: `{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}`,
		run:    (*Toolset).navigate,
	},
	{
		name:   ToolBack,
		desc:   "Go back in this tab's history and wait for the load.",
		schema: noArgs,
		run:    (*Toolset).back,
	},
	{
		name:   ToolForward,
		desc:   "Go forward in this tab's history and wait for the load.",
		schema: noArgs,
		run:    (*Toolset).forward,
	},
	{
		name:   ToolReload,
		desc:   "Reload the page and wait for the load; the old refs no longer resolve.",
		schema: noArgs,
		run:    (*Toolset).reload,
	},
	{
		name:   ToolResize,
		desc:   fmt.Sprintf("Resize this tab's viewport, in CSS pixels (%d to %d a side).", minViewport, maxViewport),
		schema: fmt.Sprintf(`{"type":"object","properties":{"width":{"type":"integer","minimum":%[1]d,"maximum":%[2]d},"height":{"type":"integer","minimum":%[1]d,"maximum":%[2]d}},"required":["width","height"]}`, minViewport, maxViewport),
		run:    (*Toolset).resize,
	},
}

func (t *Toolset) forward(ctx context.Context, s *session, key string, args json.RawMessage) Result {
	if err := decode(args, &struct{}{}); err != nil {
		return argError(err)
	}
	res, c, err := t.do(ctx, s, key, "", moves, func(ctx context.Context, c *call) error {
		return historyStep(ctx, c, 1)
	})
	return t.finishCall(s, key, res, c, err, func() string { return "Went forward." })
}

// historyStep moves the tab delta entries through its history and waits
// for the page to load. The entry's request goes through the Router's guard
// like any navigation; a page restored from the back/forward cache loads
// nothing, and the Router's landing check after the call decides it.
func historyStep(ctx context.Context, c *call, delta int64) error {
	h, err := chromedp.Call(ctx, page.GetNavigationHistory, cdp.Empty{})
	if err != nil {
		return err
	}
	i := h.CurrentIndex + delta
	if i < 0 || int(i) >= len(h.Entries) {
		if delta > 0 {
			return modeltext.Errorf("there is no next page in this tab's history")
		}
		return modeltext.Errorf("there is no previous page in this tab's history")
	}
	// Not chromedp.NavigateForward: it waits for a load event, which a page
	// restored from the back/forward cache never fires.
	return navigating(ctx, c, func() error {
		_, err := chromedp.Call(ctx, page.NavigateToHistoryEntry, page.NavigateToHistoryEntryParams{EntryID: h.Entries[i].ID})
		return err
	})
}

// navigating runs act, which navigates the tab for sure, and waits for the
// navigation to finish (within navWaitMax). Unlike withNavFlag it does not
// guess whether one started: on a loaded machine the browser can report
// the start after a short settle, and the next call would then cut the
// navigation short.
func navigating(ctx context.Context, c *call, act func() error) error {
	w, stop, err := watchNav(ctx, cdp.FrameID(c.target))
	if err != nil {
		return err
	}
	defer stop()
	w.start()
	if err := act(); err != nil {
		return err
	}
	w.wait(ctx)
	c.moved = true
	return nil
}

func (t *Toolset) reload(ctx context.Context, s *session, key string, args json.RawMessage) Result {
	if err := decode(args, &struct{}{}); err != nil {
		return argError(err)
	}
	res, c, err := t.do(ctx, s, key, "", moves, func(ctx context.Context, c *call) error {
		return navigating(ctx, c, func() error {
			_, err := chromedp.Call(ctx, page.Reload, page.ReloadParams{})
			return err
		})
	})
	return t.finishCall(s, key, res, c, err, func() string { return "Reloaded the page." })
}

func (t *Toolset) resize(ctx context.Context, s *session, key string, args json.RawMessage) Result {
	var a struct {
		Width  int `json:"width"`
		Height int `json:"height"`
	}
	if err := decode(args, &a); err != nil {
		return argError(err)
	}
	if a.Width < minViewport || a.Width > maxViewport || a.Height < minViewport || a.Height > maxViewport {
		return toolError(fmt.Sprintf("width %d and height %d: each must be from %d to %d CSS pixels", a.Width, a.Height, minViewport, maxViewport))
	}
	res, c, err := t.do(ctx, s, key, "", 0, func(ctx context.Context, c *call) error {
		return browsertab.WhileAttaching(ctx, func() error {
			_, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
				Width: int64(a.Width), Height: int64(a.Height), DeviceScaleFactor: 1,
			})
			return err
		})
	})
	return t.finishCall(s, key, res, c, err, func() string {
		return fmt.Sprintf("Resized the viewport to %dx%d.", a.Width, a.Height)
	})
}

func (t *Toolset) navigate(ctx context.Context, s *session, key string, args json.RawMessage) Result {
	var a struct {
		URL string `json:"url"`
	}
	if err := decode(args, &a); err != nil {
		return argError(err)
	}
	raw := strings.TrimSpace(a.URL)
	if raw == "" {
		return toolError("url is required: the address to open, such as https://example.com/ or localhost:3000")
	}
	u := CompleteURL(raw)
	body := func() string {
		msg := "Opened " + modeltext.URL(u) + "."
		if u != raw {
			msg = "Opened " + modeltext.URL(u) + " (completed from " + modeltext.Quote(modeltext.URL(raw), 200) + ")."
		}
		return msg
	}
	// Navigation picks the browser: the URL is the call's only literal.
	c := &call{}
	const how = moves | drivesREST
	res, err := t.r.Navigate(ctx, key, u, t.runner(s, c, how, func(ctx context.Context, c *call) error {
		if p := c.rest; p != nil {
			c.moved = true
			_, err := p.Navigate(ctx, u)
			return err
		}
		if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
			return err
		}
		c.moved = true
		// The load event comes before the page's first frame: the page
		// is laid out and painted once before the model reads it, as it
		// is after a click or a keystroke, rather than in the first call
		// that reads it.
		settle(ctx)
		return nil
	}), t.callOptions(how)...)
	return t.finishCall(s, key, res, c, err, body)
}

func (t *Toolset) back(ctx context.Context, s *session, key string, args json.RawMessage) Result {
	if err := decode(args, &struct{}{}); err != nil {
		return argError(err)
	}
	res, c, err := t.do(ctx, s, key, "", moves|drivesREST, func(ctx context.Context, c *call) error {
		if p := c.rest; p != nil {
			c.moved = true
			_, err := p.Back(ctx)
			return err
		}
		// A history step navigates for sure: wait for it as forward does,
		// so that the next call cannot cut it short.
		return historyStep(ctx, c, -1)
	})
	return t.finishCall(s, key, res, c, err, func() string { return "Went back." })
}
