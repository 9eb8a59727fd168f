package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute"
)

// toolDef is one tool: what the model reads about it and what runs.
type toolDef struct {
	name, desc, schema string
	run                func(t *Toolset, ctx context.Context, s *session, key string, args json.RawMessage) Result
}

// Tool names.
const (
	ToolNavigate   = "browser_navigate"
	ToolSnapshot   = "browser_snapshot"
	ToolClick      = "browser_click"
	ToolType       = "browser_type"
	ToolPress      = "browser_press"
	ToolScroll     = "browser_scroll"
	ToolBack       = "browser_back"
	ToolScreenshot = "browser_screenshot"
	ToolConsole    = "browser_console"
	ToolExec       = "browser_exec"
	ToolClose      = "browser_close"
)

const noArgs = `{"type":"object","properties":{},"additionalProperties":false}`

var toolDefs = slices.Concat([]toolDef{
	{
		name: ToolNavigate,
		desc: "Open a URL in the browser tab of this session and wait for it to load. " +
			"Write it as you would in an address bar: localhost:3000 becomes http://localhost:3000/, example.com becomes https://example.com/. " +
			"The URL decides which browser opens it: public sites open in the cloud browser, addresses on this machine or its network (localhost, 192.168.x.x) in the local browser; the result says which. " +
			"Cloud metadata addresses (169.254.169.254 and the like) are always refused. " +
			"Call browser_snapshot next to read the page.",
		schema: `{"type":"object","properties":{"url":{"type":"string","description":"The URL to open, e.g. https://example.com/docs or localhost:3000"}},"required":["url"],"additionalProperties":false}`,
		run:    (*Toolset).navigate,
	},
	{
		name: ToolSnapshot,
		desc: "Read the current page as an accessibility tree: one line per element, indented, with roles, names and values " +
			"(- heading \"Orders\" [level=1], - button \"Save\" [ref=e4], - textbox \"Email\" [ref=e7]: a@b.c). " +
			"Interactive elements carry a ref that browser_click and browser_type take. Prefer this over a screenshot to read or act on a page. " +
			"Refs stay valid until the page changes; take a new snapshot after a navigation. Frames of the page are included. " +
			"On a large page, shape it: depth (levels), ref (one element's subtree), find (only what contains a text), or file (written to a file, not returned).",
		schema: snapshotSchema,
		run:    (*Toolset).snapshot,
	},
	{
		name: ToolClick,
		desc: "Click an element of the page, by its ref from the last browser_snapshot, with a real mouse click at the center of the element (scrolled into view first). " +
			"If the click starts a navigation, the tool waits for the new page to load.",
		schema: `{"type":"object","properties":{"ref":{"type":"string","description":"The element's ref from the last snapshot, e.g. e12"},"element":{"type":"string","description":"Optional: what the element is, in words, for the log"}},"required":["ref"],"additionalProperties":false}`,
		run:    (*Toolset).click,
	},
	{
		name: ToolType,
		desc: "Type text into an editable element (a textbox, a search box, a text area, a contenteditable) by its ref from the last browser_snapshot. " +
			"The text replaces what the field held. Set submit to true to press Enter afterwards (submits most forms).",
		schema: `{"type":"object","properties":{"ref":{"type":"string","description":"The field's ref from the last snapshot, e.g. e7"},"text":{"type":"string","description":"The text to put in the field"},"submit":{"type":"boolean","description":"Press Enter after typing","default":false}},"required":["ref","text"],"additionalProperties":false}`,
		run:    (*Toolset).typeText,
	},
	{
		name: ToolPress,
		desc: "Press a key, or a key combination, in the page (on the focused element): a DOM key name such as Enter, Tab, Escape, Backspace, ArrowDown, PageDown, or one character; " +
			"combinations as Shift+Tab or Control+a.",
		schema: `{"type":"object","properties":{"key":{"type":"string","description":"The key, e.g. Enter, ArrowDown, Shift+Tab, a"}},"required":["key"],"additionalProperties":false}`,
		run:    (*Toolset).press,
	},
	{
		name:   ToolScroll,
		desc:   "Scroll the page by most of a screen in a direction, and report the scroll position and the page size.",
		schema: `{"type":"object","properties":{"direction":{"type":"string","enum":["up","down","left","right"],"description":"Which way to scroll"}},"required":["direction"],"additionalProperties":false}`,
		run:    (*Toolset).scroll,
	},
	{
		name:   ToolBack,
		desc:   "Go back to the previous page in this tab's history and wait for it to load.",
		schema: noArgs,
		run:    (*Toolset).back,
	},
	{
		name: ToolScreenshot,
		desc: "Take a screenshot of the page as it is shown (the viewport), of the whole page with full_page, or of one element by its ref. " +
			"PNG by default; format jpeg with a quality makes it smaller. max_width and max_height scale the image down to fit (never up), so a large page stays affordable. " +
			"Use it to see layout, images or charts; use browser_snapshot to read text or find elements.",
		schema: screenshotSchema,
		run:    (*Toolset).screenshot,
	},
	{
		name: ToolConsole,
		desc: "Read the page's console messages (console.log, warnings, errors) and uncaught exceptions since the last read. " +
			"With clear false, the messages are kept and shown again on the next read.",
		schema: `{"type":"object","properties":{"clear":{"type":"boolean","description":"Forget the messages returned, so the next read shows only newer ones","default":true}},"additionalProperties":false}`,
		run:    (*Toolset).console,
	},
	{
		name: ToolExec,
		desc: "Run JavaScript in the page and return its result as JSON. A single expression returns its value (document.title); " +
			"for several statements use return (const rows = document.querySelectorAll('tr'); return rows.length). " +
			"await works at the top level (await fetch('/api/items').then(r => r.json())). The result must be JSON-serialisable: return strings, numbers, arrays, plain objects, not DOM nodes. " +
			"URLs written in the code decide the browser like browser_navigate does: code that names a local or private address runs in the local browser, and the result says when that moved the session away from its page.",
		schema: `{"type":"object","properties":{"code":{"type":"string","description":"JavaScript to run in the page"}},"required":["code"],"additionalProperties":false}`,
		run:    (*Toolset).exec,
	},
	{
		name: ToolNetworkRequests,
		desc: "List the requests the page made since its last navigation: method, status (or why it failed), type, size and URL, " +
			"and the requests the security guard refused, with why. Use it to see which API calls a page makes or why something did not load.",
		schema: networkSchema,
		run:    (*Toolset).networkRequests,
	},
	{
		name: ToolDownloads,
		desc: "List this session's downloads: each file's name, size, type and where it was saved, or why it was refused or is still going. " +
			"A click or a navigation that starts a download reports it in its own result; this lists them all, and those that finished later.",
		schema: noArgs,
		run:    (*Toolset).downloadsTool,
	},
	{
		name: ToolPDFSave,
		desc: "Save the current page as a PDF file in the download directory, and say where. " +
			"Works where the browser prints to PDF (a headless Chromium, local or cloud).",
		schema: pdfSchema,
		run:    (*Toolset).pdfSave,
	},
	{
		name:   ToolClose,
		desc:   "Close this session's browsers and forget its page. The next browser call starts a fresh session.",
		schema: noArgs,
		run:    (*Toolset).closeTool,
	},
	statusTool,                         // status.go
	stateToolDefs[0], stateToolDefs[1], // agent/state.go
}, tabDefs, navDefs, formDefs, pointerDefs, uploadDefs, waitDefs, dialogDefs)

var toolByName = func() map[string]*toolDef {
	m := make(map[string]*toolDef, len(toolDefs))
	for i := range toolDefs {
		m[toolDefs[i].name] = &toolDefs[i]
	}
	return m
}()

func toolNames() string {
	names := make([]string, len(toolDefs))
	for i, d := range toolDefs {
		names[i] = d.name
	}
	return strings.Join(names, ", ")
}

// decode reads the arguments strictly: a misspelt argument is an error the
// model can fix, not something silently ignored.
func decode(args json.RawMessage, v any) error {
	d := json.NewDecoder(bytes.NewReader(args))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return modelErrorf("invalid arguments: %v", strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// finishCall is the common end of a tool: describe an error, or render the
// body, with where the call ran.
func (t *Toolset) finishCall(s *session, key string, res hybroute.Result, c *call, err error, body func() string) Result {
	w, note := s.finish(res, c)
	if err != nil && dialogOpened(err, res) {
		// The action went through: the page answered it with a dialog,
		// which waits for the model (dialogs.go).
		return result(w, note, dialogWaits, false)
	}
	if err != nil {
		return result(w, note, describe(err, c, key), true)
	}
	text := ""
	if body != nil {
		text = body()
	}
	if c != nil && c.downloads != "" {
		if c.downloadNav {
			// The navigation the tool saw was the download's: no new page.
			text = strings.Replace(text, navNote(true), " The link led to a download; the page stayed as it was.", 1)
		}
		text += "\n\n" + c.downloads
	}
	return result(w, note, text, false)
}

func argError(err error) Result { return toolError(describe(err, nil, "")) }

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
		msg := "Opened " + shownURL(u) + "."
		if u != raw {
			msg = "Opened " + shownURL(u) + " (completed from " + quote(shownURL(raw), 200) + ")."
		}
		return msg
	}
	// Navigation picks the browser: the URL is the call's only literal.
	c := &call{}
	res, err := t.r.Navigate(ctx, key, u, func(ctx context.Context, h *hybroute.Call) error {
		c.ran, c.h = true, h
		if page := h.REST(); page != nil {
			return runREST(ctx, c, page, func(ctx context.Context, p *hybroute.RESTPage, c *call) error {
				c.moved = true
				_, err := p.Navigate(ctx, u)
				return err
			})
		}
		return t.run(ctx, s, c, moves, func(ctx context.Context, c *call) error {
			if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
				return err
			}
			// The load event comes before the page's first frame: the
			// page is laid out and painted once before the model reads
			// it, as it is after a click or a keystroke, rather than in
			// the first call that reads it.
			settle(ctx)
			return nil
		})
	}, t.callOptions(hybroute.DrivesREST())...)
	return t.finishCall(s, key, res, c, err, body)
}

func (t *Toolset) snapshot(ctx context.Context, s *session, key string, args json.RawMessage) Result {
	var a snapshotArgs
	if err := decode(args, &a); err != nil {
		return argError(err)
	}
	o, err := a.options(t.cfg.snapshotLimit)
	if err != nil {
		return argError(err)
	}
	if a.File != "" {
		if err := t.checkSnapshotFile(a.File); err != nil {
			return argError(err)
		}
	}
	var text string
	res, c, err := t.doEither(ctx, s, key, "", reads|light, func(ctx context.Context, c *call) error {
		var err error
		text, err = t.takeSnapshot(ctx, s, c, o)
		return err
	}, func(ctx context.Context, p *hybroute.RESTPage, c *call) error {
		raw, _, err := p.Snapshot(ctx)
		text = restSnapshot(raw, o.limit)
		return readErr(err)
	})
	if err == nil && a.File != "" {
		text, err = t.writeSnapshotFile(a.File, text)
	}
	return t.finishCall(s, key, res, c, err, func() string { return text })
}

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
	res, c, err := t.doEither(ctx, s, key, "", reads|moves, func(ctx context.Context, c *call) error {
		e, err := s.refs.resolve(ctx, a.Ref, c.target)
		if err != nil {
			return err
		}
		what = describeRef(a.Ref, e)
		if err := settled(ctx, c, &navigated, func() error { return clickNode(e.in(ctx), a.Ref, e.node) }); err != nil || navigated {
			return err
		}
		changes = t.changesAfter(ctx, s, c)
		return nil
	}, func(ctx context.Context, p *hybroute.RESTPage, c *call) error {
		what = a.Ref
		before := p.Landed()
		_, err := p.Click(ctx, a.Ref)
		navigated = p.Landed() != before
		return err
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
	res, c, err := t.doEither(ctx, s, key, "", reads|moves, func(ctx context.Context, c *call) error {
		e, err := s.refs.resolve(ctx, a.Ref, c.target)
		if err != nil {
			return err
		}
		what = describeRef(a.Ref, e)
		if err := typeInto(e.in(ctx), a.Ref, e.node, a.Text); err != nil {
			return err
		}
		if a.Submit {
			if err := settled(ctx, c, &navigated, func() error { return pressKeys(ctx, "Enter") }); err != nil || navigated {
				return err
			}
		}
		changes = t.changesAfter(ctx, s, c)
		return nil
	}, func(ctx context.Context, p *hybroute.RESTPage, c *call) error {
		what = a.Ref
		before := p.Landed()
		_, err := p.Type(ctx, a.Ref, a.Text, a.Submit)
		navigated = p.Landed() != before
		return err
	})
	return t.finishCall(s, key, res, c, err, func() string {
		msg := fmt.Sprintf("Typed %s into %s.", quote(a.Text, 200), what)
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
	res, c, err := t.doEither(ctx, s, key, "", reads|moves, func(ctx context.Context, c *call) error {
		return settled(ctx, c, &navigated, func() error { return pressKeys(ctx, a.Key) })
	}, func(ctx context.Context, p *hybroute.RESTPage, c *call) error {
		before := p.Landed()
		_, err := p.Press(ctx, a.Key)
		navigated = p.Landed() != before
		return err
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
	res, c, err := t.doEither(ctx, s, key, "", reads, func(ctx context.Context, c *call) error {
		var err error
		pos, err = chromedp.Run(ctx, chromedp.Evaluate[[]int](fmt.Sprintf(scrollJS, dx, dy)))
		return err
	}, func(ctx context.Context, p *hybroute.RESTPage, c *call) error {
		_, err := p.Scroll(ctx, strings.ToLower(a.Direction))
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

func (t *Toolset) back(ctx context.Context, s *session, key string, args json.RawMessage) Result {
	if err := decode(args, &struct{}{}); err != nil {
		return argError(err)
	}
	res, c, err := t.doEither(ctx, s, key, "", moves, func(ctx context.Context, c *call) error {
		// A history step navigates for sure: wait for it as forward does,
		// so that the next call cannot cut it short.
		return historyStep(ctx, c, -1)
	}, func(ctx context.Context, p *hybroute.RESTPage, c *call) error {
		c.moved = true
		_, err := p.Back(ctx)
		return err
	})
	return t.finishCall(s, key, res, c, err, func() string { return "Went back." })
}

func (t *Toolset) console(ctx context.Context, s *session, key string, args json.RawMessage) Result {
	a := struct {
		Clear *bool `json:"clear"`
	}{}
	if err := decode(args, &a); err != nil {
		return argError(err)
	}
	clear := a.Clear == nil || *a.Clear
	var text string
	res, c, err := t.doEither(ctx, s, key, "", reads, func(ctx context.Context, c *call) error {
		text = s.console.read(clear)
		return nil
	}, func(context.Context, *hybroute.RESTPage, *call) error { return errRESTConsole })
	return t.finishCall(s, key, res, c, err, func() string { return text })
}

func (t *Toolset) exec(ctx context.Context, s *session, key string, args json.RawMessage) Result {
	var a struct {
		Code string `json:"code"`
	}
	if err := decode(args, &a); err != nil {
		return argError(err)
	}
	if strings.TrimSpace(a.Code) == "" {
		return toolError("code is required: the JavaScript to run in the page")
	}
	var out string
	var navigated bool
	// The code is what the Router plans the call from, and what runs.
	res, c, err := t.do(ctx, s, key, a.Code, reads|moves|light, func(ctx context.Context, c *call) error {
		c.script = true
		// The settle after the script costs a round trip, and buys the
		// guard time to see what the script set off (a popup, a request
		// to a refused address): its refusal is this call's error, where
		// the model can act on it, not lost at the next call's start.
		return withNavFlag(ctx, c, &navigated, func() error {
			var err error
			out, c.title, err = evalJS(ctx, a.Code, t.cfg.maxResult)
			return err
		})
	})
	return t.finishCall(s, key, res, c, err, func() string {
		return "Result: " + out + navNote(navigated)
	})
}

func (t *Toolset) closeTool(ctx context.Context, _ *session, key string, args json.RawMessage) Result {
	if err := decode(args, &struct{}{}); err != nil {
		return argError(err)
	}
	if err := t.Release(ctx, key); err != nil {
		// The sessions are gone from the Router whatever their release said.
		return Result{Text: "Closed the session's browsers (releasing one reported: " + scrubKey(innermost(err), key) + "). The next browser call starts a fresh session."}
	}
	return Result{Text: "Closed the session's browsers. The next browser call starts a fresh session."}
}

// withNavFlag runs act watching for a navigation it starts, and records
// whether one started.
func withNavFlag(ctx context.Context, c *call, navigated *bool, act func() error) error {
	return watchAct(ctx, c, navigated, act, true)
}

// settle lets the page run what the action queued: a form submitted by
// Enter, or a navigation a click handler starts, is requested in a task of
// its own, after the input event's reply. One frame and one task later it
// has been requested (and the browser reports it before it answers). A
// navigation that tears down the page during the wait ends it early.
func settle(ctx context.Context) {
	_, _ = chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{
		// A hidden page gets no frames: the timer bounds the wait.
		Expression:   "new Promise(r => { requestAnimationFrame(() => setTimeout(r, 0)); setTimeout(r, 100); })",
		AwaitPromise: new(true),
	})
}

func navNote(navigated bool) string {
	if navigated {
		return " The page navigated; take a new snapshot."
	}
	return ""
}

func describeRef(ref string, e refEntry) string {
	s := ref + " (" + e.role
	if e.name != "" {
		s += " " + quote(e.name, 100)
	}
	return s + ")"
}

// evalJS runs code in the page's main world, top-level await allowed, and
// returns its result as JSON text, cut at max bytes, and the page's title
// after it ran. The code runs as the body of an async arrow function; a
// single expression is its return value. A result longer than max is cut
// in the page, before it crosses the protocol: the connection's read
// buffer grows to the largest message and keeps that size, so a 100 MB
// result would cost 100 MB for as long as the browser lives.
//
// One round trip for an expression: the code is sent as an expression
// first, and only when that does not parse (statements, a return) again as
// a function body. A source that does not parse runs nothing, so nothing
// runs twice.
func evalJS(ctx context.Context, code string, max int) (string, string, error) {
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	tag := hex.EncodeToString(nonce[:])
	r, err := evalWrapped(ctx, tag, max, "async () => (\n"+strings.TrimRight(code, " \t\r\n;")+"\n)")
	if err == nil && parseFailed(r.ExceptionDetails) {
		r, err = evalWrapped(ctx, tag, max, "async () => {\n"+code+"\n}")
	}
	if err != nil {
		if m := err.Error(); strings.Contains(m, "context was destroyed") || strings.Contains(m, "navigated or closed") || strings.Contains(m, "Cannot find context") {
			return "", "", modelErrorf("the page navigated away while the code ran, so its result is lost")
		}
		return "", "", err
	}
	if d := r.ExceptionDetails; d != nil {
		return "", "", modelErrorf("the code threw: %s", exceptionText(d))
	}
	if out, title, ok := pageResult(r.Result, tag, max); ok {
		return out, title, nil
	}
	return remoteValue(r.Result, max), "", nil
}

// evalWrapped evaluates the code's function fn inside capJS.
func evalWrapped(ctx context.Context, tag string, max int, fn string) (runtime.EvaluateResult, error) {
	return chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{
		// The code's function is defined at the argument's place, so its
		// scope is the page's global one, as without the wrapper; its
		// first line is still line 2.
		Expression:    fmt.Sprintf(capJS, max, tag) + fn + ")",
		AwaitPromise:  new(true),
		ReturnByValue: new(true),
		UserGesture:   new(true),
	})
}

// parseFailed reports whether an evaluation failed to parse, so ran
// nothing. Everything the wrapper runs is inside async functions, so an
// error the code throws arrives as a rejected promise ("Uncaught (in
// promise)"); only a source that does not parse fails synchronously.
func parseFailed(d *runtime.ExceptionDetails) bool {
	return d != nil && d.Exception != nil && d.Exception.ClassName == "SyntaxError" && !strings.Contains(d.Text, "in promise")
}

// capJS wraps the code's function (appended, then ")"): it awaits the
// result and writes it as JSON text in the page, returned under the call's
// tag (%[2]s), which no page value can carry by chance, with the page's
// title, which the result line shows. Text longer than %[1]d bytes of
// UTF-8 is cut to its first %[1]d characters, with its full length. A DOM
// node is named; anything else JSON cannot write as it is (undefined,
// NaN, a bigint, a function) is returned as it is, for the protocol to
// describe.
const capJS = `(async (max, tag, f) => {
const v = await f();
const title = typeof document !== "undefined" ? document.title : "";
if (typeof Node !== "undefined" && v instanceof Node) return {"hybroute.result": tag, title, node: v.nodeName.toLowerCase() + (v.id ? "#" + v.id : "")};
if (v === undefined) return {"hybroute.result": tag, title, json: "undefined"};
if (v === null || typeof v === "boolean" || (typeof v === "number" && Number.isFinite(v) && !Object.is(v, -0))) return {"hybroute.result": tag, title, json: JSON.stringify(v)};
if (typeof v !== "string" && typeof v !== "object") return v;
let s;
try { s = JSON.stringify(v); } catch (e) { return v; }
if (typeof s !== "string") return v;
if (s.length * 3 <= max) return {"hybroute.result": tag, title, json: s};
let n = 0;
for (let i = 0; i < s.length; i++) {
	const c = s.charCodeAt(i);
	if (c < 0x80) n += 1;
	else if (c < 0x800) n += 2;
	else if (c >= 0xD800 && c < 0xDC00 && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xFC00) === 0xDC00) { n += 4; i++; }
	else n += 3;
}
if (n <= max) return {"hybroute.result": tag, title, json: s};
return {"hybroute.result": tag, title, json: s.slice(0, max), bytes: n};
})(%[1]d, %[2]q, `

// pageResult renders a result capJS wrote: its JSON text (cut, with a
// note, when the page cut it), or the DOM node it names; and the title.
func pageResult(o *runtime.RemoteObject, tag string, limit int) (string, string, bool) {
	if o == nil || o.Type != runtime.RemoteObjectTypeObject || len(o.Value) == 0 {
		return "", "", false
	}
	var r struct {
		Tag   string  `json:"hybroute.result"`
		Title string  `json:"title"`
		JSON  *string `json:"json"`
		Bytes int     `json:"bytes"`
		Node  string  `json:"node"`
	}
	if json.Unmarshal(o.Value, &r) != nil || r.Tag != tag {
		return "", "", false
	}
	switch {
	case r.JSON == nil:
		return fmt.Sprintf("(a DOM node, %s: return a property of it instead, such as .innerText or .outerHTML)", r.Node), r.Title, true
	case r.Bytes > 0 || len(*r.JSON) > limit:
		return cutNote(*r.JSON, limit, max(r.Bytes, len(*r.JSON))), r.Title, true
	}
	return *r.JSON, r.Title, true
}

// cutNote is a result's first max bytes and the note that it was cut.
func cutNote(out string, max, n int) string {
	return cut(out, max) + fmt.Sprintf(" [result cut at %d of %d bytes; return less, e.g. a slice or the fields you need]", max, n)
}

func exceptionText(d *runtime.ExceptionDetails) string {
	msg := d.Text
	if d.Exception != nil && d.Exception.Description != "" {
		msg = d.Exception.Description
	} else if d.Exception != nil && len(d.Exception.Value) > 0 {
		msg = d.Text + " " + string(d.Exception.Value)
	}
	return cut(msg, 2000)
}

// remoteValue renders a by-value result for the model, cut at max bytes.
func remoteValue(o *runtime.RemoteObject, max int) string {
	switch {
	case o == nil || o.Type == runtime.RemoteObjectTypeUndefined:
		return "undefined"
	case o.UnserializableValue != "":
		return string(o.UnserializableValue)
	case o.Subtype == runtime.RemoteObjectSubtypeNode:
		return fmt.Sprintf("(a DOM node, %s: return a property of it instead, such as .innerText or .outerHTML)", o.Description)
	case len(o.Value) == 0:
		if o.Description != "" {
			return "(" + o.Description + ", not JSON-serialisable)"
		}
		return "undefined"
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, o.Value); err != nil {
		return cut(string(o.Value), max)
	}
	out := buf.String()
	if len(out) > max {
		return cutNote(out, max, len(out))
	}
	return out
}
