package agent

import (
	"context"
	"errors"
	"regexp"

	"github.com/chromedp/cdproto/target"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent/internal/modeltext"
	"github.com/hybroute/hybroute/provider"
)

// Sessions without CDP. A cloud browser driven through a REST API
// (Camofox) takes navigate, snapshot, click, type, press, scroll, back and
// screenshot through its page (hybroute.RESTPage); the Router still plans
// every call, so a private URL runs on the local browser, over CDP, and a
// metadata URL is refused before any request. browser_exec's code needs
// CDP: on such a session the Router refuses it with the "returned no CDP
// endpoint" message ([hybroute.ErrNoCDPEndpoint]), which tells the model to
// use the other tools, so it is passed on as it is.

// restFn is a tool's body on a page driven through a REST API.
type restFn func(ctx context.Context, p *hybroute.RESTPage, c *call) error

// restTarget stands for the tab of a REST page in the session's memory:
// the server replaces tabs (a refused landing), the page is still the
// session's.
const restTarget target.ID = "rest"

// doEither is do for a tool that also runs on a session without CDP: fn on
// a CDP tab, rest on a REST page.
func (t *Toolset) doEither(ctx context.Context, s *session, key, code string, u use, fn func(ctx context.Context, c *call) error, rest restFn) (hybroute.Result, *call, error) {
	c := &call{}
	res, err := t.r.Exec(ctx, key, code, func(ctx context.Context, h *hybroute.Call) error {
		page := h.REST()
		c.ran, c.h = true, h
		if page == nil {
			return t.run(ctx, s, c, u, fn)
		}
		if u&reads != 0 {
			// As on a CDP tab: nothing is done on a page that wandered
			// to a blocked address between calls.
			if _, err := page.CheckPage(ctx); err != nil {
				return readErr(err)
			}
		}
		return runREST(ctx, c, page, rest)
	}, t.callOptions(hybroute.DrivesREST())...)
	return res, c, err
}

// runREST runs a tool's body on a REST page and notes where it left it.
func runREST(ctx context.Context, c *call, p *hybroute.RESTPage, fn restFn) error {
	c.target = restTarget
	before := p.Landed()
	err := fn(ctx, p, c)
	c.url = p.Landed()
	c.moved = c.moved || c.url != before
	return refusedAction(err)
}

// refusedAction turns the server's refusal of an action (a 4xx: a stale
// ref, a field that takes no text) into what the model can act on; a tab
// the server lost (404, 410) stays the Router's to report.
func refusedAction(err error) error {
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Status < 400 || pe.Status > 499 || pe.Status == 404 || pe.Status == 410 || pe.Status == 401 || pe.Status == 403 {
		return err
	}
	msg := pe.Message
	if msg == "" {
		msg = pe.Code
	}
	return modelErrorf("the browser server refused the %s: %s", pe.Op, modeltext.Quote(msg, 300))
}

// readErr marks a refusal to read a page at a blocked address: nothing
// was read from it.
func readErr(err error) error {
	var b *hybroute.BlockedError
	if errors.As(err, &b) {
		return &pageBlockedError{err: err}
	}
	return err
}

// restRefs rewrites the server's refs ([e4]) as the toolset's own
// snapshots write them ([ref=e4]), which the tool descriptions name.
var restRefs = regexp.MustCompile(`\[(e[0-9]+)\]`)

func restSnapshot(text string, limit int) string {
	return truncate(restRefs.ReplaceAllString(text, "[ref=$1]"), limit)
}

// errRESTConsole is browser_console on a REST page.
var errRESTConsole = modelErrorf("this session's browser is a cloud browser driven through its REST API, without CDP, and it does not report console messages; " +
	"browser_navigate, browser_snapshot, browser_click, browser_type, browser_press, browser_scroll, browser_back and browser_screenshot work on it")
