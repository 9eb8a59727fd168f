package hybroute

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"slices"
	"strconv"
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
	"github.com/hybroute/hybroute/internal/metadata"
)

// The guard is the in-browser half of the security rules. URL literals are
// decided before a call; the guard decides what the pages of a browser do
// during it, in every target: tabs, popups, frames in or out of process,
// dedicated, shared and service workers. There is one guard per browser
// connection (one per cloud session, one for the sidecar's Chromium, whose
// keys it tells apart by browser context). It sits in a Mux under chromedp
// (internal/cdpmux) and has three layers:
//
//  1. Fetch on the browser session pauses the HTTP(S) requests of every
//     target of the browser from each target's first request, each hop of
//     a redirect chain on its own (fetchPatterns). On a remote browser
//     that is every request: fetches, images, beacons, workers' loads, as
//     much as documents, since nothing else on the browser's side checks
//     where they go. On the local browser it is every document request
//     (popups and frames included) and any request whose canonical URL
//     could name a metadata endpoint; the egress check sees the rest at
//     connect time. The verdict decides each one; a pattern is only a
//     filter.
//  2. What Fetch cannot pause (WebSocket handshakes) is stopped per target
//     by offline rules for IP-literal hosts (offlineRules). They exist only
//     on target sessions, so every target is auto-attached paused
//     (Target.setAutoAttach waitForDebuggerOnStart, flat), gets its rules,
//     and only then runs. A target whose setup fails is closed and its
//     session's call fails.
//  3. Navigation commands chromedp sends (the caller's run code included)
//     to a scheme a literal would refuse are answered with an error and
//     never reach the browser: Fetch never sees chrome:// or devtools://,
//     and chrome://settings crashes headless Chromium.
//
// Names that resolve to private addresses are beyond what a WebSocket rule
// can see: on the local browser the connect-time check of egress.go covers
// them; on a cloud browser they are a known limit (docs/security.md).
func fetchPatterns(w where) []*fetch.RequestPattern {
	if w == onRemote {
		return everyRequest
	}
	return guardPatterns
}

// everyRequest pauses every request at its request stage.
var everyRequest = []*fetch.RequestPattern{{URLPattern: "*"}}

// guardPatterns are the local browser's: documents, and any request whose
// canonical URL holds the text of a metadata endpoint (metadataURLText).
var guardPatterns = func() []*fetch.RequestPattern {
	ps := []*fetch.RequestPattern{{URLPattern: "*", ResourceType: network.ResourceTypeDocument}}
	for _, s := range metadataURLText() {
		ps = append(ps, &fetch.RequestPattern{URLPattern: "*" + s + "*"})
	}
	return ps
}()

// ipv6LiteralText is the fixed text of every URL whose host is an IPv6
// literal, with or without userinfo before it.
var ipv6LiteralText = [...]string{"://[", "@["}

// metadataURLText is the text some part of which every canonical URL
// naming an endpoint of the metadata table contains, derived from the
// table: each name; each IPv4 block's fixed octets ("169.254.", or the
// whole of a single address); and, for IPv6 blocks and for the IPv6 forms
// that embed an IPv4 address (which ClassifyAddr judges by that address,
// and Chromium spells in hex), the bracket of an IPv6 literal. A text that
// holds another is dropped: the shorter one's pattern matches it already
// (metadata.goog by *metadata*).
func metadataURLText() []string {
	var all []string
	add := func(s ...string) {
		for _, x := range s {
			if !slices.Contains(all, x) {
				all = append(all, x)
			}
		}
	}
	for _, e := range metadata.Table() {
		switch {
		case e.Name != "":
			add(e.Name)
		case e.Prefix.Addr().Is4():
			add(v4PrefixText(e.Prefix))
			add(ipv6LiteralText[:]...)
		default:
			add(ipv6LiteralText[:]...)
		}
	}
	var out []string
	for _, n := range all {
		if !slices.ContainsFunc(all, func(m string) bool { return m != n && strings.Contains(n, m) }) {
			out = append(out, n)
		}
	}
	return out
}

// v4PrefixText is the dotted text every address of an IPv4 block starts
// with: its whole octets, and the dot after them unless the block is one
// address. A block that ends inside an octet is widened to the octet
// before it, so the pattern matches more, never less.
func v4PrefixText(p netip.Prefix) string {
	b := p.Addr().As4()
	n := p.Bits() / 8
	parts := make([]string, 0, n)
	for _, x := range b[:n] {
		parts = append(parts, strconv.Itoa(int(x)))
	}
	if n == 4 {
		return strings.Join(parts, ".")
	}
	return strings.Join(append(parts, ""), ".")
}

// metadataLiterals are the metadata endpoints that are single addresses,
// spelled as canonical URL hosts: the offline rules name each one
// (Chromium's rule matcher only honours whole canonical hosts, so
// 169.254.0.0/16 cannot be written as a pattern). They come from the
// metadata table: its single-address blocks and the well-known addresses
// inside its wider ones.
var metadataLiterals = func() []string {
	var out []string
	for _, a := range metadata.Addrs() {
		out = append(out, metadata.Host(a))
	}
	return out
}()

// offlineRules are the URL patterns whose requests fail as if offline in
// every target: what stops a WebSocket handshake, which Fetch never
// pauses. Every metadata address that is a single address, on both
// routes. On a remote browser that may not open private addresses, also
// every WebSocket to an IPv6 literal (one can embed any IPv4 address) and
// to the loopback names the matcher can hold (privateWSPatterns). HTTP is
// Fetch's: the IPv6 and loopback rules name ws and wss only, so an HTTP
// request to such a host still meets the verdict rather than a rule.
func offlineRules(w where, remotePrivate bool) []string {
	var pats []string
	for _, h := range metadataLiterals {
		pats = append(pats, "*://"+h+":*/*")
	}
	if w == onRemote && !remotePrivate {
		pats = append(pats, privateWSPatterns...)
	}
	return pats
}

// privateWSPatterns are the private hosts a WebSocket rule can name on a
// remote browser. Chromium 156's matcher canonicalises the fixed text of a
// hostname pattern as a host, so a partly-fixed pattern (127.:b.:c.:d,
// 10.:b.:c.:d, 169.254.:c.:d) never matches (TestOfflineRulePatterns), and
// :a.:b.:c.:d would also match every four-label name: private IPv4 ranges
// cannot be written as a rule, only single hosts.
var privateWSPatterns = []string{
	"ws{s}?://[*]:*/*",
	"ws{s}?://127.0.0.1:*/*",
	"ws{s}?://0.0.0.0:*/*",
	"ws{s}?://localhost:*/*",
}

// guardLookupTimeout bounds the name lookup of one paused request. A name
// that does not answer in time is refused (fail closed): Chromium would
// hold the request for as long as we do not answer, so only our own bound
// ends it, and an address we cannot see is one we cannot allow.
const guardLookupTimeout = 5 * time.Second

// targetSetupTimeout bounds the setup of one paused target; past it the
// target is closed. A paused target sends nothing, so waiting is safe, and
// on a loaded machine (load 100 on 2 cores) 15 s closed healthy new tabs.
const targetSetupTimeout = 60 * time.Second

// guardRecord is what the guard refused during the current call of one
// session, in any of its targets.
type guardRecord struct {
	mu      sync.Mutex
	blocked []error
}

func (g *guardRecord) reset() {
	g.mu.Lock()
	g.blocked = g.blocked[:0]
	g.mu.Unlock()
}

func (g *guardRecord) add(err error) {
	g.mu.Lock()
	g.blocked = append(g.blocked, err)
	g.mu.Unlock()
}

func (g *guardRecord) err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return errors.Join(g.blocked...)
}

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

// hop records request id (a redirect of prev when prev is set) and reports
// whether its chain had a public hop before it.
func (c *chains) hop(id, prev fetch.RequestID, public bool) (wasPublic bool) {
	if prev != "" {
		var ok bool
		if wasPublic, ok = c.cur[prev]; ok {
			delete(c.cur, prev)
		} else if wasPublic, ok = c.prev[prev]; ok {
			delete(c.prev, prev)
		} else {
			wasPublic = true
		}
	}
	if c.cur == nil || len(c.cur) >= maxTrackedChains {
		c.prev, c.cur = c.cur, make(map[fetch.RequestID]bool)
	}
	c.cur[id] = wasPublic || public
	return wasPublic
}

// browserGuard is the guard of one browser connection.
type browserGuard struct {
	pol     *policy
	w       where
	log     *slog.Logger
	lookup  time.Duration
	offline []string // offlineRules

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

	// lookupsOf gives the name answers of a session's current call, which
	// the guard reuses (one lookup per host per call); nil: none.
	lookupsOf func(*entry) *callLookups

	mu     sync.Mutex
	chains chains // per paused request: has its chain been public?
	info   map[target.ID]*target.Info
	parent map[target.ID]target.ID // a frame's or worker's target: the target it was attached under
	sess   map[target.SessionID]target.ID
	frames map[cdp.FrameID]target.ID // frames that are not targets: the target whose tree holds them
	owners map[target.ID]*entry      // each session's tab
	byCtx  map[cdp.BrowserContextID]*entry
	landed map[target.ID]landing // where each page's main frame is, from the events of every session on it (the owner of the landed URL)
	refs   map[target.ID]int     // our live sessions of each target

	stubs sync.Map // target.ID → struct{}: pages whose allowed requests get a blank document (state_browser.go)
}

// maxFrames bounds the frame table: a frame it has forgotten is still
// refused by the verdict, only not named as precisely.
const maxFrames = 4096

func newBrowserGuard(cfg *config, pol *policy, log *slog.Logger, w where) *browserGuard {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	lookup := cfg.guardLookup
	if lookup <= 0 {
		lookup = guardLookupTimeout
	}
	g := &browserGuard{pol: pol, w: w, log: log, lookup: lookup, offline: append(offlineRules(w, pol.remotePrivate), pol.rules.wsPatterns()...),
		info:   map[target.ID]*target.Info{},
		parent: map[target.ID]target.ID{}, sess: map[target.SessionID]target.ID{},
		frames: map[cdp.FrameID]target.ID{}, owners: map[target.ID]*entry{},
		byCtx: map[cdp.BrowserContextID]*entry{}, landed: map[target.ID]landing{},
		refs: map[target.ID]int{}}
	g.life, g.end = context.WithCancel(context.Background())
	return g
}

// hooks are the guard's part of the Mux.
func (g *browserGuard) hooks() cdpmux.Hooks {
	return cdpmux.Hooks{OnAttach: g.onAttach, OnEvent: g.onEvent, OnDetach: g.onDetach, Refuse: g.refuseCommand}
}

// start turns the guard on for the whole browser: Fetch on the browser
// session, then auto-attach with every new target paused. Run it before
// chromedp opens the tabs the sessions use.
func (g *browserGuard) start(ctx context.Context, m *cdpmux.Mux) error {
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
	if _, err := m.Call(ctx, "", fetch.CommandEnable, fetch.EnableParams{Patterns: fetchPatterns(g.w)}); err != nil {
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
func (g *browserGuard) checkBrowser(ctx context.Context, m *cdpmux.Mux) error {
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
	case first == cdpcompat.RulesNone && g.w == onRemote:
		return g.unsupported(lacksOfflineRules)
	}
	g.log.LogAttrs(ctx, slog.LevelDebug, "hybroute: guard on", slog.String("route", g.w.String()),
		slog.String("browser", g.browser.String()), slog.String("offline_rules", first.String()))
	return nil
}

// lacksOfflineRules is what a browser without offline rules lacks.
const lacksOfflineRules = "Network.emulateNetworkConditionsByRule (the rules that stop WebSockets to metadata)"

func (g *browserGuard) unsupported(lacks string) error {
	route := "local"
	if g.w == onRemote {
		route = "cloud"
	}
	return &UnsupportedBrowserError{Browser: g.browser.String(), Lacks: lacks, Route: route}
}

// setOffline puts the offline rules on one target, in the shape this
// browser takes: the shape in use first, then older ones while the target
// answers that it takes another. The shape that worked is kept for the
// next target. A browser that takes none has no rules: on the local route
// that leaves the egress check, on a remote one the target cannot be
// covered.
func (g *browserGuard) setOffline(ctx context.Context, m *cdpmux.Mux, s target.SessionID) error {
	shape := cdpcompat.OfflineRules(g.rules.Load())
	for shape != cdpcompat.RulesNone {
		_, err := m.Call(ctx, s, network.CommandEmulateNetworkConditionsByRule, cdpcompat.OfflineParams(shape, g.offline))
		if err == nil || !cdpcompat.IsShapeError(err) {
			return err
		}
		shape = shape.Older()
		g.rules.Store(int32(shape))
	}
	if g.w == onRemote {
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

// wait ends the guard's work once its browser connection is gone.
func (g *browserGuard) wait() {
	if m := g.mux.Load(); m != nil {
		<-m.Done()
	}
	g.end()
	g.wg.Wait()
}

// register makes the guard attribute what happens in the tab of e (and in
// the targets it opens) to e. bcID is the session's browser context, on
// the sidecar and on a remote browser alike: every target in it is the
// session's, whoever opened it (a popup without an opener, a shared or
// service worker), and a target of another session's context is not.
func (g *browserGuard) register(e *entry, tabCtx context.Context, bcID cdp.BrowserContextID) error {
	c := chromedp.FromContext(tabCtx)
	if c == nil || c.Target == nil {
		return errors.New("hybroute: the guard found no tab to watch")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.owners[c.Target.TargetID] = e
	g.sess[c.Target.SessionID] = c.Target.TargetID
	if bcID != "" {
		g.byCtx[bcID] = e
	}
	e.tabID = c.Target.TargetID
	front := c.Target.TargetID
	e.front.Store(&front) // the landed URL is this page's now
	return nil
}

// unregister forgets e once its tab (the target tab) is closed. A tab that
// was replaced (tabs.go) leaves the replacement's registration standing.
func (g *browserGuard) unregister(e *entry, tab target.ID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if e.tabID != tab {
		return
	}
	for id, o := range g.owners {
		if o == e {
			delete(g.owners, id)
		}
	}
	for id, o := range g.byCtx {
		if o == e {
			delete(g.byCtx, id)
		}
	}
}

// ownerOf is the session a target belongs to: its browser context's, or
// that of the target it was attached under, or that of the page that
// opened it. Called with g.mu held.
func (g *browserGuard) ownerOf(id target.ID) *entry {
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
func (g *browserGuard) frameTarget(f cdp.FrameID) target.ID {
	if _, ok := g.info[target.ID(f)]; ok {
		return target.ID(f)
	}
	if id, ok := g.frames[f]; ok {
		return id
	}
	return target.ID(f)
}

// kind names a target for an error: the session's tab, a popup, an
// iframe, a worker, or a frame inside one of them. Called with g.mu held.
func (g *browserGuard) kind(id target.ID, frame cdp.FrameID, e *entry) string {
	k := "frame"
	if ti := g.info[id]; ti != nil {
		switch ti.Type {
		case "page":
			k = "popup"
			if e != nil && id == e.tabID {
				k = "tab"
			}
		case "iframe":
			k = "iframe"
		default:
			k = strings.ReplaceAll(ti.Type, "_", " ")
		}
	} else if e != nil && id == e.tabID {
		k = "tab"
	}
	if frame != "" && target.ID(frame) != id && k != "frame" {
		k = "frame in " + k
	}
	return k
}

func (g *browserGuard) onAttach(parent target.SessionID, ev *target.EventAttachedToTarget) bool {
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

func (g *browserGuard) onDetach(s target.SessionID) {
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
	delete(g.landed, id)
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
func (g *browserGuard) onEvent(s target.SessionID, msg *cdproto.Message) bool {
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
				g.landed[id] = landing{frame: ev.Frame.ID, url: ev.Frame.URL + ev.Frame.URLFragment}
			}
			g.mu.Unlock()
		}
	case cdproto.MethodType(page.NavigatedWithinDocument.Method):
		ev := new(page.EventNavigatedWithinDocument)
		if jsonv2.Unmarshal(msg.Params, ev, chromedp.DefaultUnmarshalOptions) == nil {
			g.mu.Lock()
			if id, ok := g.sess[s]; ok && g.refs[id] > 0 {
				if l, ok := g.landed[id]; ok && l.frame == ev.FrameID {
					g.landed[id] = landing{frame: l.frame, url: ev.URL}
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
}

// landedURL is the URL of the main frame of page id, as the events of the
// browser said; ok is false when no navigation of it was seen. The events
// are read on the connection's reader before anything that follows them,
// so when a call's last command has returned, the URL it led to is here.
func (g *browserGuard) landedURL(id target.ID) (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	l, ok := g.landed[id]
	return l.url, ok
}

// setLanded keeps u as the URL of page id, as the browser reported it
// just now (a page that became the front tab). A page the guard has no
// session on any more is not kept.
func (g *browserGuard) setLanded(id target.ID, u string) {
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
func (g *browserGuard) setup(ev *target.EventAttachedToTarget, at time.Time) {
	m := g.mux.Load()
	ti, s := ev.TargetInfo, ev.SessionID
	ctx, cancel := context.WithTimeout(g.life, targetSetupTimeout)
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
	if ti.Type == "page" {
		// Its main frame's URL, for the landed-URL check. A paused page
		// answers Page.enable only once it runs; its first navigation
		// commits long after (the guard pauses its request), and the
		// check asks the browser for a page whose URL it never saw.
		later = append(later, m.Go(ctx, s, page.CommandEnable, page.EnableParams{}))
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
	err := fmt.Errorf("hybroute: the guard could not cover %s %s, so it was closed: %w", kind, redactURL(clipURL(ti.URL)), errors.Join(errs...))
	if e != nil {
		e.guard.add(err)
	}
	_, _ = m.Call(ctx, "", target.CommandCloseTarget, target.CloseTargetParams{TargetID: ti.TargetID})
	g.log.LogAttrs(ctx, slog.LevelWarn, "hybroute: target the guard could not cover was closed",
		slog.String("target", kind), slog.String("error", err.Error()))
}

// classify is the verdict on a paused request's URL, its lookup bounded by
// the guard's limit: timedOut says the limit ran out before the resolver
// answered. A name is answered from the call's lookups when the call named
// it, else from the session's host answers (one lookup per name however
// many requests name it), else, for a request no session owns, by a lookup
// of its own. It repeats classifyWith's few steps rather than handing it a
// lookup function: a closure there would cost every Verdict an allocation.
func (g *browserGuard) classify(url string, e *entry) (v Verdict, timedOut bool) {
	v, name := g.pol.classifyParsed(url)
	if name == "" {
		return v, false
	}
	if e != nil && g.lookupsOf != nil {
		if a, ok := g.lookupsOf(e).get(name); ok {
			return resolved(v, a.addrs, a.err), false
		}
	}
	vctx, cancel := context.WithTimeout(g.life, g.lookup)
	defer cancel()
	var addrs []netip.Addr
	var err error
	if e != nil {
		addrs, err = e.hosts.answer(vctx, g.life, g.lookup, g.pol.resolver, name, time.Now())
	} else {
		addrs, err = g.pol.resolver.LookupNetIP(vctx, "ip", name)
	}
	v = resolved(v, addrs, err)
	timedOut = err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(vctx.Err(), context.DeadlineExceeded))
	return v, timedOut
}

// hop records one paused request and reports whether the redirect chain
// it belongs to had a public hop before it.
func (g *browserGuard) hop(ev *fetch.EventRequestPaused, c Class) (wasPublic bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.chains.hop(ev.RequestID, ev.RedirectedRequestID, c == ClassPublic)
}

// answer lets one paused request go on or fails it. A refused document
// fails the call of the session it belongs to, naming the target; a
// refused popup is closed.
func (g *browserGuard) answer(ev *fetch.EventRequestPaused) {
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
	v, timedOut := g.classify(url, e)
	var err error
	if timedOut {
		err = blocked(v, ReasonLookupTimeout, fmt.Errorf("the lookup timed out after %v", g.lookup))
		g.hop(ev, ClassInvalid)
	} else {
		// Every hop of every chain: a public page's image that redirects
		// to a private address walks the browser into a LAN as surely as
		// its document would.
		err = g.pol.refuseHop(v, g.w, g.hop(ev, v.Class))
	}
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
	g.pol.tel.refused(g.life, "guard", err)
	g.mu.Lock()
	kind := g.kind(id, ev.FrameID, e)
	g.mu.Unlock()
	if kind != "tab" {
		err = fmt.Errorf("hybroute: %s %s: %w", kind, redactURL(clipURL(url)), err)
	}
	if e != nil {
		e.refusals.add(Refusal{At: time.Now(), URL: clipURL(url), ResourceType: string(ev.ResourceType),
			Target: kind, RequestID: string(ev.NetworkID), Err: err})
	}
	if doc && e != nil {
		// Recorded before the request fails, so the call that is waiting
		// on this navigation sees why it failed.
		e.guard.add(err)
	}
	m.Go(g.life, "", fetch.CommandFailRequest, fetch.FailRequestParams{
		RequestID: ev.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
	if doc && kind == "popup" {
		_ = g.closeTarget(g.life, id)
	}
	attrs := []slog.Attr{slog.String("route", g.w.String()), slog.String("target", kind),
		slog.String("resource", string(ev.ResourceType)), slog.String("reason", reasonOf(err)),
		slog.String("error", err.Error())}
	if e != nil {
		attrs = append(attrs, slog.String("cache_key", e.key))
	}
	g.log.LogAttrs(g.life, slog.LevelWarn, "hybroute: browser request refused", attrs...)
}

// popups are the pages of e's session other than its tab, with the URL
// each one's main frame is on.
func (g *browserGuard) popups(e *entry) map[target.ID]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out map[target.ID]string
	for id, ti := range g.info {
		if ti.Type != "page" || id == e.tabID || g.ownerOf(id) != e {
			continue
		}
		if out == nil {
			out = map[target.ID]string{}
		}
		out[id] = g.landed[id].url
	}
	return out
}

// targetURL is the URL the browser reports for a target.
func (g *browserGuard) targetURL(ctx context.Context, id target.ID) (string, error) {
	ti, err := g.getTargetInfo(ctx, id)
	if err != nil || ti == nil {
		return "", err
	}
	return ti.URL, nil
}

// getTargetInfo is what the browser reports of a target.
func (g *browserGuard) getTargetInfo(ctx context.Context, id target.ID) (*target.Info, error) {
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

// closeTarget closes a target of the browser.
func (g *browserGuard) closeTarget(ctx context.Context, id target.ID) error {
	m := g.mux.Load()
	if m == nil {
		return cdpmux.ErrClosed
	}
	_, err := m.Call(ctx, "", target.CommandCloseTarget, target.CloseTargetParams{TargetID: id})
	if err == nil {
		// It is going (its detach comes later): no landing check of it.
		g.mu.Lock()
		delete(g.info, id)
		delete(g.landed, id)
		g.mu.Unlock()
	}
	return err
}

// refuseCommand stops, before it is sent, a navigation command to a scheme
// a literal would refuse. It sees every command chromedp sends, so the
// caller's run code cannot send one either. Page.navigateToHistoryEntry
// can only reach an entry a navigation made, and those went through here.
func (g *browserGuard) refuseCommand(msg *cdproto.Message) error {
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
	scheme, ok := g.navigable(p.URL)
	if ok {
		return nil
	}
	err := blocked(Verdict{URL: clipURL(p.URL), Class: ClassInvalid}, ReasonSchemeNotAllowed,
		fmt.Errorf("%s to scheme %q is refused before it reaches the browser", msg.Method, scheme))
	g.mu.Lock()
	e := g.ownerOf(g.sess[msg.SessionID])
	g.mu.Unlock()
	if e != nil {
		e.guard.add(err)
	}
	return err
}

// navigable reports whether a navigation command may take a page to raw:
// http, https, ws, wss, about:blank and about:srcdoc, data:, and on the
// local browser the schemes WithAllowedSchemes names. It reads the scheme
// as Chromium does (C0 controls and spaces trimmed, tabs and newlines
// removed) and fails closed.
func (g *browserGuard) navigable(raw string) (scheme string, ok bool) {
	s := strings.TrimFunc(raw, func(r rune) bool { return r <= ' ' })
	s = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, s)
	i := strings.IndexByte(s, ':')
	if i <= 0 {
		return "", false
	}
	scheme = strings.ToLower(s[:i])
	switch scheme {
	case "http", "https", "ws", "wss", "data":
		return scheme, true
	case "about":
		return scheme, isNoRouteAbout(s)
	}
	return scheme, g.w == onLocal && slices.Contains(g.pol.allowedSchemes, scheme)
}

// clipURL bounds a URL for a message.
func clipURL(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	return s[:max] + fmt.Sprintf("…(%d bytes)", len(s))
}

// String names the browser for logs.
func (w where) String() string {
	switch w {
	case onLocal:
		return "local"
	case onRemote:
		return "cloud"
	}
	return "plan"
}

// enableGuard makes the browser's guard watch the entry's tab, which
// also keeps where its main frame is (landedURL). It returns what the sessions'
// WaitGroup runs until the tab closes: the guard then forgets the entry.
func (r *Router) enableGuard(e *entry) (func(), error) {
	if _, ok := e.tab.(*restTab); ok {
		// No CDP, no guard in that browser: its landing is what its
		// REST answers report (restpage.go).
		return func() {}, nil
	}
	tabCtx := e.tab.context()
	var g *browserGuard
	var bcID cdp.BrowserContextID
	switch t := e.tab.(type) {
	case *remoteTab:
		g, bcID = t.guard, t.bcID
	case *localTab:
		g, bcID = t.proc.guard, t.bcID
	}
	if g == nil {
		return nil, errors.New("hybroute: the tab's browser has no guard")
	}
	if err := g.register(e, tabCtx, bcID); err != nil {
		return nil, err
	}
	e.bg = g
	tab := e.tabID // set by register; read by the waiter below under g.mu
	return func() {
		select {
		case <-tabCtx.Done():
		case <-g.life.Done():
		}
		g.unregister(e, tab)
	}, nil
}

var debugGuard = os.Getenv("GUARD_DEBUG") != ""
