package provider

import (
	"maps"
	"slices"
)

// The presets: session APIs as their providers' public references give
// them (stored copies of the pages named in each Docs). Each is a
// [SessionAPISpec], so what a user writes in a spec file is what these are.
var sessionAPIPresets = map[string]SessionAPISpec{
	// browserless (docs.browserless.io, "/sessions API" and the OpenAPI
	// "session create"): POST /session?token=TOKEN with {"ttl": ms, ...}
	// answers {"id", "connect", "stop", "ttl", ...}: connect is the
	// session's websocket URL with the token already in it, stop the URL a
	// DELETE ends the session with. A session serves one CDP connection.
	"browserless": {
		Name:             "browserless",
		BaseURL:          "https://production-sfo.browserless.io",
		Auth:             SessionAPIAuth{Query: "token"},
		Create:           SessionAPICall{Method: "POST", Path: "/session", Body: map[string]any{"ttl": 900000}},
		IDField:          "id",
		CDPField:         "connect",
		Release:          SessionAPICall{Method: "DELETE"},
		ReleaseURLField:  "stop",
		SingleConnection: true,
		Docs:             "docs.browserless.io/baas/http-apis/sessions; open-api/session-create",
	},
	// Anchor Browser (docs.anchorbrowser.io, API reference "Start Browser
	// Session" and "End Browser Session"): POST /v1/sessions with the
	// header anchor-api-key and a JSON body (all optional) answers
	// {"data": {"id", "cdp_url", "live_view_url"}}; DELETE
	// /v1/sessions/{session_id} ends it.
	"anchor": {
		Name:     "Anchor Browser",
		BaseURL:  "https://api.anchorbrowser.io",
		Auth:     SessionAPIAuth{Header: "anchor-api-key"},
		Create:   SessionAPICall{Method: "POST", Path: "/v1/sessions", Body: map[string]any{}},
		IDField:  "data.id",
		CDPField: "data.cdp_url",
		Release:  SessionAPICall{Method: "DELETE", Path: "/v1/sessions/{id}"},
		Docs:     "docs.anchorbrowser.io/api-reference/browser-sessions",
	},
	// Kernel (kernel.sh docs, "Create a browser" and the API reference
	// "Delete a browser session by ID"): POST /browsers on
	// https://api.onkernel.com with Authorization: Bearer KEY answers
	// {"session_id", "cdp_ws_url", "browser_live_view_url", ...}; DELETE
	// /browsers/{id} ends it.
	"kernel": {
		Name:     "Kernel",
		BaseURL:  "https://api.onkernel.com",
		Auth:     SessionAPIAuth{Header: "Authorization", Scheme: "Bearer"},
		Create:   SessionAPICall{Method: "POST", Path: "/browsers", Body: map[string]any{}},
		IDField:  "session_id",
		CDPField: "cdp_ws_url",
		Release:  SessionAPICall{Method: "DELETE", Path: "/browsers/{id}"},
		Docs:     "kernel.sh/docs/browsers/create-a-browser; api-reference/browsers",
	},
	// Hyperbrowser (hyperbrowser.ai docs, openapi.json "Create a session"
	// and "Stop a session"): POST /api/session with x-api-key answers
	// {"id", "status", "wsEndpoint", "liveUrl", ...}; PUT
	// /api/session/{id}/stop ends it.
	"hyperbrowser": {
		Name:     "Hyperbrowser",
		BaseURL:  "https://api.hyperbrowser.ai",
		Auth:     SessionAPIAuth{Header: "x-api-key"},
		Create:   SessionAPICall{Method: "POST", Path: "/api/session", Body: map[string]any{}},
		IDField:  "id",
		CDPField: "wsEndpoint",
		Release:  SessionAPICall{Method: "PUT", Path: "/api/session/{id}/stop"},
		Docs:     "hyperbrowser.ai/docs/sessions/lifecycle; api-reference/stop-a-session",
	},
	// Browser.cash (docs.browser.cash, "Creating a browser session" and
	// "Using the Session API"): POST /v1/browser/session with
	// Authorization: Bearer KEY answers {"sessionId", "status", "servedBy",
	// "cdpUrl"}; DELETE /v1/browser/session?sessionId=ID stops it.
	"browser-cash": {
		Name:     "Browser.cash",
		BaseURL:  "https://api.browser.cash",
		Auth:     SessionAPIAuth{Header: "Authorization", Scheme: "Bearer"},
		Create:   SessionAPICall{Method: "POST", Path: "/v1/browser/session", Body: map[string]any{}},
		IDField:  "sessionId",
		CDPField: "cdpUrl",
		Release:  SessionAPICall{Method: "DELETE", Path: "/v1/browser/session?sessionId={id}"},
		Docs:     "docs.browser.cash/docs/fundamentals/creating-a-browser-session",
	},
}

// SessionAPIPreset returns the spec of a preset: "browserless", "anchor",
// "kernel", "hyperbrowser" or "browser-cash" ([SessionAPIPresets]).
func SessionAPIPreset(name string) (SessionAPISpec, bool) {
	s, ok := sessionAPIPresets[name]
	if ok {
		// A copy: the caller may change it without changing the preset.
		s.Create.Body = maps.Clone(s.Create.Body)
		s.Release.Body = maps.Clone(s.Release.Body)
	}
	return s, ok
}

// SessionAPIPresets names the presets, sorted.
func SessionAPIPresets() []string { return slices.Sorted(maps.Keys(sessionAPIPresets)) }

// NewBrowserless returns the client of browserless's session API
// (POST /session): its sessions' CDP URLs carry the token, and each serves
// one websocket, which the router never dials twice.
func NewBrowserless(token string, opts ...Option) *SessionAPI {
	spec, _ := SessionAPIPreset("browserless")
	p, err := NewSessionAPI(spec, token, opts...)
	if err != nil {
		panic(err) // the preset is valid: a test says so
	}
	return p
}
