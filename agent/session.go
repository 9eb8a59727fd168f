package agent

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/css"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent/internal/download"
	"github.com/hybroute/hybroute/agent/internal/modeltext"
	"github.com/hybroute/hybroute/agent/internal/snapshot"
	"github.com/hybroute/hybroute/internal/browsertab"
	"github.com/hybroute/hybroute/route"
)

// session is the toolset's memory of one session key: which browser session
// its page is in, the refs of its last snapshot, and its console.
type session struct {
	// turn is held by the call that runs (one tool call at a time). A
	// channel, not a mutex: a waiting call whose caller went away leaves
	// the queue at once instead of running for no one.
	turn chan struct{}
	gone atomic.Bool // released: a call that waited for its turn takes a fresh session

	// The page: the cache key of the browser session it is in and the tab
	// it is in there. Empty before the first call that ran.
	pageKey    string
	pageTarget target.ID
	// checked is the last page URL the toolset's own re-check let stand,
	// in checkedIn.
	checked   string
	checkedIn target.ID

	refs  snapshot.Refs
	names tabNames // short names of the session's tabs (tabs.go)

	rec *sessionRecord // its record (record.go); nil when not recording

	tmu     sync.Mutex // guards tabs and ended; console has its own lock
	tabs    map[target.ID]context.CancelFunc
	ended   bool
	console consoleBuf
	dl      *download.Tracker // its downloads (download.go)
	net     netState
	worlds  snapshot.Worlds // the walk's world in each tab
	secrets heldSecrets     // the documents that hold a typed secret (secrets.go)
}

func (t *Toolset) newSession() *session {
	return &session{
		turn:    make(chan struct{}, 1),
		tabs:    make(map[target.ID]context.CancelFunc),
		console: consoleBuf{limit: t.cfg.consoleLimit},
		dl: download.New(download.Config{Dir: t.cfg.downloadDir, MaxBytes: t.cfg.maxDownload,
			MaxTotal: t.cfg.dlLimits.Bytes, MaxFiles: t.cfg.dlLimits.Files, PerMinute: t.cfg.dlLimits.PerMinute,
			Keep: t.cfg.keepDownloads, Go: t.bg.Go}),
		rec: t.newRecord(),
	}
}

// lock waits for the session's turn until ctx ends.
func (s *session) lock(ctx context.Context) error {
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	if err := ctx.Err(); err != nil {
		// Both were ready: a caller that is gone does not run.
		s.unlock()
		return context.Cause(ctx)
	}
	return nil
}

func (s *session) unlock() { <-s.turn }

// end stops the session's console collectors. It does not take a turn: it runs
// from browser_close, inside a call.
func (s *session) end() {
	s.tmu.Lock()
	s.ended = true
	for id, cancel := range s.tabs {
		cancel()
		delete(s.tabs, id)
	}
	s.tmu.Unlock()
	s.dl.End()
	s.net.end()
	if s.rec != nil {
		s.rec.stopFilming() // while the tabs are there to stop it in
	}
}

// call is one tool call's run inside the Router's Exec.
type call struct {
	h      *hybroute.Call     // the Router's handle of the call; nil until it runs
	rest   *hybroute.RESTPage // the page, when it has no CDP (rest.go); nil on a CDP tab
	ran    bool               // the Router gave the call a browser and ran it
	target target.ID          // the tab it ran in
	title  string             // the page title at the end of the call
	url    string             // the page URL the run saw last (Where uses the Router's)
	moved  bool               // the tool saw the page navigate
	script bool               // the call runs the model's script (a timeout is the script's)
	// blanked: the Router refused a page of the call and sent the tab to
	// about:blank (Result.SentToBlank).
	blanked bool
	// downloads are the downloads the call started, for the result.
	downloads string
	// downloadNav: a navigation of the call turned into a download.
	downloadNav bool
	// refused lists what the floor refused of the pages the call loaded,
	// for the result (refusedDuring); "" when nothing was.
	refused string
	// pageErr is why the page is the browser's error page after the call
	// (hybroute.Call.PageError); nil when it is not.
	pageErr error
}

// callHook is work attached to every call on a CDP tab, apart from the
// tool's body: the session's downloads (download.go) and its request
// log (network.go).
type callHook interface {
	// before runs once the call has its tab, before the page check. The
	// after it returns, if any, runs on the outcome of the tool's body,
	// and its error stands for the body's. An error of before leaves the
	// call to run without the hook's work, and is logged.
	before(ctx context.Context, s *session, c *call) (after func(error) error, err error)
	// watches names what the hook follows, for the log.
	watches() string
}

// How a tool uses the page.
type use int

const (
	// reads: a content tool. The page's URL is re-checked before fn runs.
	reads use = 1 << iota
	// moves: the tool may take the page elsewhere; the title is read after.
	moves
	// light: the tool reads the page's title itself, in the round trip
	// that does its work, so the call costs no round trip of its own: the
	// page's URL is checked where the Router tracks it (CheckPage, no
	// round trip) on every call, and read again only after a navigation.
	light
	// drivesREST: the tool also runs on a page without CDP, driven
	// through its REST API (rest.go): fn finds it in c.rest.
	drivesREST
)

// do runs fn on the session's page through the Router. code is what the
// Router plans the call from: "" keeps the session's sticky route, so the
// call runs where the page is. u says how fn uses the page.
func (t *Toolset) do(ctx context.Context, s *session, key, code string, u use, fn func(ctx context.Context, c *call) error) (hybroute.Result, *call, error) {
	c := &call{}
	res, err := t.r.Exec(ctx, key, code, t.runner(s, c, u, fn), t.callOptions(u)...)
	return res, c, err
}

// runner is the run a tool hands the Router: fn on the page the call
// gets, a CDP tab (run), or, for a tool that drives one (drivesREST), a
// page without CDP (runREST), which fn finds in c.rest.
func (t *Toolset) runner(s *session, c *call, u use, fn func(ctx context.Context, c *call) error) func(context.Context, *hybroute.Call) error {
	return func(ctx context.Context, h *hybroute.Call) error {
		c.ran, c.h = true, h
		if p := h.REST(); p != nil && u&drivesREST != 0 {
			return runREST(ctx, c, p, u, fn)
		}
		err := t.run(ctx, s, c, u, fn)
		if err == nil {
			// A page that went to the error page between calls (a
			// refused load the page started on its own) is explained.
			c.pageErr = h.PageError()
		}
		return err
	}
}

// run is the body of every call: set up a tab the first time it is seen,
// re-check the page's URL, run fn, read the title.
func (t *Toolset) run(ctx context.Context, s *session, c *call, u use, fn func(ctx context.Context, c *call) error) error {
	cc := chromedp.FromContext(ctx)
	if cc == nil || cc.Target == nil {
		if err := chromedp.Do(ctx); err != nil {
			return err
		}
		cc = chromedp.FromContext(ctx)
	}
	c.target = cc.Target.TargetID
	t.prepareTab(ctx, s, cc)
	afters := make([]func(error) error, 0, len(t.hooks))
	for _, h := range t.hooks {
		after, err := h.before(ctx, s, c)
		if err != nil {
			// The tab still works; its downloads are the browser's
			// default, or its requests unlisted.
			t.cfg.log.LogAttrs(ctx, slog.LevelWarn, "hybroute agent: watching the tab's "+h.watches(), slog.String("error", err.Error()))
		}
		if after != nil {
			afters = append(afters, after)
		}
	}
	if u&light != 0 {
		if err := checkPage(ctx, c); err != nil {
			return err
		}
	} else if u&reads != 0 || u&moves == 0 {
		pu, title, err := pageInfo(ctx)
		if err != nil {
			return err
		}
		c.url, c.title = pu, title
		// A page still at the URL this check let stand in this tab was
		// checked then (and the Router re-checks it after every call);
		// anything else is checked now.
		if u&reads != 0 && (pu != s.checked || c.target != s.checkedIn) {
			if err := checkPage(ctx, c); err != nil {
				return err
			}
			s.checked, s.checkedIn = pu, c.target
		}
	}
	if fn != nil {
		start := time.Now()
		err := fn(ctx, c)
		for i := len(afters) - 1; i >= 0; i-- {
			err = afters[i](err)
		}
		if u&moves != 0 && !c.script {
			// A page the call loaded may have asked for what the floor
			// refused (a frame, a script): the page shows only a
			// network error, so the model reads why with the call.
			// (browser_exec lists its own, with its result.)
			c.refused = refusedDuring(c, start, false)
		}
		if err != nil {
			return err
		}
	}
	// A tool that may move the page reads its URL and title again only if
	// it saw the page navigate (a navigation tool always does).
	if u&moves != 0 && (c.moved || u&reads == 0) {
		pu, title, err := pageInfo(ctx)
		if err != nil {
			return err
		}
		c.url, c.title = pu, title
	}
	return nil
}

// checkPage refuses to read a page whose URL the floor blocks where the
// page is (the Router's landed-URL rule, which the Router applies after
// the call too): this check comes first, so nothing is read from it.
func checkPage(ctx context.Context, c *call) error {
	if _, err := c.h.CheckPage(ctx); err != nil {
		return &pageBlockedError{err: err}
	}
	return nil
}

// pageBlockedError is a content tool refusing to read a blocked page.
type pageBlockedError struct{ err error }

func (e *pageBlockedError) Error() string {
	return "the page is at a blocked address: " + e.err.Error()
}
func (e *pageBlockedError) Unwrap() error { return e.err }

// pageInfo reads the URL and title of the tab's current history entry in
// one round trip. The entry's URL is the main frame's, as the Router's
// landed-URL check sees it (an error page keeps the URL it failed to load).
func pageInfo(ctx context.Context) (string, string, error) {
	// A page that navigates itself can be between two documents at any
	// moment, and a navigation to another site swaps the page's process
	// after its load event: the history is asked again until the swap
	// is over.
	var h page.GetNavigationHistoryResult
	err := browsertab.WhileAttaching(ctx, func() (err error) {
		h, err = chromedp.Call(ctx, page.GetNavigationHistory, cdp.Empty{})
		return err
	})
	if err != nil {
		return "", "", err
	}
	if h.CurrentIndex < 0 || int(h.CurrentIndex) >= len(h.Entries) {
		return "", "", nil
	}
	e := h.Entries[h.CurrentIndex]
	return e.URL, e.Title, nil
}

// prepareTab sets up a tab the first time a call runs in it: the console
// collector. (The local viewport is the Router's: hybroute.WithLocalViewport.)
func (t *Toolset) prepareTab(ctx context.Context, s *session, cc *chromedp.Context) {
	id := cc.Target.TargetID
	s.tmu.Lock()
	_, seen := s.tabs[id]
	if seen || s.ended {
		s.tmu.Unlock()
		return
	}
	// Subscribe now, before anything of this call runs, so no message of
	// the page's load is lost. The collector outlives the call: its context
	// keeps the tab's values without the call's cancellation.
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.tabs[id] = cancel
	if err := s.worlds.Listen(cctx, id); err != nil {
		// Snapshots of the tab take the long way.
		t.cfg.log.LogAttrs(ctx, slog.LevelWarn, "hybroute agent: following the tab's documents", slog.String("error", err.Error()))
	}
	snapshot.Warm(ctx)
	quietTab(ctx)
	msgs := chromedp.Console(cctx)
	t.bg.Go(func() {
		defer cancel()
		for m, err := range msgs {
			if err != nil {
				break
			}
			s.console.add(m)
		}
		s.tmu.Lock()
		delete(s.tabs, id)
		s.tmu.Unlock()
	})
	s.tmu.Unlock()
}

// quietTab turns off the DOM and CSS domains chromedp enables on every
// tab it attaches to. With DOM on, chromedp reads the whole document
// (DOM.getDocument) at each document update, twice per navigation, and the
// renderer answers that before the call that follows the navigation; with
// CSS on, the renderer reports every style sheet. The tools read the page
// through its own walk and through backend node ids, which need neither
// (as Puppeteer does not enable them), and no chromedp query runs on the
// toolset's tabs. A tab that keeps them on only pays that cost.
func quietTab(ctx context.Context) {
	_, _ = chromedp.Call(ctx, css.Disable, cdp.Empty{})
	_, _ = chromedp.Call(ctx, dom.Disable, cdp.Empty{})
}

// finish turns a Router result into the tool's Where and, when the page
// changed browsers, a note for the model.
func (s *session) finish(res hybroute.Result, c *call) (Where, string) {
	if !c.ran {
		return Where{}, ""
	}
	w := Where{
		Ran:               true,
		Route:             res.Route,
		FallbackFromCloud: res.FallbackFromCloud,
		FallbackReason:    res.FallbackReason,
		TabReplaced:       res.TabReplaced,
		Dialogs:           res.Dialogs,
		URL:               res.LandedURL,
		Title:             c.title,
		WaitedForRoom:     res.WaitedForRoom,
		Navigated:         c.moved && !c.downloadNav,
	}
	if w.URL == "" {
		w.URL = c.url
	}
	c.blanked = res.SentToBlank
	if res.SentToBlank {
		// The page was refused and left: the tab is on about:blank, not on
		// the refused URL (LandedURL) or the error page the run saw.
		w.URL, w.Title = "about:blank", ""
	}
	w.URL = modeltext.URL(w.URL)
	var note string
	switch {
	case s.pageKey == "":
	case res.PageChanged:
		w.BrowserChanged = true
		note = "Note: the page changed browsers. This call ran in " + routeName(w) +
			", not in the browser the session's page was in: the URLs in the call decided the route. " +
			"The session now follows this page; the previous page was left as it was."
	case res.Evicted:
		w.BrowserChanged = true
		note = "Note: this session's browser was closed while it was idle, to make room for other sessions, so this call ran in a fresh one: the previous page, cookies and logins are gone; navigate again if you need them."
	case res.ContextRenewed:
		w.BrowserChanged = true
		note = "Note: this call ran in a fresh browser context of the local browser: the old one had loaded pages of hosts other than this call names, and what they left (workers, other tabs) must not reach the private hosts this call may open. Cookies came along; the previous page, history and storage did not."
	case res.TabReplaced:
		w.BrowserChanged = true
		note = "Note: the tab did not answer after the previous call timed out (a script that never ends, say), so this call ran in a fresh tab of the same browser: cookies and logins are kept, the previous page is gone; navigate again if you need it."
	case c.target != s.pageTarget:
		w.BrowserChanged = true
		note = "Note: the session's browser was started afresh (it was idle too long, or its browser ended), so the previous page is gone; navigate again."
	}
	s.pageKey, s.pageTarget = res.CacheKey, c.target
	if w.WaitedForRoom > 0 {
		if note != "" {
			note += "\n\n"
		}
		note += fmt.Sprintf("Note: this call waited %s for a browser session: the browser keeps a bounded number of sessions, and all were running calls.",
			w.WaitedForRoom.Round(100*time.Millisecond))
	}
	if d := dialogLines(res.Dialogs); d != "" {
		if note != "" {
			note += "\n\n"
		}
		note += d
	}
	return w, note
}

// dialogLines tells the model which JavaScript dialogs the page opened and
// how they were answered: the page went on as if a user had.
func dialogLines(ds []hybroute.Dialog) string {
	if len(ds) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("The page opened JavaScript dialogs")
	if !slices.ContainsFunc(ds, func(d hybroute.Dialog) bool { return d.Pending }) {
		b.WriteString(", answered automatically")
	}
	b.WriteString(":")
	for _, d := range ds {
		if d.Pending {
			b.WriteString("\n- " + d.Type + " " + modeltext.Quote(modeltext.PageText(d.Message), 300))
			if d.Type == "prompt" {
				b.WriteString(" (default " + modeltext.Quote(d.DefaultPrompt, 100) + ")")
			}
			b.WriteString(": open, waiting for your answer: call browser_handle_dialog")
			continue
		}
		b.WriteString("\n- ")
		if d.Type == "dropped" {
			b.WriteString(d.Message)
			continue
		}
		b.WriteString(d.Type)
		if d.Message != "" {
			b.WriteString(" ")
			b.WriteString(modeltext.Quote(modeltext.PageText(d.Message), 300))
		}
		switch {
		case d.Type == "beforeunload" && d.Accepted:
			b.WriteString(": left the page")
		case d.Type == "beforeunload":
			b.WriteString(": stayed on the page (the navigation was cancelled)")
		case d.Type == "alert":
			b.WriteString(": closed")
		case d.Accepted:
			b.WriteString(": accepted")
		default:
			b.WriteString(": dismissed")
		}
	}
	return b.String()
}

// routeName names where a call ran, for the model.
func routeName(w Where) string {
	switch {
	case w.Route == route.Local && w.FallbackFromCloud:
		return "the local browser, standing in for the cloud browser"
	case w.Route == route.Local:
		return "the local browser"
	}
	return "the cloud browser"
}

// whereLine is the line every result that reached a browser carries.
func whereLine(w Where) string {
	var b strings.Builder
	b.WriteString("Browser: ")
	b.WriteString(routeName(w))
	if w.FallbackFromCloud {
		b.WriteString(" — fallback from cloud: the cloud provider could not give this session a browser")
		if w.FallbackReason != "" {
			// Quoted: the reason may come from a shared store, and the
			// model must read it as data.
			b.WriteString(" (reason: ")
			b.WriteString(modeltext.Quote(w.FallbackReason, 300))
			b.WriteString(")")
		}
	}
	b.WriteString("\nPage: ")
	if w.Title != "" {
		b.WriteString(modeltext.Quote(w.Title, 200))
		b.WriteString(" ")
	}
	if w.URL == "" {
		b.WriteString("(none)")
	} else {
		b.WriteString(w.URL)
	}
	return b.String()
}

// result assembles a tool's Result: the where-line, any note, the body.
func result(w Where, note, body string, isErr bool) Result {
	var parts []string
	if isErr && body != "" {
		parts = append(parts, body)
	}
	if w.Ran {
		parts = append(parts, whereLine(w))
	}
	if note != "" {
		parts = append(parts, note)
	}
	if !isErr && body != "" {
		parts = append(parts, body)
	}
	return Result{Text: strings.Join(parts, "\n\n"), IsError: isErr, Where: w}
}
