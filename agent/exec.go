package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent/internal/modeltext"
	"github.com/hybroute/hybroute/netpolicy"
)

const ToolExec = "browser_exec"

var execTools = []toolDef{
	{
		name:   ToolExec,
		desc:   "Run JavaScript in the page; the result comes back as JSON. An expression returns its value; statements need return; await works. URLs in the code pick the browser as browser_navigate does.",
		schema: `{"type":"object","properties":{"code":{"type":"string"}},"required":["code"]}`,
		run:    (*Toolset).exec,
	},
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
	var out, refused string
	var navigated bool
	// The code is what the Router plans the call from, and what runs.
	res, c, err := t.do(ctx, s, key, a.Code, reads|moves|light, func(ctx context.Context, c *call) error {
		c.script = true
		if err := s.secrets.refuseExec(ctx, s, c); err != nil {
			return err
		}
		start := time.Now()
		// The settle after the script costs a round trip, and buys the
		// guard time to see what the script set off (a popup, a request
		// to a refused address): its refusal is this call's error, where
		// the model can act on it, not lost at the next call's start.
		err := withNavFlag(ctx, c, &navigated, func() error {
			var err error
			out, c.title, err = evalJS(ctx, a.Code, t.cfg.maxResult)
			return err
		})
		refused = refusedDuring(c, start, true)
		if me, ok := errors.AsType[*modeltext.Error](err); ok && refused != "" {
			// The code threw, most likely at the refusal ("Failed to
			// fetch"): the model reads why with the exception.
			return modeltext.Errorf("%s%s", me.Error(), refused)
		}
		return err
	})
	return t.finishCall(s, key, res, c, err, func() string {
		return "Result: " + modeltext.PageText(out) + navNote(navigated) + refused
	})
}

// refusedDuring lists what the guard and the egress check refused of the
// session's pages since start (for a script, a fetch of the code's among
// them): the page saw only a network error for each.
func refusedDuring(c *call, start time.Time, script bool) string {
	if c.h == nil {
		return ""
	}
	xs, _ := c.h.Refusals(start)
	if !script {
		// A refused load of the tab's own page is the call's error, or
		// the note on the error page: said once, there.
		xs = slices.DeleteFunc(xs, func(x hybroute.Refusal) bool { return x.Target == "tab" && x.ResourceType == "Document" })
	}
	if len(xs) == 0 {
		return ""
	}
	const most = 10
	lines := make([]string, 0, min(len(xs), most)+1)
	for _, x := range xs[:min(len(xs), most)] {
		lines = append(lines, refusalLine(x))
	}
	if len(xs) > most {
		lines = append(lines, fmt.Sprintf("- and %d more (browser_network_requests lists them)", len(xs)-most))
	}
	head := "\n\nRefused during this call (the page saw only a network error for each):\n"
	if script {
		head = "\n\nRefused during this call (the page saw only a network error for each; a fetch of one fails with \"TypeError: Failed to fetch\"):\n"
	}
	return head + strings.Join(lines, "\n") + notNamedAdvice(xs)
}

// notNamedAdvice is how to let a page reach a private host its session
// never named, once for the list, when the list has one.
func notNamedAdvice(xs []hybroute.Refusal) string {
	for _, x := range xs {
		if be, ok := errors.AsType[*netpolicy.BlockedError](x.Err); ok && be.Reason == netpolicy.ReasonPrivateNotNamed {
			return "\n" + advice(be)
		}
	}
	return ""
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
			return "", "", modeltext.Errorf("the page navigated away while the code ran, so its result is lost")
		}
		return "", "", err
	}
	if d := r.ExceptionDetails; d != nil {
		return "", "", modeltext.Errorf("the code threw: %s", modeltext.ExceptionText(d))
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
	return modeltext.Cut(out, max) + fmt.Sprintf(" [result cut at %d of %d bytes; return less, e.g. a slice or the fields you need]", max, n)
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
		return modeltext.Cut(string(o.Value), max)
	}
	out := buf.String()
	if len(out) > max {
		return cutNote(out, max, len(out))
	}
	return out
}
