package agent

import (
	"context"
	"errors"
	"regexp"

	"github.com/chromedp/cdproto/target"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent/internal/modeltext"
	"github.com/hybroute/hybroute/agent/internal/snapshot"
	"github.com/hybroute/hybroute/netpolicy"
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

// restTarget stands for the tab of a REST page in the session's memory:
// the server replaces tabs (a refused landing), the page is still the
// session's.
const restTarget target.ID = "rest"

// runREST runs a tool's body on a REST page and notes where it left it.
// As on a CDP tab, a reading tool does nothing on a page that wandered to
// a blocked address between calls.
func runREST(ctx context.Context, c *call, p *hybroute.RESTPage, u use, fn func(ctx context.Context, c *call) error) error {
	if u&reads != 0 {
		if _, err := p.CheckPage(ctx); err != nil {
			return readErr(err)
		}
	}
	c.rest, c.target = p, restTarget
	before := p.Landed()
	err := fn(ctx, c)
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
	return modeltext.Errorf("the browser server refused the %s: %s", pe.Op, modeltext.Quote(msg, 300))
}

// readErr marks a refusal to read a page at a blocked address: nothing
// was read from it.
func readErr(err error) error {
	var b *netpolicy.BlockedError
	if errors.As(err, &b) {
		return &pageBlockedError{err: err}
	}
	return err
}

// restRefs rewrites the server's refs ([e4]) as the toolset's own
// snapshots write them ([ref=e4]), which the tool descriptions name.
var restRefs = regexp.MustCompile(`\[(e[0-9]+)\]`)

func restSnapshot(text string, limit int) string {
	return snapshot.Truncate(restRefs.ReplaceAllString(text, "[ref=$1]"), limit)
}

// errRESTConsole is browser_console on a REST page.
var errRESTConsole = modeltext.Errorf("this session's browser is a cloud browser driven through its REST API, without CDP, and it does not report console messages; " +
	"browser_navigate, browser_snapshot, browser_click, browser_type, browser_press, browser_scroll, browser_back and browser_screenshot work on it")
