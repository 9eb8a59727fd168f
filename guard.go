package hybroute

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute/internal/metadata"
)

// The guard is the in-browser half of the security rules. URL literals are
// decided before a call; the guard decides what the page does during it: a
// redirect from public to private is refused, not followed, and a request
// to a metadata address is refused on every route, whoever makes it.
//
// It pauses, through the Fetch domain of the tab:
//   - every document request (top-level navigations, redirect hops, frames
//     in the tab's process), so the route rule holds for each hop;
//   - any request whose canonical URL could name a metadata endpoint: the
//     patterns below match the forms Chromium's canonical URL takes for the
//     metadata ranges and names, and for IPv6 literals (which can embed an
//     IPv4 address). A pattern is only a filter: the verdict decides, so a
//     false match costs one round trip and nothing else.
//
// Names that resolve to metadata at run time, popups, out-of-process frames,
// workers and WebSockets are beyond what URL patterns see: on the local
// browser, the connect-time check of egress.go is the layer for those.
var guardPatterns = func() []*fetch.RequestPattern {
	ps := []*fetch.RequestPattern{{URLPattern: "*", ResourceType: network.ResourceTypeDocument}}
	for _, p := range [...]string{
		"*169.254.*", "*100.100.100.200*", "*192.0.0.192*", "*168.63.129.16*", "*://[*", "*@[*",
	} {
		ps = append(ps, &fetch.RequestPattern{URLPattern: p})
	}
	names := metadata.Names()
	for _, n := range names {
		// A name that holds another listed name is matched by that one's
		// pattern already (metadata.goog by *metadata*).
		if !slices.ContainsFunc(names, func(m string) bool { return m != n && strings.Contains(n, m) }) {
			ps = append(ps, &fetch.RequestPattern{URLPattern: "*" + n + "*"})
		}
	}
	return ps
}()

// guardRecord is what the guard knows of one tab: what it refused during
// the current call, and which redirect chains began on a public address.
type guardRecord struct {
	mu      sync.Mutex
	blocked []error                  // documents refused since the call began
	public  map[fetch.RequestID]bool // per paused document: has its chain been public?
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

// hop records one paused document request and reports whether the redirect
// chain it belongs to had a public hop before it.
func (g *guardRecord) hop(ev fetch.EventRequestPaused, c Class) (wasPublic bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.public == nil || len(g.public) > maxTrackedChains {
		// Finished chains are never removed one by one; a tab that has
		// made this many document requests starts a fresh table.
		g.public = make(map[fetch.RequestID]bool)
	}
	if ev.RedirectedRequestID != "" {
		wasPublic = g.public[ev.RedirectedRequestID]
		delete(g.public, ev.RedirectedRequestID)
	}
	g.public[ev.RequestID] = wasPublic || c == ClassPublic
	return wasPublic
}

const maxTrackedChains = 256

// guardLookupTimeout bounds the name lookup of one paused request, so one
// slow name cannot hold a tab's other requests: a name that does not answer
// in time is treated as one that does not resolve (public), which is what
// Chromium itself would then meet.
const guardLookupTimeout = 5 * time.Second

// enableGuard turns interception on in the entry's tab, starts tracking
// where its main frame is, and returns the loop that answers every paused
// request until the tab closes. The caller runs the loop in the sessions'
// WaitGroup, so Close waits for it.
func (r *Router) enableGuard(e *entry) (func(), error) {
	tabCtx := e.tab.context()
	if err := trackLanding(tabCtx, e); err != nil {
		return nil, err
	}
	// Subscribe before enabling, so no paused request is missed, on a
	// context of our own: if enabling fails, cancelling it ends the
	// subscription without waiting for an event that will never come.
	sctx, stop := context.WithCancel(tabCtx)
	events := chromedp.Events(sctx, fetch.RequestPaused)
	if _, err := chromedp.Call(tabCtx, fetch.Enable, fetch.EnableParams{Patterns: guardPatterns}); err != nil {
		stop()
		for range events { // ends at once: the subscription is cancelled
		}
		return nil, err
	}
	return func() {
		defer stop()
		// Each paused request is answered on its own, so a slow lookup
		// holds up only its own request.
		var answers sync.WaitGroup
		defer answers.Wait()
		for ev, err := range events {
			if err != nil {
				return // the tab is gone
			}
			answers.Go(func() { r.answer(tabCtx, e, ev) })
		}
	}, nil
}

// answer lets one paused request go on or fails it.
func (r *Router) answer(tabCtx context.Context, e *entry, ev fetch.EventRequestPaused) {
	url := ""
	if ev.Request != nil {
		url = ev.Request.URL
	}
	doc := ev.ResourceType == network.ResourceTypeDocument
	vctx, cancel := context.WithTimeout(tabCtx, guardLookupTimeout)
	v := r.pol.classifyWith(vctx, url, r.callLookupsOf(e))
	cancel()
	var err error
	if doc {
		err = r.pol.refuseHop(v, e.where(), e.guard.hop(ev, v.Class))
	} else {
		err = r.pol.refuse(v, e.where())
	}
	if err == nil {
		_, _ = chromedp.Call(tabCtx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
		return
	}
	r.tel.refused(tabCtx, "guard", err)
	if doc {
		// Recorded before the request fails, so the call that is waiting
		// on this navigation sees why it failed.
		e.guard.add(err)
	}
	_, _ = chromedp.Call(tabCtx, fetch.FailRequest, fetch.FailRequestParams{
		RequestID: ev.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
	r.log.LogAttrs(tabCtx, slog.LevelWarn, "hybroute: browser request refused",
		slog.String("cache_key", e.key), slog.String("route", e.route.String()),
		slog.String("resource", string(ev.ResourceType)), slog.String("reason", reasonOf(err)),
		slog.String("error", err.Error()))
}

// trackLanding keeps the URL of the tab's main frame in e.landed, from the
// page events chromedp already receives. The landed-URL check after every
// call then costs no round trip to the browser. Listen delivers an event
// before the reply of any command that follows it, so when a call's last
// navigation has returned, its URL is already here.
func trackLanding(tabCtx context.Context, e *entry) error {
	blank := "about:blank"
	e.landed.Store(&blank)
	var main atomic.Value // cdp.FrameID of the main frame
	return chromedp.Listen(tabCtx, func(ev any) {
		switch ev := ev.(type) {
		case *page.EventFrameNavigated:
			if ev.Frame == nil || ev.Frame.ParentID != "" {
				return
			}
			main.Store(ev.Frame.ID)
			u := ev.Frame.URL + ev.Frame.URLFragment
			e.landed.Store(&u)
		case *page.EventNavigatedWithinDocument:
			if id, _ := main.Load().(cdp.FrameID); id != "" && id == ev.FrameID {
				u := ev.URL
				e.landed.Store(&u)
			}
		}
	})
}
