// Package agent is the browser toolset a model calls, with hybroute's routing
// and security floor behind every tool: browser_navigate, browser_snapshot,
// browser_click, browser_type, browser_press, browser_scroll, browser_back,
// browser_screenshot, browser_console, browser_exec, browser_network_requests,
// browser_downloads and browser_pdf_save ([WithDownloadDir]), browser_close,
// browser_status, browser_state_save and browser_state_load
// ([WithStateDir]); the session's tabs (browser_tabs); browser_forward,
// browser_reload and browser_resize; the inputs browser_select_option,
// browser_fill_form, browser_hover, browser_drag, browser_file_upload
// ([WithUploadDir]) and browser_wait_for; and browser_handle_dialog, for a
// router whose DialogPolicy holds dialogs for the model; and
// browser_type_secret, which types a secret the model never sees
// ([WithSecrets]). A tool is offered only where its setting is there
// ([Catalog] says which needs what).
//
// A Toolset plugs into any Go agent loop: Tools lists each tool with a name, a
// description written for a model and a JSON Schema for its input, and Call
// runs one tool call for a session and returns text and images. Every call
// goes through the Router's Exec or Navigate (a cloud browser without CDP,
// Camofox, is driven through its REST API, hybroute.Call.REST): the same
// predicate decides the browser, the same floor refuses metadata and
// private addresses where they are not allowed, and the page URL is
// re-checked (hybroute.Call.CheckPage) before anything is read from it and
// after the call.
//
// One session, one page: navigation picks the browser (its URL is the only
// literal the Router sees), and every other tool runs where the session's
// page is. browser_exec's code is planned like any call: a public URL in it
// runs where the page is, a private target still pulls the call to the
// local browser; the result then says that the page changed browsers
// (Where.BrowserChanged, from the Router's Result.PageChanged).
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/internal/secrets"
	"github.com/hybroute/hybroute/route"
	"github.com/hybroute/hybroute/state"
)

// Router is what the toolset needs from a router: every method of
// *hybroute.Router that a tool calls, and nothing it finds out at run time.
// A wrapper (metrics, a fleet-wide router) embeds *hybroute.Router and
// overrides what it changes. What a tool asks about the page a call runs
// on (its route, the landed-URL check before a read, the guard's
// refusals, a new tab, a page without CDP) it asks the call's
// [hybroute.Call], which only the Router hands out: no wrapper can leave a
// page unchecked.
type Router interface {
	Exec(ctx context.Context, sessionKey, code string, run func(ctx context.Context, c *hybroute.Call) error, opts ...hybroute.CallOption) (hybroute.Result, error)
	Navigate(ctx context.Context, sessionKey, rawURL string, run func(ctx context.Context, c *hybroute.Call) error, opts ...hybroute.CallOption) (hybroute.Result, error)
	Release(ctx context.Context, sessionKey string) error
	AnswerDialog(ctx context.Context, sessionKey string, accept bool, promptText string) (hybroute.Dialog, error)
	SaveState(ctx context.Context, sessionKey string) (*state.State, error)
	LoadState(ctx context.Context, sessionKey string, st *state.State) error
	Status(ctx context.Context, sessionKey string) (hybroute.SessionStatus, error)
	Rules() hybroute.Rules
	Tabs(ctx context.Context, sessionKey string) ([]hybroute.Tab, error)
	SelectTab(ctx context.Context, sessionKey, id string) (route.Route, error)
	CloseTab(ctx context.Context, sessionKey, id string) error
	Replay(ctx context.Context, sessionKey string) (string, error)
}

var _ Router = (*hybroute.Router)(nil)

// ErrClosed is returned by Call after Close.
var ErrClosed = errors.New("agent: the toolset is closed")

// Tool is one tool as a model sees it.
type Tool struct {
	Name        string
	Description string
	// InputSchema is the JSON Schema (an object schema) of the tool's
	// arguments.
	InputSchema json.RawMessage
}

// Image is a picture a tool returns, such as a screenshot.
type Image struct {
	MIMEType string // "image/png"
	Data     []byte
	Width    int // pixels
	Height   int
}

// Result is what one tool call returns to the model.
type Result struct {
	// Text is what the model reads: the tool's output and, for every call
	// that reached a browser, where it ran and which page it is on.
	Text   string
	Images []Image
	// IsError marks a tool error: a refused URL, a stale ref, a page that
	// did not load. Text says what happened and what the model can do.
	IsError bool
	// Where is the structured form of the "where it ran" part of Text.
	Where Where
}

// Where is where a call ran and the page it left the session on. An MCP
// server gives it to the client as the result's _meta (mcpserver.MetaWhere),
// under the JSON name each field's comment ends with.
type Where struct {
	// Ran is false for a call no browser ran (a blocked URL literal, a bad
	// argument, a tool that needs no page, such as browser_state_save); the
	// other fields are then empty, and Route is route.None. (No _meta.)
	Ran bool
	// Route is the browser the call ran in: route.Local (a fallback too)
	// or route.Cloud. (route: "local" or "cloud")
	Route route.Route
	// FallbackFromCloud: the cloud provider could not give this session a
	// browser, and the call ran on local Chromium in its place.
	// (fallback_from_cloud)
	FallbackFromCloud bool
	// FallbackReason is why, as the Router words it: the provider's
	// failure, short and free of keys. (fallback_reason, only when set)
	FallbackReason string
	// BrowserChanged: the call did not run in the tab the session's page
	// was in, so that page is not the one it saw: it ran in the other
	// browser (the URLs of browser_exec's code, or a navigation, decided
	// so), or in a fresh browser (the previous one was closed while idle,
	// or ended), or in a fresh tab (TabReplaced). The session now follows
	// the new page. A navigation within one tab is Navigated, not this.
	// (browser_changed)
	BrowserChanged bool
	// Navigated: the call took the page to a new document: a navigation
	// tool, or a click, a key, a form or a script that led to one. The
	// refs of the last snapshot are then stale. A link that led to a
	// download is not one. (navigated)
	Navigated bool
	// TabReplaced: the session's tab did not answer after the previous
	// call's deadline, so the call ran in a fresh tab of the same browser
	// (cookies and storage kept, the page not). (tab_replaced)
	TabReplaced bool
	// Dialogs are the JavaScript dialogs the page opened, as the Router
	// answered them. (dialogs, only when any: each with type, message,
	// accepted, and pending when it waits for browser_handle_dialog)
	Dialogs []hybroute.Dialog
	// URL is the page's URL after the call, as the Router re-checked it,
	// with the credentials it carries redacted (as errors show URLs):
	// about:blank after a refused page the tab was sent away from,
	// chrome-error://chromewebdata/ when its last load failed (the
	// result's text then says why). (url)
	URL string
	// Title is the page's title after the call. (title)
	Title string
	// WaitedForRoom is how long the call waited for a browser session,
	// every one being in a call under the caps (hybroute.WithMaxSessions,
	// WithMaxLocalMemory); 0 when it did not wait.
	WaitedForRoom time.Duration
}

// Option configures a Toolset.
type Option func(*config)

type config struct {
	snapshotLimit int
	snapshotDir   string // where browser_snapshot may write files; "": nowhere
	recordDir     string // where each session's record goes (record.go); "": no records
	callTimeout   time.Duration
	queueWait     time.Duration
	waitForTurn   bool
	consoleLimit  int
	maxResult     int
	stateDir      string // where the state tools keep their files (state.go); "": off
	uploadDir     string // browser_file_upload's root; "": no uploads (upload.go)
	log           *slog.Logger
	downloadDir   string
	maxDownload   int64
	dlLimits      DownloadLimits // a session's downloads together (download.go)
	keepDownloads bool
	secrets       *secrets.Set // browser_type_secret's, scrubbed from results and logs (secrets.go)
	handoff       Handoffer    // browser_handoff's live views (handoff.go); nil: off
}

// Defaults of the options.
const (
	DefaultSnapshotLimit = 40000 // bytes of snapshot text
	DefaultCallTimeout   = 60 * time.Second
	// DefaultQueueWait is how long a call may wait for its turn to open a
	// local tab, on top of DefaultCallTimeout.
	DefaultQueueWait    = 60 * time.Second
	DefaultConsoleLimit = 500 // messages kept per session between reads
	// DefaultMaxResultBytes bounds browser_exec's result: what a model can
	// use of one, and what crosses the protocol.
	DefaultMaxResultBytes = 20000
)

// WithSnapshotLimit sets how many bytes of text browser_snapshot returns
// before it cuts the tree with a note (default 40,000).
func WithSnapshotLimit(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.snapshotLimit = n
		}
	}
}

// WithCallTimeout bounds what one tool call does in the page once it has
// its session (default 60 s): the navigation, the script. The wait for a
// turn to open a tab on the local browser has a limit of its own
// ([WithQueueWait]); the caller's context still applies.
func WithCallTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.callTimeout = d
		}
	}
}

// WithQueueWait sets how long a call may wait for its turn to open a tab
// on the local browser, which opens a few at a time (default 60 s). The
// wait is apart from the call timeout ([WithCallTimeout]), which bounds
// what the call does in the page once it has its tab. A call whose wait
// the queue foresees to be longer is answered at once with a "busy:"
// result (hybroute.ErrBusy), unless [WithWaitForTurn] is on.
func WithQueueWait(d time.Duration) Option {
	return func(c *config) {
		if d >= 0 {
			c.queueWait = d
		}
	}
}

// WithWaitForTurn makes a call that the queue foresees waiting longer than
// [WithQueueWait] wait anyway, up to that limit, rather than be answered
// "busy:" at once.
func WithWaitForTurn(on bool) Option { return func(c *config) { c.waitForTurn = on } }

// WithMaxResultBytes sets how many bytes of JSON text browser_exec returns
// (default 20,000). A longer result is cut in the page, before it crosses
// the protocol to the browser's connection, whose read buffer keeps the
// size of the largest message it ever read; the result says where it was
// cut and how long it was ("result cut at N of M bytes").
func WithMaxResultBytes(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxResult = n
		}
	}
}

// WithLogger sets the logger for what the toolset cannot tell the model
// (a console collector that failed to start). Default slog.Default().
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// Toolset is the browser toolset over a Router. It is safe for concurrent
// use; calls of one session run one at a time.
type Toolset struct {
	r   Router
	cfg config

	mu       sync.Mutex
	sessions map[string]*session
	closed   bool
	bg       sync.WaitGroup // console collectors, download savers
	hooks    []callHook     // attached to every call on a CDP tab

	heldDialogs bool // the Router holds dialogs for the model (offered.go)
}

// New returns the toolset over r. Close it before closing r.
func New(r Router, opts ...Option) *Toolset {
	t := &Toolset{
		r: r,
		cfg: config{
			snapshotLimit: DefaultSnapshotLimit,
			callTimeout:   DefaultCallTimeout,
			queueWait:     DefaultQueueWait,
			consoleLimit:  DefaultConsoleLimit,
			maxResult:     DefaultMaxResultBytes,
			maxDownload:   DefaultMaxDownloadBytes,
			dlLimits:      DownloadLimits{Bytes: DefaultSessionDownloadBytes, Files: DefaultSessionDownloadFiles, PerMinute: DefaultDownloadsPerMinute},
			log:           slog.Default(),
		},
		sessions: make(map[string]*session),
	}
	for _, o := range opts {
		if o != nil {
			o(&t.cfg)
		}
	}
	t.hooks = []callHook{downloadHook{t}, networkHook{}}
	if t.cfg.recordDir != "" {
		t.hooks = append(t.hooks, recordHook{})
	}
	if r != nil {
		t.heldDialogs = r.Rules().Dialogs.Hold
	}
	if t.cfg.log == nil {
		t.cfg.log = slog.Default()
	}
	if t.cfg.secrets.Len() > 0 {
		t.cfg.log = slog.New(t.cfg.secrets.Handler(t.cfg.log.Handler()))
	}
	if d := t.cfg.downloadDir; d != "" {
		// Absolute and without links, so the browser's reports of where
		// it saved a file compare with it.
		if abs, err := filepath.Abs(d); err == nil {
			d = abs
		}
		if real, err := filepath.EvalSymlinks(d); err == nil {
			d = real
		}
		t.cfg.downloadDir = d
	}
	return t
}

// Tools returns the tools the toolset offers, in a stable order: those
// that work in its configuration. A tool that needs a setting the toolset
// lacks (a state, upload or download directory, dialogs held for the
// model) is left out; [Catalog] lists every tool with what it needs.
func (t *Toolset) Tools() []Tool {
	out := make([]Tool, 0, len(toolDefs))
	for i := range toolDefs {
		if t.offers(toolDefs[i].name) {
			tool := toolDefs[i].tool()
			if tool.Name == ToolSnapshot && t.cfg.snapshotDir == "" {
				// Only an argument that can work is offered.
				tool.InputSchema = []byte(strings.Replace(snapshotSchema, snapshotFileArg, "", 1))
			}
			out = append(out, tool)
		}
	}
	return out
}

// Call runs the tool name with the JSON arguments args for session (the
// Router's session key: one page per session). Whatever the model can act
// on, a refused URL included, is a Result with IsError set and a nil error.
// The error is non-nil only when no call was made: ctx ended first, or the
// toolset is closed.
//
// Calls of one session run one at a time, in turn; ctx ends a call that
// runs, and a call still waiting its turn leaves the queue when its ctx
// ends, without running (a server whose client hung up passes a context
// that ends then).
func (t *Toolset) Call(ctx context.Context, sessionKey, name string, args json.RawMessage) (res Result, err error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	def, ok := toolByName[name]
	if !ok {
		return toolError(fmt.Sprintf("unknown tool %q; the tools are %s", name, t.offeredNames())), nil
	}
	if !t.offers(name) {
		return t.notOffered(name), nil
	}
	var s *session
	for {
		var err error
		if s, err = t.session(sessionKey); err != nil {
			return Result{}, err
		}
		if err := s.lock(ctx); err != nil {
			// The caller went away while the call waited its turn: it is
			// dropped, never run.
			return Result{}, err
		}
		if !s.gone.Load() {
			break
		}
		// Released while this call waited for it: the map has a fresh one.
		s.unlock()
	}
	defer s.unlock()
	if s.rec != nil {
		// Deferred: the record has the result as it leaves Call.
		s.rec.Begin()
		s.rec.secret = name == ToolTypeSecret // its tab is hidden from the record before it types (recordHook)
		defer t.recordCall(s, name, args, time.Now(), &res)
	}
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	// The wait for a turn at the local browser and the work in the page
	// have budgets of their own (callOptions): the whole call is bounded
	// by both together.
	cctx, cancel := context.WithTimeout(ctx, t.cfg.callTimeout+t.cfg.queueWait+handoffBudget(name, args))
	defer cancel()
	// The one way out of the toolset for what a tool read.
	res = t.scrub(def.run(t, cctx, s, sessionKey, args))
	if res.IsError {
		if err := ctx.Err(); err != nil {
			// The caller gave up: that is not the model's to act on. (The
			// router's call context ends only after ctx, so a call its
			// deadline ended finds this set.)
			return res, err
		}
	}
	return res, nil
}

// Release ends the session's browsers (cloud and local) and forgets its
// page, refs and console. It is what browser_close does.
func (t *Toolset) Release(ctx context.Context, sessionKey string) error {
	t.mu.Lock()
	s := t.sessions[sessionKey]
	if s != nil {
		s.gone.Store(true) // before it leaves the map: a waiting call looks again
		delete(t.sessions, sessionKey)
	}
	t.mu.Unlock()
	if s == nil {
		return t.r.Release(ctx, sessionKey)
	}
	s.end()
	err := t.r.Release(ctx, sessionKey)
	t.finishRecord(ctx, sessionKey, s)
	s.dl.Sweep()
	return err
}

// Close stops the toolset's background work (the console collectors) and
// makes later calls fail with ErrClosed. It does not close the Router, whose
// owner closes it after the toolset.
func (t *Toolset) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	ss := make([]*session, 0, len(t.sessions))
	keys := make([]string, 0, len(t.sessions))
	for k, s := range t.sessions {
		s.gone.Store(true)
		ss = append(ss, s)
		keys = append(keys, k)
		delete(t.sessions, k)
	}
	t.mu.Unlock()
	for i, s := range ss {
		s.end()
		// Side by side: each may wait on the provider for its replay URL.
		t.bg.Go(func() { t.finishRecord(context.Background(), keys[i], s) })
	}
	t.bg.Wait()
	for _, s := range ss {
		s.dl.Sweep()
	}
	return nil
}

func (t *Toolset) session(key string) (*session, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, ErrClosed
	}
	s := t.sessions[key]
	if s == nil {
		s = t.newSession()
		t.sessions[key] = s
	}
	return s, nil
}

// callOptions are the options of every Router call a tool makes: the
// run's own budget, whether a call waits for its turn at a busy local
// browser, and whether the run drives a page without CDP (u has
// drivesREST).
func (t *Toolset) callOptions(u use) []hybroute.CallOption {
	opts := append(make([]hybroute.CallOption, 0, 3), hybroute.RunTimeout(t.cfg.callTimeout))
	if t.cfg.waitForTurn {
		opts = append(opts, hybroute.WaitForTurn())
	}
	if u&drivesREST != 0 {
		opts = append(opts, hybroute.DrivesREST())
	}
	return opts
}

// toolError is a Result the model reads as a failed tool call.
func toolError(text string) Result { return Result{Text: text, IsError: true} }
