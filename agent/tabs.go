package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent/internal/modeltext"
)

// ToolTabs is the name of the tabs tool.
const ToolTabs = "browser_tabs"

var tabTools = []toolDef{
	{
		name:   ToolTabs,
		desc:   "This session's tabs: list (id t1…, title, URL, browser), select, new (at url, routed as browser_navigate does) or close. Tools act on the current tab; popups become tabs.",
		schema: `{"type":"object","properties":{"action":{"type":"string","enum":["list","select","new","close"]},"id":{"type":"string","description":"For select, close: e.g. t2"},"url":{"type":"string","description":"For new"}},"required":["action"]}`,
		run:    (*Toolset).tabsTool,
	},
}

// tabNames gives the browser's long target ids short names the model
// writes, stable for the session's life.
type tabNames struct {
	byID   map[string]string
	byName map[string]string
}

func (n *tabNames) name(id string) string {
	if nm, ok := n.byID[id]; ok {
		return nm
	}
	if n.byID == nil {
		n.byID, n.byName = map[string]string{}, map[string]string{}
	}
	nm := fmt.Sprintf("t%d", len(n.byID)+1)
	n.byID[id], n.byName[nm] = nm, id
	return nm
}

func (n *tabNames) id(name string) (string, bool) {
	id, ok := n.byName[strings.TrimSpace(name)]
	return id, ok
}

func (t *Toolset) tabsTool(ctx context.Context, s *session, key string, args json.RawMessage) Result {
	var a struct {
		Action string `json:"action"`
		ID     string `json:"id"`
		URL    string `json:"url"`
	}
	if err := decode(args, &a); err != nil {
		return argError(err)
	}
	if (a.Action == "select" || a.Action == "close") == (a.ID == "") {
		if a.ID == "" {
			return toolError(a.Action + " needs the tab's id from browser_tabs list, e.g. t2")
		}
		return toolError("id is for select and close only")
	}
	if a.URL != "" && a.Action != "new" {
		return toolError("url is for new only")
	}
	switch a.Action {
	case "list":
		return t.listTabs(ctx, s, key, "")
	case "new":
		return t.newTab(ctx, s, key, strings.TrimSpace(a.URL))
	case "select", "close":
		id, ok := s.names.id(a.ID)
		if !ok {
			return toolError(fmt.Sprintf("there is no tab %q; call browser_tabs list for the tabs' ids", a.ID))
		}
		var err error
		msg := "Switched to tab " + a.ID + "."
		if a.Action == "select" {
			_, err = t.r.SelectTab(ctx, key, id)
		} else {
			err = t.r.CloseTab(ctx, key, id)
			msg = "Closed tab " + a.ID + "."
		}
		if err != nil {
			return toolError(tabErr(err, a.ID))
		}
		return t.showFront(ctx, s, key, msg)
	}
	return toolError(fmt.Sprintf("action %q: use list, select, new or close", a.Action))
}

func tabErr(err error, name string) string {
	switch {
	case errors.Is(err, hybroute.ErrNoSuchTab):
		return "tab " + name + " is gone (it closed itself, or the session's browser ended); call browser_tabs list"
	case errors.Is(err, hybroute.ErrLastTab):
		return "tab " + name + " is the only tab of its browser; open another first, or use browser_close to end the session"
	}
	return describe(err, nil, "")
}

// showFront runs an empty call on the session's current tab, so the result
// says where the session is now (and the page is checked first).
func (t *Toolset) showFront(ctx context.Context, s *session, key, msg string) Result {
	res, c, err := t.do(ctx, s, key, "", reads, nil)
	if c.ran && err == nil {
		// The session changed tabs on purpose: no "browser started
		// afresh" note.
		s.pageKey, s.pageTarget = res.CacheKey, c.target
	}
	return t.finishCall(s, key, res, c, err, func() string { return msg })
}

func (t *Toolset) listTabs(ctx context.Context, s *session, key, head string) Result {
	tabs, err := t.r.Tabs(ctx, key)
	if err != nil {
		return toolError(describe(err, nil, key))
	}
	if len(tabs) == 0 {
		return Result{Text: "No tabs yet: browser_navigate opens the session's first tab."}
	}
	var b strings.Builder
	b.WriteString(head)
	b.WriteString("Tabs:")
	for _, tab := range tabs {
		fmt.Fprintf(&b, "\n- %s", s.names.name(tab.ID))
		if tab.Current {
			b.WriteString(" [current]")
		}
		if tab.Title != "" {
			b.WriteString(" " + modeltext.Quote(tab.Title, 120))
		}
		u := modeltext.URL(tab.URL)
		if u == "" {
			u = "(loading)"
		}
		fmt.Fprintf(&b, " %s (%s browser)", u, tab.Route)
	}
	return Result{Text: b.String()}
}

func (t *Toolset) newTab(ctx context.Context, s *session, key, raw string) Result {
	c := &call{}
	open := func(nav string) func(ctx context.Context, h *hybroute.Call) error {
		return func(ctx context.Context, h *hybroute.Call) error {
			c.ran, c.h = true, h
			tctx, err := h.OpenTab(ctx)
			if err != nil {
				return err
			}
			return t.run(tctx, s, c, moves, func(ctx context.Context, c *call) error {
				if nav == "" {
					return nil
				}
				return chromedp.Do(ctx, chromedp.Navigate(nav))
			})
		}
	}
	var res hybroute.Result
	var err error
	u := ""
	if raw == "" {
		res, err = t.r.Exec(ctx, key, "", open(""), t.callOptions(0)...)
	} else {
		// The URL is planned as a navigation: it decides the browser the
		// tab opens in, and the floor refuses it before any tab opens.
		u = CompleteURL(raw)
		res, err = t.r.Navigate(ctx, key, u, open(u), t.callOptions(0)...)
	}
	if c.ran && c.target != "" && !res.PageChanged {
		s.pageTarget = c.target // a tab the model asked for: no "started afresh" note
	}
	return t.finishCall(s, key, res, c, err, func() string {
		msg := "Opened a new tab " + s.names.name(string(c.target))
		if u != "" {
			msg += " at " + modeltext.URL(u)
		}
		msg += "; it is the current tab."
		if res.PageChanged {
			msg += " It opened in " + routeName(Where{Route: res.Route, FallbackFromCloud: res.FallbackFromCloud}) +
				", not in the browser of the previous tab: its URL decided the browser. The previous tabs are kept (browser_tabs list)."
		}
		return msg
	})
}
