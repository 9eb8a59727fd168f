package guard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute/internal/cdpcompat"
	"github.com/hybroute/hybroute/internal/cdpmux"
	"github.com/hybroute/hybroute/internal/redact"

	"github.com/hybroute/hybroute/route"
)

// TargetSetupTimeout bounds the setup of one paused target; past it the
// target is closed. A paused target sends nothing, so waiting is safe, and
// on a loaded machine (load 100 on 2 cores) 15 s closed healthy new tabs.
const TargetSetupTimeout = 60 * time.Second

// maxTrackedChains is how many requests one generation of the chain
// table holds (two are kept): a redirect is answered long before that many
// requests of the browser come after its previous hop.
const maxTrackedChains = 4096

// chains is which paused requests belong to a redirect chain that has had
// a public hop, by request id: the current generation and the one before.
// A hop whose previous hop is in neither counts as after a public one
// (fail closed): only a chain older than two generations is forgotten.
type chains struct {
	cur, prev map[fetch.RequestID]bool
}

// take reports whether the chain of a redirect of prev (none when prev is
// empty) had a public hop before it, and forgets prev: a hop is
// redirected once.
func (c *chains) take(prev fetch.RequestID) (wasPublic bool) {
	if prev == "" {
		return false
	}
	var ok bool
	if wasPublic, ok = c.cur[prev]; ok {
		delete(c.cur, prev)
	} else if wasPublic, ok = c.prev[prev]; ok {
		delete(c.prev, prev)
	} else {
		wasPublic = true
	}
	return wasPublic
}

// put records request id: whether its chain has had a public hop, up to
// and with it.
func (c *chains) put(id fetch.RequestID, public bool) {
	if c.cur == nil || len(c.cur) >= maxTrackedChains {
		c.prev, c.cur = c.cur, make(map[fetch.RequestID]bool)
	}
	c.cur[id] = public
}

// Guard is the guard of one browser connection.
type Guard struct {
	cfg     Config // its decisions, with the defaults filled in
	w       route.Route
	res     Resolver
	log     *slog.Logger
	lookup  time.Duration
	offline []string // OfflineRules and the config's WebSocket rules

	// browser is what the browser said of itself when the guard started.
	browser cdpcompat.Browser
	// rules is the shape of the offline rules this browser takes
	// (cdpcompat.OfflineRules): the first that its major suggests, moved
	// to an older one when a target answers with a shape error.
	rules atomic.Int32

	life context.Context // ends when the browser's connection ends
	end  context.CancelFunc
	wg   sync.WaitGroup // answers and target setups

	mux atomic.Pointer[cdpmux.Mux]

	mu     sync.Mutex
	chains chains // per paused request: has its chain been public?
	info   map[target.ID]*target.Info
	parent map[target.ID]target.ID // a frame's or worker's target: the target it was attached under
	sess   map[target.SessionID]target.ID
	frames map[cdp.FrameID]target.ID // frames that are not targets: the target whose tree holds them
	owners map[target.ID]*Session    // each session's tab
	byCtx  map[cdp.BrowserContextID]*Session
	landed map[target.ID]landing // where each page's main frame is, from the events of every session on it (the owner of the landed URL)
	refs   map[target.ID]int     // our live sessions of each target

	stubs sync.Map // target.ID → struct{}: pages whose allowed requests get a blank document (Stub)
}

// maxFrames bounds the frame table: a frame it has forgotten is still
// refused by the verdict, only not named as precisely.
const maxFrames = 4096

// New is the guard of one browser connection, which asks cfg.Decide about
// every URL it pauses. Start it on the connection's Mux.
func New(cfg Config) *Guard {
	cfg = cfg.orDefault()
	w := cfg.Route
	g := &Guard{cfg: cfg, w: w, res: cfg.Resolver, log: cfg.Log, lookup: cfg.LookupTimeout, offline: append(OfflineRules(w, cfg.RemotePrivate), cfg.WSRules...),
		info:   map[target.ID]*target.Info{},
		parent: map[target.ID]target.ID{}, sess: map[target.SessionID]target.ID{},
		frames: map[cdp.FrameID]target.ID{}, owners: map[target.ID]*Session{},
		byCtx: map[cdp.BrowserContextID]*Session{}, landed: map[target.ID]landing{},
		refs: map[target.ID]int{}}
	g.life, g.end = context.WithCancel(context.Background())
	return g
}

// Hooks are the guard's part of the Mux.
func (g *Guard) Hooks() cdpmux.Hooks {
	return cdpmux.Hooks{OnAttach: g.onAttach, OnEvent: g.onEvent, OnDetach: g.onDetach, Refuse: g.refuseCommand}
}

// Start turns the guard on for the whole browser: Fetch on the browser
// session, then auto-attach with every new target paused. Run it before
// chromedp opens the tabs the sessions use.
func (g *Guard) Start(ctx context.Context, m *cdpmux.Mux) error {
	g.mux.Store(m)
	go func() {
		select {
		case <-m.Done():
			g.end()
		case <-g.life.Done():
		}
	}()
	if err := g.checkBrowser(ctx, m); err != nil {
		return err
	}
	if _, err := m.Call(ctx, "", fetch.CommandEnable, fetch.EnableParams{Patterns: FetchPatterns(g.w)}); err != nil {
		return fmt.Errorf("hybroute: enabling the request guard: %w", err)
	}
	if _, err := m.Call(ctx, "", target.CommandSetAutoAttach, target.SetAutoAttachParams{
		AutoAttach: true, WaitForDebuggerOnStart: true, Flatten: new(true), Filter: autoAttachFilter}); err != nil {
		return fmt.Errorf("hybroute: enabling the request guard: auto-attach: %w", err)
	}
	return nil
}

// checkBrowser asks the browser what it is, once per connection, and
// refuses one the guard cannot cover: older than the supported range on
// any route, or, on a remote browser, one whose major has no offline rules
// (a WebSocket to metadata would go unchecked there; on the local browser
// the egress check sees every connection, WebSockets included, so the
// rules are a second layer it can do without).
func (g *Guard) checkBrowser(ctx context.Context, m *cdpmux.Mux) error {
	raw, err := m.Call(ctx, "", browser.CommandGetVersion, nil)
	if err != nil {
		return fmt.Errorf("hybroute: enabling the request guard: %w", err)
	}
	var v browser.GetVersionResult
	if err := jsonv2.Unmarshal(raw, &v, chromedp.DefaultUnmarshalOptions); err != nil {
		return fmt.Errorf("hybroute: enabling the request guard: Browser.getVersion: %w", err)
	}
	g.browser = cdpcompat.ParseProduct(v.Product)
	first := cdpcompat.FirstOfflineRules(g.browser.Major)
	g.rules.Store(int32(first))
	switch {
	case g.browser.BelowFloor():
		return g.unsupported(fmt.Sprintf("the protocol of Chromium %d and newer", cdpcompat.MinMajor))
	case first == cdpcompat.RulesNone && g.w != route.Local:
		return g.unsupported(lacksOfflineRules)
	}
	g.log.LogAttrs(ctx, slog.LevelDebug, "hybroute: guard on", slog.String("route", g.w.String()),
		slog.String("browser", g.browser.String()), slog.String("offline_rules", first.String()))
	return nil
}

// lacksOfflineRules is what a browser without offline rules lacks.
const lacksOfflineRules = "Network.emulateNetworkConditionsByRule (the rules that stop WebSockets to metadata)"

func (g *Guard) unsupported(lacks string) error {
	return g.cfg.Unsupported(g.browser.String(), lacks)
}

// setOffline puts the offline rules on one target, in the shape this
// browser takes: the shape in use first, then older ones while the target
// answers that it takes another. The shape that worked is kept for the
// next target. A browser that takes none has no rules: on the local route
// that leaves the egress check, on a remote one the target cannot be
// covered.
func (g *Guard) setOffline(ctx context.Context, m *cdpmux.Mux, s target.SessionID) error {
	shape := cdpcompat.OfflineRules(g.rules.Load())
	for shape != cdpcompat.RulesNone {
		_, err := m.Call(ctx, s, network.CommandEmulateNetworkConditionsByRule, cdpcompat.OfflineParams(shape, g.offline, g.webRTCOff()))
		if err == nil || !cdpcompat.IsShapeError(err) {
			return err
		}
		shape = shape.Older()
		g.rules.Store(int32(shape))
	}
	if g.w != route.Local {
		return g.unsupported(lacksOfflineRules)
	}
	return nil
}

// autoAttachFilter is Chromium's default filter plus browser_ui: the
// browser's own UI pages (the omnibox popup of each new window) load no
// web content, answer neither Fetch nor Network, and when paused they held
// each new tab up for seconds until their resume was answered.
var autoAttachFilter = target.Filter{
	{Type: "browser", Exclude: true}, {Type: "tab", Exclude: true}, {Type: "browser_ui", Exclude: true}, {},
}

// guarded reports whether a target of type typ gets the guard's
// per-target measures (and fails its session's call when they fail).
func guarded(typ string) bool {
	switch typ {
	case "page", "iframe", "worker", "shared_worker", "service_worker":
		return true
	}
	return false
}

// Wait ends the guard's work once its browser connection is gone.
func (g *Guard) Wait() {
	if m := g.mux.Load(); m != nil {
		<-m.Done()
	}
	g.end()
	g.wg.Wait()
}

// Register makes the guard attribute what happens in the tab of tabCtx
// (and in the targets it opens) to s, the session of cache key key, and
// makes that tab s's (Session.Tab: the landed URL is this page's now).
// bcID is the session's browser context, on the local browser and on a
// remote one alike: every target in it is the session's, whoever opened
// it (a popup without an opener, a shared or service worker), and a target
// of another session's context is not.
func (g *Guard) Register(s *Session, key string, tabCtx context.Context, bcID cdp.BrowserContextID) error {
	c := chromedp.FromContext(tabCtx)
	if c == nil || c.Target == nil {
		return errors.New("hybroute: the guard found no tab to watch")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	s.key = key
	// One tab and one browser context a session: a tab it had before, or
	// a context it left for a fresh one (a replacement, a renewal), is
	// no longer what makes a target its.
	for id, o := range g.owners {
		if o == s && id != c.Target.TargetID {
			delete(g.owners, id)
		}
	}
	for id, o := range g.byCtx {
		if o == s && id != bcID {
			delete(g.byCtx, id)
		}
	}
	g.owners[c.Target.TargetID] = s
	g.sess[c.Target.SessionID] = c.Target.TargetID
	if bcID != "" {
		g.byCtx[bcID] = s
	}
	tab := c.Target.TargetID
	s.tab.Store(&tab)
	return nil
}

// Watch registers the tab of tabCtx as s's (Register), and returns what
// runs until that tab closes or the guard's browser goes: the guard then
// forgets s (Unregister).
func (g *Guard) Watch(s *Session, key string, tabCtx context.Context, bcID cdp.BrowserContextID) (func(), error) {
	if err := g.Register(s, key, tabCtx, bcID); err != nil {
		return nil, err
	}
	tab := s.Tab()
	return func() {
		select {
		case <-tabCtx.Done():
		case <-g.Done():
		}
		g.Unregister(s, tab)
	}, nil
}

// Unregister forgets s once its tab (the target tab) is closed. A tab that
// was replaced leaves the replacement's registration standing.
func (g *Guard) Unregister(s *Session, tab target.ID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s.Tab() != tab {
		return
	}
	for id, o := range g.owners {
		if o == s {
			delete(g.owners, id)
		}
	}
	for id, o := range g.byCtx {
		if o == s {
			delete(g.byCtx, id)
		}
	}
}

// OwnerOf is the session target id belongs to, or nil.
func (g *Guard) OwnerOf(id target.ID) *Session {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ownerOf(id)
}

// ownerOf is the session a target belongs to: its browser context's, or
// that of the target it was attached under, or that of the page that
// opened it. Called with g.mu held.
func (g *Guard) ownerOf(id target.ID) *Session {
	for range 16 { // a chain of frames and openers, bounded
		if e := g.owners[id]; e != nil {
			return e
		}
		ti := g.info[id]
		if ti != nil {
			if e := g.byCtx[ti.BrowserContextID]; e != nil {
				return e
			}
		}
		switch {
		case g.parent[id] != "":
			id = g.parent[id]
		case ti != nil && ti.OpenerID != "":
			id = ti.OpenerID
		default:
			return nil
		}
	}
	return nil
}

// frameTarget is the target a frame id names: the target itself for a
// page, an out-of-process frame or a worker, else the target whose frame
// tree holds it. Called with g.mu held.
func (g *Guard) frameTarget(f cdp.FrameID) target.ID {
	if _, ok := g.info[target.ID(f)]; ok {
		return target.ID(f)
	}
	if id, ok := g.frames[f]; ok {
		return id
	}
	return target.ID(f)
}

// ContextOf is the browser context of the frame a paused request came
// from (a page, a frame in or out of process, a worker), and the target
// that holds the frame; ok is false when the guard does not know it.
func (g *Guard) ContextOf(frame cdp.FrameID) (bc cdp.BrowserContextID, id target.ID, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	id = g.frameTarget(frame)
	cur := id
	for range 16 { // a chain of targets, bounded as ownerOf's is
		if ti := g.info[cur]; ti != nil && ti.BrowserContextID != "" {
			return ti.BrowserContextID, id, true
		}
		if cur = g.parent[cur]; cur == "" {
			break
		}
	}
	return "", id, false
}

// kind names a target for an error: the session's tab, a popup, an
// iframe, a worker, or a frame inside one of them. Called with g.mu held.
func (g *Guard) kind(id target.ID, frame cdp.FrameID, e *Session) string {
	k := "frame"
	if ti := g.info[id]; ti != nil {
		switch ti.Type {
		case "page":
			k = "popup"
			if e != nil && id == e.Tab() {
				k = "tab"
			}
		case "iframe":
			k = "iframe"
		default:
			k = strings.ReplaceAll(ti.Type, "_", " ")
		}
	} else if e != nil && id == e.Tab() {
		k = "tab"
	}
	if frame != "" && target.ID(frame) != id && k != "frame" {
		k = "frame in " + k
	}
	return k
}

func (g *Guard) onAttach(parent target.SessionID, ev *target.EventAttachedToTarget) bool {
	ti := ev.TargetInfo
	g.mu.Lock()
	g.info[ti.TargetID] = ti
	g.sess[ev.SessionID] = ti.TargetID
	if p, ok := g.sess[parent]; ok && parent != "" {
		g.parent[ti.TargetID] = p
	}
	g.refs[ti.TargetID]++
	g.mu.Unlock()
	at := time.Now()
	g.wg.Go(func() { g.setup(ev, at) })
	return true
}

func (g *Guard) onDetach(s target.SessionID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	id, ok := g.sess[s]
	delete(g.sess, s)
	if !ok {
		return
	}
	if g.refs[id]--; g.refs[id] > 0 {
		return
	}
	// The target is gone: forget it and every frame of it.
	delete(g.refs, id)
	g.forget(id)
	delete(g.info, id)
	delete(g.parent, id)
	for f, t := range g.frames {
		if t == id {
			delete(g.frames, f)
		}
	}
}

// onEvent runs on the Mux's reader: it only records, and hands paused
// requests to goroutines of their own.
func (g *Guard) onEvent(s target.SessionID, msg *cdproto.Message) bool {
	switch msg.Method {
	case cdproto.MethodType(fetch.RequestPaused.Method):
		if s != "" {
			return false
		}
		ev := new(fetch.EventRequestPaused)
		if jsonv2.Unmarshal(msg.Params, ev, chromedp.DefaultUnmarshalOptions) != nil {
			return true // nothing to answer with: it fails when its page goes
		}
		g.wg.Go(func() { g.answer(ev) })
		return true
	case cdproto.MethodType(page.FrameAttached.Method):
		ev := new(page.EventFrameAttached)
		if jsonv2.Unmarshal(msg.Params, ev, chromedp.DefaultUnmarshalOptions) == nil {
			g.mu.Lock()
			if id, ok := g.sess[s]; ok {
				if len(g.frames) >= maxFrames {
					clear(g.frames)
				}
				g.frames[ev.FrameID] = id
			}
			g.mu.Unlock()
		}
	case cdproto.MethodType(page.FrameNavigated.Method):
		ev := new(page.EventFrameNavigated)
		if jsonv2.Unmarshal(msg.Params, ev, chromedp.DefaultUnmarshalOptions) == nil && ev.Frame != nil && ev.Frame.ParentID == "" {
			g.mu.Lock()
			if id, ok := g.sess[s]; ok && g.refs[id] > 0 {
				g.landed[id] = landing{frame: ev.Frame.ID, url: ev.Frame.URL + ev.Frame.URLFragment, loading: g.landed[id].loading,
					unreachable: ev.Frame.UnreachableURL}
			}
			g.mu.Unlock()
		}
	case cdproto.MethodType(page.FrameStartedLoading.Method):
		ev := new(page.EventFrameStartedLoading)
		if jsonv2.Unmarshal(msg.Params, ev, chromedp.DefaultUnmarshalOptions) == nil {
			g.mu.Lock()
			if id, ok := g.sess[s]; ok && g.refs[id] > 0 {
				if l := g.landed[id]; isMainFrame(id, l, ev.FrameID) && l.loading == nil {
					l.loading = make(chan struct{})
					g.landed[id] = l
				}
			}
			g.mu.Unlock()
		}
	case cdproto.MethodType(page.FrameStoppedLoading.Method):
		ev := new(page.EventFrameStoppedLoading)
		if jsonv2.Unmarshal(msg.Params, ev, chromedp.DefaultUnmarshalOptions) == nil {
			g.mu.Lock()
			if id, ok := g.sess[s]; ok {
				if l := g.landed[id]; isMainFrame(id, l, ev.FrameID) && l.loading != nil {
					close(l.loading)
					l.loading = nil
					g.landed[id] = l
				}
			}
			g.mu.Unlock()
		}
	case cdproto.MethodType(page.NavigatedWithinDocument.Method):
		ev := new(page.EventNavigatedWithinDocument)
		if jsonv2.Unmarshal(msg.Params, ev, chromedp.DefaultUnmarshalOptions) == nil {
			g.mu.Lock()
			if id, ok := g.sess[s]; ok && g.refs[id] > 0 {
				if l, ok := g.landed[id]; ok && l.frame == ev.FrameID {
					l.url = ev.URL
					g.landed[id] = l
				}
			}
			g.mu.Unlock()
		}
	}
	return false
}

// landing is where a page's main frame is: its URL, and the frame, whose
// navigations within the document (history.pushState, a fragment) move
// the URL too.
type landing struct {
	frame cdp.FrameID
	url   string
	// unreachable is the URL the browser's error page stands for
	// (chrome-error://chromewebdata/ names no other): the load that
	// failed.
	unreachable string
	// loading is open while the main frame loads (from its
	// frameStartedLoading to its frameStoppedLoading), closed when it
	// stops; nil when it is not loading.
	loading chan struct{}
}

// isMainFrame reports whether frame is the main frame of page id: the one
// its last navigation named, or, before any, the page's own id, which
// Chromium gives the main frame of a page target.
func isMainFrame(id target.ID, l landing, frame cdp.FrameID) bool {
	return frame == l.frame || frame == cdp.FrameID(id)
}

// forget drops what is kept of page id's landing; a wait for its load ends.
func (g *Guard) forget(id target.ID) {
	if l, ok := g.landed[id]; ok && l.loading != nil {
		close(l.loading)
	}
	delete(g.landed, id)
}

// Settle waits, at most max and while ctx lasts, until the main frame of
// page id stops loading. A navigation can outlive the call that started
// it: Page.navigate answers a failed load (a name that does not resolve,
// a refused connection) at once, and the browser commits and loads its
// error page after the call returned. A command of the next call that
// lands while that page commits in its process fails with "Not attached
// to an active page", and the next call's wait for its own load can end
// on the error page's load. So a call starts once the page is still.
func (g *Guard) Settle(ctx context.Context, id target.ID, max time.Duration) {
	g.mu.Lock()
	ch := g.landed[id].loading
	g.mu.Unlock()
	if ch == nil {
		return
	}
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
	}
}

// Landed is the URL of the main frame of page id, as the events of the
// browser said; ok is false when no navigation of it was seen (a page
// whose first load started, and has not committed, has no URL yet: a
// failed load's error page commits after the call that started it). The
// events are read on the connection's reader before anything that follows
// them, so when a call's last command has returned, the URL it led to is
// here.
func (g *Guard) Landed(id target.ID) (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	l, ok := g.landed[id]
	return l.url, ok && l.url != ""
}

// Unreachable is the URL whose load failed when page id is on the
// browser's error page; "" otherwise, or when it is not known.
func (g *Guard) Unreachable(id target.ID) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.landed[id].unreachable
}

// SetLanded keeps u as the URL of page id, as the browser reported it
// just now (a page that became the front tab). A page the guard has no
// session on any more is not kept.
func (g *Guard) SetLanded(id target.ID, u string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.refs[id] > 0 {
		l := g.landed[id]
		l.url = u
		g.landed[id] = l
	}
}

// setup puts the per-target measures on a target that was just attached,
// then lets it run. What a paused target answers only after it runs is
// pipelined; the rest is awaited, so the rules are in force before its
// first request.
func (g *Guard) setup(ev *target.EventAttachedToTarget, at time.Time) {
	m := g.mux.Load()
	ti, s := ev.TargetInfo, ev.SessionID
	ctx, cancel := context.WithTimeout(g.life, TargetSetupTimeout)
	defer cancel()
	var errs []error
	note := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	var later []<-chan error
	switch ti.Type {
	case "page", "iframe", "worker", "shared_worker", "service_worker":
		// A paused page, frame or service worker answers Network.enable
		// only once it runs; a worker or shared worker answers it at once,
		// and its first WebSocket beat the rules when it was not awaited.
		enable := m.Go(ctx, s, network.CommandEnable, network.EnableParams{})
		if ti.Type == "worker" || ti.Type == "shared_worker" {
			note(<-enable)
		} else {
			later = append(later, enable)
		}
		note(g.setOffline(ctx, m, s))
		if ti.Type == "page" {
			// Its main frame's URL, for the landed-URL check. A paused
			// page answers Page.enable only once it runs: pipelined. Sent
			// before the script and the resume: with Page.enable sent after
			// the resume, a popup in a browsing context group of its own
			// (noopener, noreferrer, a target=_blank link or form, another
			// site's page) ran its first document without the script, and
			// its peer connection reached metadata over TCP (measured,
			// TestRedTeam33CloudWebRTCPopups).
			later = append(later, m.Go(ctx, s, page.CommandEnable, page.EnableParams{}))
		}
		if (ti.Type == "page" || ti.Type == "iframe") && g.webRTCOff() {
			// In force before the target runs, as the commands of one
			// session are acted on in order: pipelined.
			later = append(later, m.Go(ctx, s, page.CommandAddScriptToEvaluateOnNewDocument,
				page.AddScriptToEvaluateOnNewDocumentParams{Source: noWebRTC, RunImmediately: new(true)}))
		}
		if ti.Type == "page" || ti.Type == "iframe" {
			// Their own frames and workers, paused in turn. Its answer can
			// wait on the renderer (seconds on a loaded machine), while it
			// is in force once the browser has read it: pipelined, as the
			// commands of one session are acted on in order.
			later = append(later, m.Go(ctx, s, target.CommandSetAutoAttach, target.SetAutoAttachParams{
				AutoAttach: true, WaitForDebuggerOnStart: true, Flatten: new(true)}))
		}
	}
	if ev.WaitingForDebugger {
		if !guarded(ti.Type) {
			// Resumed and left: nothing of it is ours to cover.
			_ = m.Go(ctx, s, "Runtime.runIfWaitingForDebugger", nil)
			return
		}
		_, err := m.Call(ctx, s, "Runtime.runIfWaitingForDebugger", nil)
		note(err)
	}
	for _, ch := range later {
		note(<-ch)
	}
	if debugGuard {
		fmt.Fprintf(os.Stderr, "%p setup %s %s wait=%v took %v errs=%v\n", g, ti.Type, ti.URL, ev.WaitingForDebugger, time.Since(at), errs)
	}
	if len(errs) == 0 || g.life.Err() != nil || !guarded(ti.Type) {
		return
	}
	select {
	case <-m.Done():
		return // the browser went: nothing is left to cover
	default:
	}
	g.mu.Lock()
	_, live := g.sess[s]
	e := g.ownerOf(ti.TargetID)
	kind := g.kind(ti.TargetID, "", e)
	g.mu.Unlock()
	if !live {
		return // it went away while being set up: nothing to cover
	}
	err := fmt.Errorf("hybroute: the guard could not cover %s %s, so it was closed: %w", kind, redact.URL(ClipURL(ti.URL)), errors.Join(errs...))
	e.current().refuse(err)
	_, _ = m.Call(ctx, "", target.CommandCloseTarget, target.CloseTargetParams{TargetID: ti.TargetID})
	g.log.LogAttrs(ctx, slog.LevelWarn, "hybroute: target the guard could not cover was closed",
		slog.String("target", kind), slog.String("error", err.Error()))
}

// lookup answers the names of one paused request's decision (Lookup):
// from the call's answers when the running call of its session resolved
// the name, else from the session's host answers (one lookup per name
// however many requests name it), else, for a request no session owns, by
// a lookup of its own, bounded by the guard's limit.
type lookup struct {
	g  *Guard
	s  *Session // nil: no session owns the request's target
	sc *Scope   // the session's call when the request came; nil between calls
}

func (l *lookup) LookupName(name string) ([]netip.Addr, error) {
	if addrs, ok, err := l.sc.answer(name); ok {
		return addrs, err
	}
	g := l.g
	ctx, cancel := context.WithTimeout(g.life, g.lookup)
	defer cancel()
	var addrs []netip.Addr
	var err error
	if l.s != nil {
		addrs, err = l.s.hosts.answer(ctx, g.life, g.lookup, g.res, name, time.Now())
	} else {
		addrs, err = g.res.LookupNetIP(ctx, "ip", name)
	}
	if err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded)) {
		return nil, fmt.Errorf("%w after %v", ErrLookupTimeout, g.lookup)
	}
	return addrs, err
}

// decide asks cfg.Decide about one paused request of session e (nil: none)
// in the scope sc of its running call (nil: none), and records it in its
// redirect chain.
func (g *Guard) decide(ev *fetch.EventRequestPaused, url string, e *Session, sc *Scope) error {
	g.mu.Lock()
	wasPublic := g.chains.take(ev.RedirectedRequestID)
	g.mu.Unlock()
	public, err := g.cfg.Decide(url, &lookup{g: g, s: e, sc: sc}, wasPublic)
	g.mu.Lock()
	g.chains.put(ev.RequestID, wasPublic || public)
	g.mu.Unlock()
	return err
}

// answer lets one paused request go on or fails it. A refused document
// fails the call of the session it belongs to, naming the target; a
// refused popup is closed.
func (g *Guard) answer(ev *fetch.EventRequestPaused) {
	m := g.mux.Load()
	url := ""
	if ev.Request != nil {
		url = ev.Request.URL
	}
	doc := ev.ResourceType == network.ResourceTypeDocument
	if debugGuard {
		t0 := time.Now()
		fmt.Fprintf(os.Stderr, "%p paused %s %s\n", g, ev.ResourceType, url)
		defer func() { fmt.Fprintf(os.Stderr, "%p answered %s %s in %v\n", g, ev.ResourceType, url, time.Since(t0)) }()
	}
	g.mu.Lock()
	id := g.frameTarget(ev.FrameID)
	e := g.ownerOf(id)
	g.mu.Unlock()
	// The call the request came in, taken once: a call that ends while
	// the request waits on its lookup takes its scope back, and the
	// request is then decided, and recorded, as one between calls.
	sc := e.current()
	// Every hop of every chain: a public page's image that redirects to a
	// private address walks the browser into a LAN as surely as its
	// document would.
	err := g.decide(ev, url, e, sc)
	if err == nil && g.stubbed(id) {
		g.fulfillBlank(m, ev)
		return
	}
	if err == nil {
		// Not awaited: the browser acts on it when it reads it, and the
		// reply says nothing we would act on.
		m.Go(g.life, "", fetch.CommandContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
		return
	}
	g.mu.Lock()
	kind := g.kind(id, ev.FrameID, e)
	key := ""
	if e != nil {
		key = e.key
	}
	g.mu.Unlock()
	if kind != "tab" {
		err = fmt.Errorf("hybroute: %s %s: %w", kind, redact.URL(ClipURL(url)), err)
	}
	x := Refusal{At: time.Now(), URL: ClipURL(url), ResourceType: string(ev.ResourceType),
		Target: kind, RequestID: string(ev.NetworkID), Err: err}
	if e != nil {
		e.log.add(x)
	}
	if doc {
		// Recorded before the request fails, so the call that is waiting
		// on this navigation sees why it failed.
		sc.refuse(err)
	}
	m.Go(g.life, "", fetch.CommandFailRequest, fetch.FailRequestParams{
		RequestID: ev.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
	if doc && kind == "popup" {
		_ = g.CloseTarget(g.life, id)
	}
	g.cfg.Refused(g.life, key, x)
}

// Popups are the pages of e's session other than its tab, with the URL
// each one's main frame is on.
func (g *Guard) Popups(e *Session) map[target.ID]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out map[target.ID]string
	tab := e.Tab()
	for id, ti := range g.info {
		if ti.Type != "page" || id == tab || g.ownerOf(id) != e {
			continue
		}
		if out == nil {
			out = map[target.ID]string{}
		}
		out[id] = g.landed[id].url
	}
	return out
}

// Owns reports whether the page id is one of e's session: its tab or one
// of its popups.
func (g *Guard) Owns(e *Session, id target.ID) bool {
	if id == e.Tab() {
		return true
	}
	_, ok := g.Popups(e)[id]
	return ok
}

// TargetURL is the URL the browser reports for a target.
func (g *Guard) TargetURL(ctx context.Context, id target.ID) (string, error) {
	ti, err := g.TargetInfo(ctx, id)
	if err != nil || ti == nil {
		return "", err
	}
	return ti.URL, nil
}

// TargetInfo is what the browser reports of a target.
func (g *Guard) TargetInfo(ctx context.Context, id target.ID) (*target.Info, error) {
	m := g.mux.Load()
	if m == nil {
		return nil, cdpmux.ErrClosed
	}
	b, err := m.Call(ctx, "", target.CommandGetTargetInfo, target.GetTargetInfoParams{TargetID: id})
	if err != nil {
		return nil, err
	}
	var res target.GetTargetInfoResult
	if err := jsonv2.Unmarshal(b, &res, chromedp.DefaultUnmarshalOptions); err != nil {
		return nil, err
	}
	return res.TargetInfo, nil
}

// CloseTarget closes a target of the browser.
func (g *Guard) CloseTarget(ctx context.Context, id target.ID) error {
	m := g.mux.Load()
	if m == nil {
		return cdpmux.ErrClosed
	}
	_, err := m.Call(ctx, "", target.CommandCloseTarget, target.CloseTargetParams{TargetID: id})
	if err == nil {
		// It is going (its detach comes later): no landing check of it.
		g.mu.Lock()
		delete(g.info, id)
		g.forget(id)
		g.mu.Unlock()
	}
	return err
}

// refuseCommand stops, before it is sent, a navigation command to a scheme
// a literal would refuse. It sees every command chromedp sends, so the
// caller's run code cannot send one either. Page.navigateToHistoryEntry
// can only reach an entry a navigation made, and those went through here.
func (g *Guard) refuseCommand(msg *cdproto.Message) error {
	switch msg.Method {
	case page.CommandNavigate, target.CommandCreateTarget:
	default:
		return nil
	}
	var p struct {
		URL string `json:"url"`
	}
	if err := jsonv2.Unmarshal(msg.Params, &p, chromedp.DefaultUnmarshalOptions); err != nil {
		return fmt.Errorf("hybroute: %s with unreadable parameters: %w", msg.Method, err)
	}
	if p.URL == "" && msg.Method == target.CommandCreateTarget {
		return nil // about:blank
	}
	n := navigation(string(msg.Method), p.URL)
	if webScheme(n.Scheme) {
		return nil
	}
	err := g.cfg.RefuseNavigation(n)
	if err == nil {
		return nil
	}
	g.mu.Lock()
	e := g.ownerOf(g.sess[msg.SessionID])
	g.mu.Unlock()
	e.current().refuse(err)
	return err
}

// navigation reads a navigation command to raw as Chromium reads its URL:
// C0 controls and spaces trimmed, tabs and newlines removed. A URL with no
// scheme has Scheme "", which no decision lets through (fail closed).
func navigation(method, raw string) Navigation {
	s := strings.TrimFunc(raw, func(r rune) bool { return r <= ' ' })
	s = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, s)
	n := Navigation{Method: method, URL: raw, Cleaned: s}
	if i := strings.IndexByte(s, ':'); i > 0 {
		n.Scheme = strings.ToLower(s[:i])
	}
	return n
}

// webScheme reports the schemes a navigation command may always name:
// what they load meets Config.Decide on Fetch, request by request.
func webScheme(scheme string) bool {
	switch scheme {
	case "http", "https", "ws", "wss", "data":
		return true
	}
	return false
}

// ClipURL bounds a URL for a message.
func ClipURL(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	return s[:max] + fmt.Sprintf("…(%d bytes)", len(s))
}

// Browser is what the browser said of itself when the guard started.
func (g *Guard) Browser() cdpcompat.Browser { return g.browser }

// Log is the guard's logger.
func (g *Guard) Log() *slog.Logger { return g.log }

// Done is closed once the guard's browser connection is gone.
func (g *Guard) Done() <-chan struct{} { return g.life.Done() }

// Target is what the guard last heard of target id (its attach), or nil
// for a target it does not know. The caller must not change it.
func (g *Guard) Target(id target.ID) *target.Info {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.info[id]
}

// Targets are the targets the guard knows, by id.
func (g *Guard) Targets() map[target.ID]*target.Info {
	g.mu.Lock()
	defer g.mu.Unlock()
	return maps.Clone(g.info)
}

var debugGuard = os.Getenv("GUARD_DEBUG") != ""
