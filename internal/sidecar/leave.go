package sidecar

import (
	"github.com/chromedp/cdproto"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute/internal/cdpmux"
	"github.com/hybroute/hybroute/internal/egress"
	"github.com/hybroute/hybroute/internal/guard"
)

// watchDocuments is the guard's hooks on the local browser's pipe, with
// one more look at each paused request: the host of a document any frame
// starts to load is one its browser context ran (egress.Proxy.Loaded), and
// a document a page (a session's tab or a popup) starts to load from a
// host its session's grant does not cover ends the grant
// (egress.Proxy.Leave). It runs on the Mux's reader
// before the guard's own hook, which answers the request on a goroutine
// of its own: the grant is gone before the request goes on, so no script
// of the new page ever runs with it.
func watchDocuments(g *guard.Guard, e *egress.Proxy) cdpmux.Hooks {
	h := g.Hooks()
	inner := h.OnEvent
	h.OnEvent = func(s target.SessionID, msg *cdproto.Message) bool {
		if s == "" && msg.Method == cdproto.MethodType(fetch.RequestPaused.Method) {
			leaveOn(g, e, msg)
		}
		return inner(s, msg)
	}
	return h
}

// leaveOn tells the egress proxy of a paused document request: every
// one, in any frame, is a host the browser context has run a document of
// (egress.Proxy.Loaded); one of a page's main frame may end the grant
// (egress.Proxy.Leave). A document the guard answers with its own blank
// page (a state's read or write, guard.Guard.Stub) runs nothing of its
// host's.
func leaveOn(g *guard.Guard, e *egress.Proxy, msg *cdproto.Message) {
	ev := new(fetch.EventRequestPaused)
	if jsonv2.Unmarshal(msg.Params, ev, chromedp.DefaultUnmarshalOptions) != nil ||
		ev.ResourceType != network.ResourceTypeDocument || ev.Request == nil {
		return
	}
	bc, id, known := g.ContextOf(ev.FrameID)
	if g.Stubbed(id) {
		return
	}
	// A frame whose context is not known marks every context (fail
	// closed: one more fresh context at the next grant, not a leftover
	// that uses it).
	e.Loaded(string(bc), ev.Request.URL)
	// A page's main frame has the page target's id; a frame inside a page
	// is no page target, and loads under its page's grant.
	ti := g.Target(target.ID(ev.FrameID))
	if !known || ti == nil || ti.Type != "page" || ti.BrowserContextID == "" {
		return
	}
	e.Leave(string(ti.BrowserContextID), ev.Request.URL)
}
