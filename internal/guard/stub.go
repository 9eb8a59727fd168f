package guard

import (
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/target"

	"github.com/hybroute/hybroute/internal/cdpmux"
)

// A page that reads or writes an origin's storage is taken to a page of
// that origin; the navigation meets Config.Decide as every
// navigation does, and the guard then answers it with a blank document of
// its own (a stubbed page), so nothing is sent to the site.

// stubBlank is the document a stubbed page gets for every allowed
// navigation.
var stubBlank = []byte("<!doctype html><title></title>")

// Stub makes the guard answer the allowed requests of page id itself
// until unstub runs: its documents with a blank one, anything else
// refused.
func (g *Guard) Stub(id target.ID) (unstub func()) {
	g.stubs.Store(id, struct{}{})
	return func() { g.stubs.Delete(id) }
}

// stubbed reports whether the guard answers the target's requests itself.
func (g *Guard) stubbed(id target.ID) bool {
	_, ok := g.stubs.Load(id)
	return ok
}

// fulfillBlank answers an allowed request of a stubbed page: its document
// with stubBlank, anything else refused (the blank document asks for
// nothing, and nothing of a stubbed page may reach the network).
func (g *Guard) fulfillBlank(m *cdpmux.Mux, s target.SessionID, ev *fetch.EventRequestPaused) {
	if ev.ResourceType != network.ResourceTypeDocument {
		m.Go(g.life, s, fetch.CommandFailRequest, fetch.FailRequestParams{
			RequestID: ev.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
		return
	}
	m.Go(g.life, s, fetch.CommandFulfillRequest, fetch.FulfillRequestParams{
		RequestID: ev.RequestID, ResponseCode: 200, Body: stubBlank,
		ResponseHeaders: []*fetch.HeaderEntry{{Name: "Content-Type", Value: "text/html; charset=utf-8"}}})
}

// Stubbed reports whether the guard answers the target's requests itself
// (Stub): its documents are blank ones of the guard's, which run nothing.
func (g *Guard) Stubbed(id target.ID) bool { return g.stubbed(id) }
