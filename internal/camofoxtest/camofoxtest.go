// Package camofoxtest is a stand-in for a camofox-browser server: an
// httptest server on loopback that speaks the documented REST endpoints
// the hybroute client uses (POST /tabs, navigate, snapshot, click, type,
// press, scroll, back, screenshot, stats, DELETE /tabs/{id}, DELETE
// /sessions/{userId}), with the documented bodies and status codes, backed
// by a real headless Chromium driven over CDP. The real server drives
// Camoufox (a Firefox) through Playwright; what matters to hybroute is the
// REST shapes and that a real browser loads the pages, follows redirects
// and reports where it landed.
//
// The snapshot is simpler than the server's Playwright aria snapshot but
// has its line shape: "- role "name" [eN]" for an interactive element.
package camofoxtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/chromedp/chromedp/remote"

	"github.com/hybroute/hybroute/internal/cloudtest"
)

// Server is the stand-in camofox-browser server.
type Server struct {
	*httptest.Server
	// AccessKey, when set, is the bearer every route wants
	// (CAMOFOX_ACCESS_KEY).
	AccessKey string

	ws string // the Chromium's DevTools websocket

	mu       sync.Mutex
	tabs     map[string]*tab
	next     int
	requests []string
	failNext []int // statuses the next creates answer with
}

type tab struct {
	id, user, key string
	ctx           context.Context
	cancel        context.CancelFunc
}

// opTimeout bounds one browser action of the server.
const opTimeout = 45 * time.Second

// New starts the server and its Chromium (with the extra Chromium flags:
// a user agent, host resolver rules), both ended in t.Cleanup. It skips the
// test where no Chromium is installed, and under -short.
func New(t testing.TB, accessKey string, chromiumFlags ...string) *Server {
	t.Helper()
	c := cloudtest.LaunchChromium(t, chromiumFlags...)
	s := &Server{AccessKey: accessKey, ws: c.WSURL, tabs: map[string]*tab{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /tabs", s.create)
	mux.HandleFunc("POST /tabs/{id}/{op}", s.action)
	mux.HandleFunc("GET /tabs/{id}/snapshot", s.snapshot)
	mux.HandleFunc("GET /tabs/{id}/screenshot", s.screenshot)
	mux.HandleFunc("GET /tabs/{id}/stats", s.stats)
	mux.HandleFunc("DELETE /tabs/{id}", s.closeTab)
	mux.HandleFunc("DELETE /sessions/{user}", s.closeUser)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.Method+" "+r.URL.Path)
		s.mu.Unlock()
		if s.AccessKey != "" && r.Header.Get("Authorization") != "Bearer "+s.AccessKey {
			reply(w, http.StatusForbidden, map[string]any{"error": "Forbidden"})
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// Close closes every tab, then the server.
func (s *Server) Close() {
	s.Forget()
	s.Server.Close()
}

// Requests are the requests received so far, as "METHOD /path".
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// OpenTabs counts the tabs open now.
func (s *Server) OpenTabs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tabs)
}

// FailCreates makes the next creates answer with these statuses, one each
// (429: {"error":"Tab limit reached"}, as the server's tab limit does).
func (s *Server) FailCreates(statuses ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNext = append(s.failNext, statuses...)
}

func reply(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func fail(w http.ResponseWriter, status int, msg string) {
	reply(w, status, map[string]any{"error": msg})
}

// create is POST /tabs {"userId","sessionKey"[,"url"]} → {"tabId","url"}.
func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var in struct {
		UserID     string `json:"userId"`
		SessionKey string `json:"sessionKey"`
		URL        string `json:"url"`
	}
	if json.NewDecoder(r.Body).Decode(&in) != nil || in.UserID == "" || in.SessionKey == "" {
		fail(w, http.StatusBadRequest, "userId and sessionKey required")
		return
	}
	s.mu.Lock()
	if len(s.failNext) > 0 {
		status := s.failNext[0]
		s.failNext = s.failNext[1:]
		s.mu.Unlock()
		fail(w, status, "Tab limit reached")
		return
	}
	s.next++
	id := fmt.Sprintf("tab-%d", s.next)
	s.mu.Unlock()
	actx, cancelA := remote.NewAllocator(context.Background(), s.ws)
	ctx, cancelT := chromedp.NewContext(actx, chromedp.WithNewBrowserContext())
	t := &tab{id: id, user: in.UserID, key: in.SessionKey, ctx: ctx, cancel: func() { cancelT(); cancelA() }}
	if err := chromedp.Do(ctx); err != nil {
		t.cancel()
		fail(w, http.StatusInternalServerError, err.Error())
		return
	}
	if in.URL != "" {
		if err := t.run(chromedp.Navigate(in.URL)); err != nil {
			t.cancel()
			fail(w, http.StatusBadGateway, err.Error())
			return
		}
	}
	s.mu.Lock()
	s.tabs[id] = t
	s.mu.Unlock()
	reply(w, http.StatusOK, map[string]any{"tabId": id, "url": t.location()})
}

// run runs actions on the tab, bounded.
func (t *tab) run(actions ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(t.ctx, opTimeout)
	defer cancel()
	return chromedp.Do(ctx, actions...)
}

// get runs one action with a value on the tab, bounded.
func get[T any](t *tab, a chromedp.Action[T]) (T, error) {
	ctx, cancel := context.WithTimeout(t.ctx, opTimeout)
	defer cancel()
	return chromedp.Run(ctx, a)
}

func (t *tab) location() string {
	u, _ := get(t, chromedp.Location())
	return u
}

// settle lets a navigation an action started begin and load.
func (t *tab) settle() {
	time.Sleep(300 * time.Millisecond)
	for range 100 {
		if st, err := get(t, chromedp.Evaluate[string]("document.readyState")); err == nil && st == "complete" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// find is the caller's tab, by its id and userId: 404 otherwise.
func (s *Server) find(w http.ResponseWriter, r *http.Request, user string) *tab {
	s.mu.Lock()
	t := s.tabs[r.PathValue("id")]
	s.mu.Unlock()
	if t == nil || t.user != user {
		fail(w, http.StatusNotFound, "Tab not found")
		return nil
	}
	return t
}

// action is POST /tabs/{id}/navigate|click|type|press|scroll|back.
func (s *Server) action(w http.ResponseWriter, r *http.Request) {
	var in struct {
		UserID     string  `json:"userId"`
		URL        string  `json:"url"`
		Ref        string  `json:"ref"`
		Text       *string `json:"text"`
		Key        string  `json:"key"`
		Direction  string  `json:"direction"`
		Amount     int     `json:"amount"`
		PressEnter bool    `json:"pressEnter"`
	}
	if json.NewDecoder(r.Body).Decode(&in) != nil || in.UserID == "" {
		fail(w, http.StatusBadRequest, "userId required")
		return
	}
	t := s.find(w, r, in.UserID)
	if t == nil {
		return
	}
	switch r.PathValue("op") {
	case "navigate":
		u, err := url.Parse(in.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			fail(w, http.StatusBadRequest, "Blocked URL scheme (only http/https allowed)")
			return
		}
		if err := t.run(chromedp.Navigate(in.URL)); err != nil {
			fail(w, http.StatusInternalServerError, err.Error())
			return
		}
		reply(w, http.StatusOK, map[string]any{"ok": true, "tabId": t.id, "url": t.location(), "refsAvailable": false})
	case "click":
		sel, ok := t.ref(w, in.Ref)
		if !ok {
			return
		}
		if err := t.run(chromedp.Click(chromedp.CSS(sel))); err != nil {
			fail(w, http.StatusInternalServerError, err.Error())
			return
		}
		t.settle()
		reply(w, http.StatusOK, map[string]any{"ok": true, "url": t.location(), "refsAvailable": false})
	case "type":
		if in.Text == nil {
			fail(w, http.StatusBadRequest, "text is required")
			return
		}
		sel, ok := t.ref(w, in.Ref)
		if !ok {
			return
		}
		// "fill": the field's text is replaced.
		if _, err := get(t, chromedp.Evaluate[bool](fmt.Sprintf("(e => { e.focus(); e.value = ''; return true })(document.querySelector(%q))", sel))); err != nil {
			fail(w, http.StatusInternalServerError, err.Error())
			return
		}
		acts := []chromedp.Action[chromedp.Void]{chromedp.SendKeys(chromedp.CSS(sel), *in.Text)}
		if in.PressEnter {
			acts = append(acts, chromedp.KeyEvent(kb.Enter))
		}
		if err := t.run(acts...); err != nil {
			fail(w, http.StatusInternalServerError, err.Error())
			return
		}
		t.settle()
		reply(w, http.StatusOK, map[string]any{"ok": true})
	case "press":
		if err := t.run(chromedp.KeyEvent(keyOf(in.Key))); err != nil {
			fail(w, http.StatusInternalServerError, err.Error())
			return
		}
		t.settle()
		reply(w, http.StatusOK, map[string]any{"ok": true})
	case "scroll":
		dx, dy := 0, in.Amount
		switch in.Direction {
		case "up":
			dy = -in.Amount
		case "left":
			dx, dy = -in.Amount, 0
		case "right":
			dx, dy = in.Amount, 0
		}
		if _, err := get(t, chromedp.Evaluate[any](fmt.Sprintf("window.scrollBy(%d, %d)", dx, dy))); err != nil {
			fail(w, http.StatusInternalServerError, err.Error())
			return
		}
		reply(w, http.StatusOK, map[string]any{"ok": true})
	case "back":
		if _, err := get(t, chromedp.Evaluate[any]("setTimeout(() => history.back(), 0)")); err != nil {
			fail(w, http.StatusInternalServerError, err.Error())
			return
		}
		t.settle()
		reply(w, http.StatusOK, map[string]any{"ok": true, "url": t.location()})
	default:
		fail(w, http.StatusNotFound, "Not found")
	}
}

// keyOf maps a Playwright key name to what chromedp types.
func keyOf(k string) string {
	switch k {
	case "Enter":
		return kb.Enter
	case "Tab":
		return kb.Tab
	case "Escape":
		return kb.Escape
	case "ArrowDown":
		return kb.ArrowDown
	case "ArrowUp":
		return kb.ArrowUp
	case "Backspace":
		return kb.Backspace
	}
	return k
}

// ref is the selector of a ref of the last snapshot; a ref the page does
// not have is the server's stale-ref answer.
func (t *tab) ref(w http.ResponseWriter, ref string) (string, bool) {
	if ref == "" {
		fail(w, http.StatusBadRequest, "ref or selector required")
		return "", false
	}
	sel := fmt.Sprintf(`[data-camofox-ref=%q]`, ref)
	if ok, err := get(t, chromedp.Evaluate[bool](fmt.Sprintf("document.querySelector(%q) !== null", sel))); err != nil || !ok {
		fail(w, http.StatusBadRequest, fmt.Sprintf("Unknown ref: %s (take a new snapshot)", ref))
		return "", false
	}
	return sel, true
}

// snapshotJS numbers the interactive elements and writes the tree's lines.
const snapshotJS = `(() => {
const out = [];
let n = 0;
for (const el of document.querySelectorAll('[data-camofox-ref]')) el.removeAttribute('data-camofox-ref');
for (const el of document.querySelectorAll('h1,h2,h3,p,a[href],button,input,textarea,select')) {
	const tag = el.tagName.toLowerCase();
	const text = (el.innerText || '').trim().replace(/\s+/g, ' ');
	if (/^h\d$/.test(tag)) { out.push('- heading "' + text + '" [level=' + tag[1] + ']'); continue; }
	if (tag === 'p') { out.push('- paragraph: ' + text); continue; }
	const role = tag === 'a' ? 'link' : tag === 'button' ? 'button' : el.type === 'search' ? 'searchbox' : 'textbox';
	const label = el.labels && el.labels[0] ? el.labels[0].innerText.trim() : '';
	const name = text || el.getAttribute('aria-label') || label || el.placeholder || '';
	const ref = 'e' + (++n);
	el.setAttribute('data-camofox-ref', ref);
	out.push('- ' + role + ' "' + name + '" [' + ref + ']' + (el.value ? ': ' + el.value : ''));
}
return out.join('\n');
})()`

// snapshot is GET /tabs/{id}/snapshot?userId= → {"url","snapshot",…}.
func (s *Server) snapshot(w http.ResponseWriter, r *http.Request) {
	t := s.find(w, r, r.URL.Query().Get("userId"))
	if t == nil {
		return
	}
	text, err := get(t, chromedp.Evaluate[string](snapshotJS))
	if err != nil {
		fail(w, http.StatusInternalServerError, err.Error())
		return
	}
	reply(w, http.StatusOK, map[string]any{"url": t.location(), "snapshot": text, "refsCount": strings.Count(text, " [e"),
		"truncated": false, "totalChars": len(text), "hasMore": false, "nextOffset": nil})
}

// screenshot is GET /tabs/{id}/screenshot?userId=[&fullPage=true] → PNG.
func (s *Server) screenshot(w http.ResponseWriter, r *http.Request) {
	t := s.find(w, r, r.URL.Query().Get("userId"))
	if t == nil {
		return
	}
	act := chromedp.CaptureScreenshot()
	if full, _ := strconv.ParseBool(r.URL.Query().Get("fullPage")); full {
		act = chromedp.FullScreenshot(100)
	}
	png, err := get(t, act)
	if err != nil {
		fail(w, http.StatusInternalServerError, err.Error())
		return
	}
	if !strings.HasPrefix(string(png), "\x89PNG") {
		fail(w, http.StatusInternalServerError, "not a PNG")
		return
	}
	w.Header().Set("Content-Type", "image/png")
	_, _ = w.Write(png)
}

// stats is GET /tabs/{id}/stats?userId= → {"tabId","url",…}.
func (s *Server) stats(w http.ResponseWriter, r *http.Request) {
	t := s.find(w, r, r.URL.Query().Get("userId"))
	if t == nil {
		return
	}
	reply(w, http.StatusOK, map[string]any{"tabId": t.id, "sessionKey": t.key, "url": t.location()})
}

// closeTab is DELETE /tabs/{id}?userId= → {"ok":true}.
func (s *Server) closeTab(w http.ResponseWriter, r *http.Request) {
	t := s.find(w, r, r.URL.Query().Get("userId"))
	if t == nil {
		return
	}
	s.mu.Lock()
	delete(s.tabs, t.id)
	s.mu.Unlock()
	t.cancel()
	reply(w, http.StatusOK, map[string]any{"ok": true})
}

// closeUser is DELETE /sessions/{userId}: every tab of the user.
func (s *Server) closeUser(w http.ResponseWriter, r *http.Request) {
	user := r.PathValue("user")
	var gone []*tab
	s.mu.Lock()
	for id, t := range s.tabs {
		if t.user == user {
			gone = append(gone, t)
			delete(s.tabs, id)
		}
	}
	s.mu.Unlock()
	for _, t := range gone {
		t.cancel()
	}
	reply(w, http.StatusOK, map[string]any{"ok": true, "closed": len(gone)})
}

// Forget drops every tab, as a server restart does: later calls on them
// answer 404.
func (s *Server) Forget() {
	s.mu.Lock()
	tabs := s.tabs
	s.tabs = map[string]*tab{}
	s.mu.Unlock()
	for _, t := range tabs {
		t.cancel()
	}
}

// Users are the userIds of the open tabs, one per tab.
func (s *Server) Users() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, t := range s.tabs {
		out = append(out, t.user)
	}
	slices.Sort(out)
	return out
}
