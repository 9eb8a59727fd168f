package toolfuzz

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The generator. Each step draws the same numbers from the seed whatever
// the pages answered, so that a seed makes the same sequence of calls on a
// replay; what the answers taught (a ref of the last snapshot, a tab id)
// only fills in the arguments.

// pages are the site's pages (agenttest.NewFuzzSite), to navigate to.
var pages = []string{
	"/", "/page2", "/search?q=hat", "/big?n=60", "/input", "/popup?who=x", "/form", "/table",
	"/dialog", "/dialog?now=1", "/opener", "/opener?now=1", "/slow?ms=400", "/slow?ms=1500",
	"/moving?n=3", "/reach", "/download", "/no-such-page",
}

// failing are navigations that fail or are refused, and the word the
// answer must name for a refusal ("" when the page just does not load, or
// the toolset may answer either way).
var failing = []struct{ url, refusal string }{
	{"http://nosuch.test/", ""},
	{"nosuch.test", ""},
	{"https://does-not-exist.invalid/x", ""},
	{"http://169.254.169.254/latest/meta-data/", "metadata"},
	{"169.254.169.254", "metadata"},
	{"http://metadata.google.internal/computeMetadata/v1/", "metadata"},
	{"http://[fd00:ec2::254]/", "metadata"},
	{"http://0xa9fea9fe/", "metadata"},
	{"http://169.254.169.254.:80/", "metadata"},
	{"PORT127.0.0.2", ""}, // loopback, another host: nothing listens
	{"http://127.0.0.1:1/", ""},
	{"", ""},
	{"ftp://127.0.0.1/", ""},
	{"javascript:alert(1)", ""},
	{"file:///etc/passwd", ""},
	{"chrome://settings", ""},
	{"http://", ""},
	{"::::", ""},
	{"data:text/html,<h1>data</h1>", ""},
	{"about:blank", ""},
}

var codes = []struct{ code, refusal string }{
	{"1+1", ""},
	{"document.title", ""},
	{"location.href", ""},
	{"await new Promise(r => setTimeout(r, 300)); return 3", ""},
	{"syntax error (((", ""},
	{"throw new Error('boom')", ""},
	{"undefinedVariable.x", ""},
	{`location.href = "/page2"`, ""},
	{"history.back()", ""},
	{"location.reload()", ""},
	{`fetch("http://169.254.169.254/latest/").then(r => r.status)`, "metadata"},
	{`fetch("http://127.0.0." + 2 + ":" + location.port + "/").then(r => r.status)`, ""},
	{`window.open("/popup?who=exec"); return 1`, ""},
	{`alert("from exec")`, ""},
	{`setTimeout(() => confirm("later?"), 50); return 1`, ""},
	{`document.body.innerHTML = ""`, ""},
	{`"x".repeat(100000)`, ""},
	{`document.querySelector("form") && document.querySelector("form").submit()`, ""},
	{"return", ""},
	{"", ""},
}

var keys = []string{"Enter", "Tab", "ArrowDown", "Escape", "a", "Shift+Tab", "Control+a", "F5", "NoSuchKey", "Alt+F4", "Backspace", "+", ""}

var texts = []string{"hello", "", "ada@example.com", "INV-1002", "ünïcødé ✓", strings.Repeat("long ", 200), "<script>alert(1)</script>"}

func (r *runner) n(k int) int { return r.rng.IntN(k) }

func (r *runner) ms(max int) time.Duration { return time.Duration(r.n(max)) * time.Millisecond }

// ref is a ref as a model would pass one: mostly of the last snapshot,
// sometimes a stale one, sometimes made up.
func (r *runner) ref(s *sessionState) string {
	kind, i := r.n(10), r.n(1000)
	switch {
	case kind < 6 && len(s.refs) > 0:
		return s.refs[i%len(s.refs)]
	case kind < 8 && len(s.seen) > 0:
		return s.seen[i%len(s.seen)]
	case kind < 9:
		return "e" + strconv.Itoa(i)
	}
	return []string{"", "12", "ref=e3", "e-1", "button"}[i%5]
}

// tab is a tab id: of the last list, or one that never was.
func (r *runner) tab(s *sessionState) string {
	kind, i := r.n(10), r.n(1000)
	if kind < 7 && len(s.tabs) > 0 {
		return s.tabs[i%len(s.tabs)]
	}
	return []string{"t99", "t0", "", "1", "t1"}[i%5]
}

// goodURL is a page of the site, spelled as a model might.
func (r *runner) goodURL() string {
	p := pages[r.n(len(pages))]
	u, _ := url.Parse(r.cfg.Site)
	switch r.n(4) {
	case 0:
		return u.Host + p // completed to http:// by the toolset
	case 1:
		return "http://localhost:" + u.Port() + p
	}
	return r.cfg.Site + p
}

func (r *runner) failingURL() (string, string) {
	f := failing[r.n(len(failing))]
	if strings.HasPrefix(f.url, "PORT") {
		u, _ := url.Parse(r.cfg.Site)
		return "http://" + strings.TrimPrefix(f.url, "PORT") + ":" + u.Port() + "/", f.refusal
	}
	return f.url, f.refusal
}

func (r *runner) navigateCall(session string) call {
	if r.n(3) == 0 {
		u, why := r.failingURL()
		return call{session: session, tool: "browser_navigate", args: r.marshal(map[string]any{"url": u}), refusal: why}
	}
	return call{session: session, tool: "browser_navigate", args: r.marshal(map[string]any{"url": r.goodURL()})}
}

// toolCall is one call of any tool, with arguments a model might give it.
func (r *runner) toolCall(session string) call {
	s := r.sessions[session]
	c := call{session: session}
	args := map[string]any{}
	var refusal string
	switch k := r.n(100); {
	case k < 16:
		return r.navigateCall(session)
	case k < 26:
		c.tool = "browser_snapshot"
		switch r.n(7) {
		case 0:
			args["depth"] = r.n(4)
		case 1:
			args["find"] = []string{"INV-1002", "Add", "nothing here", "Search"}[r.n(4)]
		case 2:
			args["ref"] = r.ref(s)
		case 3:
			args["file"] = []string{"snap.txt", "../escape.txt", "/etc/x", "a/b.txt"}[r.n(4)]
		case 4:
			args["expand"] = []string{"f1", "f1:2", "f1:99999", "f9", "e3"}[r.n(5)]
		}
	case k < 36:
		c.tool = "browser_click"
		args["ref"] = r.ref(s)
	case k < 40:
		c.tool = "browser_type"
		args["ref"] = r.ref(s)
		args["text"] = texts[r.n(len(texts))]
		args["submit"] = r.n(3) == 0
	case k < 42:
		c.tool = "browser_press"
		args["key"] = keys[r.n(len(keys))]
	case k < 44:
		c.tool = "browser_scroll"
		args["direction"] = []string{"up", "down", "left", "right", "sideways"}[r.n(5)]
	case k < 48:
		c.tool = []string{"browser_back", "browser_forward", "browser_reload", "browser_back"}[r.n(4)]
	case k < 50:
		c.tool = "browser_screenshot"
		switch r.n(5) {
		case 0:
			args["full_page"] = true
		case 1:
			args["ref"] = r.ref(s)
		case 2:
			args["format"], args["quality"] = "jpeg", 1+r.n(120)
		case 3:
			args["format"] = "gif"
		}
	case k < 52:
		c.tool = "browser_console"
		if r.n(2) == 0 {
			args["clear"] = false
		}
	case k < 60:
		c.tool = "browser_exec"
		cd := codes[r.n(len(codes))]
		args["code"], refusal = cd.code, cd.refusal
	case k < 62:
		c.tool = "browser_network_requests"
		switch r.n(4) {
		case 0:
			args["limit"] = r.n(600)
		case 1:
			args["filter"] = "stock"
		}
	case k < 63:
		c.tool = "browser_downloads"
	case k < 64:
		c.tool = "browser_pdf_save"
		switch r.n(4) {
		case 0:
			args["filename"] = "page.pdf"
		case 1:
			args["filename"] = "../../outside.pdf"
		case 2:
			args["landscape"] = true
		}
	case k < 65:
		c.tool = "browser_status"
	case k < 67:
		c.tool = []string{"browser_state_save", "browser_state_load"}[r.n(2)]
		args["name"] = []string{"fuzz", "missing", "../../etc/passwd", "", "a b"}[r.n(5)]
	case k < 75:
		c.tool = "browser_tabs"
		switch r.n(6) {
		case 0, 1:
			args["action"] = "list"
		case 2:
			args["action"] = "new"
			if r.n(3) == 0 {
				u, why := r.failingURL()
				args["url"], refusal = u, why
			} else {
				args["url"] = r.goodURL()
			}
		case 3:
			args["action"], args["id"] = "select", r.tab(s)
		case 4:
			args["action"], args["id"] = "close", r.tab(s)
		case 5:
			args["action"] = []string{"open", "list"}[r.n(2)]
			args["id"] = r.tab(s)
		}
	case k < 76:
		c.tool = "browser_resize"
		args["width"], args["height"] = 100+r.n(1500), 100+r.n(1000)
	case k < 78:
		c.tool = "browser_select_option"
		args["ref"] = r.ref(s)
		args["values"] = [][]string{{"Large"}, {"Team"}, {"nope"}, {}, {"Cheese", "Basil"}}[r.n(5)]
	case k < 80:
		c.tool = "browser_fill_form"
		var fields []map[string]any
		for range 1 + r.n(3) {
			fields = append(fields, map[string]any{
				"ref":   r.ref(s),
				"type":  []string{"textbox", "checkbox", "radio", "combobox", "slider", "button"}[r.n(6)],
				"value": []string{"ada@example.com", "true", "false", "Team", "42", "x"}[r.n(6)],
			})
		}
		args["fields"] = fields
	case k < 81:
		c.tool = "browser_hover"
		args["ref"] = r.ref(s)
	case k < 82:
		c.tool = "browser_drag"
		args["start_ref"], args["end_ref"] = r.ref(s), r.ref(s)
	case k < 83:
		c.tool = "browser_file_upload"
		args["ref"] = r.ref(s)
		args["paths"] = [][]string{{"a.txt"}, {"../../etc/passwd"}, {"missing.txt"}, {"link.txt"}}[r.n(4)]
	case k < 86:
		c.tool = "browser_wait_for"
		switch r.n(5) {
		case 0:
			args["text"], args["time"] = "Loaded!", 0.5
		case 1:
			args["text_gone"], args["time"] = "Loading…", 0.5
		case 2:
			args["time"] = float64(r.n(4)) / 10
		case 3:
			args["text"], args["text_gone"] = "a", "b"
		case 4:
			args["time"] = 99
		}
	case k < 91:
		c.tool = "browser_handle_dialog"
		args["accept"] = r.n(2) == 0
		if r.n(2) == 0 {
			args["prompt_text"] = "Grace"
		}
	case k < 93:
		c.tool = "browser_close"
	default:
		// Arguments a model gets wrong: an unknown tool, a field of the
		// wrong type, one that does not exist, no object at all.
		switch r.n(4) {
		case 0:
			c.tool, c.args = "browser_fly", json.RawMessage(`{}`)
		case 1:
			c.tool, c.args = "browser_navigate", json.RawMessage(`{"url":5}`)
		case 2:
			c.tool, c.args = "browser_click", json.RawMessage(`{"ref":"e1","selector":"#x"}`)
		case 3:
			c.tool, c.args = "browser_exec", json.RawMessage(`{"code":["1"]}`)
		}
		return c
	}
	if s.dialog && r.n(3) == 0 {
		// A model that reads the result answers the dialog, mostly.
		c.tool = "browser_handle_dialog"
		args = map[string]any{"accept": r.n(2) == 0}
		refusal = ""
	}
	c.args, c.refusal = r.marshal(args), refusal
	return c
}

// next is the next step: mostly one call; sometimes calls that race a
// navigation on one session, calls on two sessions at once, a call
// cancelled mid-way, or a session released mid-call.
func (r *runner) next() step {
	session := r.cfg.Sessions[r.n(len(r.cfg.Sessions))]
	other := r.cfg.Sessions[r.n(len(r.cfg.Sessions))]
	switch k := r.n(100); {
	case k < 8: // calls racing a navigation
		nav := r.navigateCall(session)
		st := step{calls: []call{nav}}
		for range 1 + r.n(2) {
			c := r.toolCall(session)
			c.delay = r.ms(200)
			st.calls = append(st.calls, c)
		}
		return st
	case k < 12: // two sessions at once
		a, b := r.toolCall(session), r.toolCall(other)
		b.delay = r.ms(100)
		return step{calls: []call{a, b}}
	case k < 16: // the caller gives up mid-call
		c := r.slowCall(session)
		c.cancelAfter = time.Duration(1+r.n(400)) * time.Millisecond
		return step{calls: []call{c}}
	case k < 20: // the session released mid-call
		c := r.slowCall(session)
		return step{calls: []call{c}, release: session, releaseAfter: r.ms(500)}
	}
	return step{calls: []call{r.toolCall(session)}}
}

// slowCall is a call that takes a while: a slow page, a wait, a script
// that awaits, a page that moves.
func (r *runner) slowCall(session string) call {
	u, _ := url.Parse(r.cfg.Site)
	switch r.n(5) {
	case 0:
		return call{session: session, tool: "browser_navigate", args: r.marshal(map[string]any{"url": r.cfg.Site + "/slow?ms=" + strconv.Itoa(200+r.n(1000))})}
	case 1:
		return call{session: session, tool: "browser_wait_for", args: r.marshal(map[string]any{"text": "never shown", "time": 0.8})}
	case 2:
		return call{session: session, tool: "browser_exec", args: r.marshal(map[string]any{"code": "await new Promise(r => setTimeout(r, 600)); return 1"})}
	case 3:
		return call{session: session, tool: "browser_navigate", args: r.marshal(map[string]any{"url": "http://" + u.Host + "/moving?n=4"})}
	}
	return r.toolCall(session)
}
