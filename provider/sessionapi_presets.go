package provider

import (
	"maps"
	"slices"
)

// The presets: session APIs as their providers' public references give
// them (stored copies of the pages named in each Docs). Each is a
// [SessionAPISpec], so what a user writes in a spec file is what these are.
var sessionAPIPresets = map[string]SessionAPISpec{
	// browserless (docs.browserless.io, "/sessions API", the OpenAPI
	// "session create" and /examples/close-session): POST
	// /session?token=TOKEN with {"ttl": ms, ...} answers {"id", "connect",
	// "stop", "ttl", ...}, or in the close-session example {"id",
	// "browserQL", "browserWSEndpoint", "stop"}: the session's websocket
	// URL with the token already in it is connect, else
	// browserWSEndpoint; stop is the URL a DELETE ends the session with.
	// Reconnecting to a session is documented: it is not one connection
	// only. The docs name no live view or recording.
	"browserless": {
		Name:            "browserless",
		BaseURL:         "https://production-sfo.browserless.io",
		Auth:            SessionAPIAuth{Query: "token"},
		Create:          SessionAPICall{Method: "POST", Path: "/session", Body: map[string]any{"ttl": 900000}},
		IDField:         "id",
		CDPField:        "connect",
		MoreCDPFields:   []string{"browserWSEndpoint"},
		TTLField:        "ttl",
		Release:         SessionAPICall{Method: "DELETE"},
		ReleaseURLField: "stop",
		Docs:            "docs.browserless.io/baas/http-apis/sessions; open-api/session-create; examples/close-session",
	},
	// Anchor Browser (docs.anchorbrowser.io, API reference "Start Browser
	// Session" and "End Browser Session"): POST /v1/sessions with the
	// header anchor-api-key and a JSON body (all optional) answers
	// {"data": {"id", "cdp_url", "live_view_url"}}; DELETE
	// /v1/sessions/{session_id} ends it (anchorbrowser/
	// AnchorBrowser-SDK-Typescript src/resources/sessions). GET
	// /v1/sessions/{id}/recordings answers {"data": {"count", "items":
	// [{"id", "is_primary", "file_link", ...}]}}: the first item's
	// file_link is the recording.
	"anchor": {
		Name:          "Anchor Browser",
		BaseURL:       "https://api.anchorbrowser.io",
		Auth:          SessionAPIAuth{Header: "anchor-api-key"},
		Create:        SessionAPICall{Method: "POST", Path: "/v1/sessions", Body: map[string]any{}},
		IDField:       "data.id",
		CDPField:      "data.cdp_url",
		LiveViewField: "data.live_view_url",
		Replay:        SessionAPICall{Method: "GET", Path: "/v1/sessions/{id}/recordings"},
		ReplayField:   "data.items.0.file_link",
		Release:       SessionAPICall{Method: "DELETE", Path: "/v1/sessions/{id}"},
		Docs:          "docs.anchorbrowser.io/api-reference/browser-sessions",
	},
	// Kernel (kernel.sh docs, "Create a browser" and the API reference
	// "Delete a browser session by ID"): POST /browsers on
	// https://api.onkernel.com with Authorization: Bearer KEY answers
	// {"session_id", "cdp_ws_url", "browser_live_view_url", ...}; DELETE
	// /browsers/{id} ends it (kernel/kernel-go-sdk browser.go). Its
	// timeout_seconds is an inactivity timeout, not an end. Its replays
	// are recordings started on request (POST /browsers/{id}/replays,
	// kernel's "browsers replays start"); GET /browsers/{id}/replays lists
	// them, [{"replay_id", "replay_view_url", "started_at",
	// "finished_at"}] (browserreplay.go): the first one's view URL is the
	// session's replay, none when no recording was started.
	"kernel": {
		Name:          "Kernel",
		BaseURL:       "https://api.onkernel.com",
		Auth:          SessionAPIAuth{Header: "Authorization", Scheme: "Bearer"},
		Create:        SessionAPICall{Method: "POST", Path: "/browsers", Body: map[string]any{}},
		IDField:       "session_id",
		CDPField:      "cdp_ws_url",
		LiveViewField: "browser_live_view_url",
		Replay:        SessionAPICall{Method: "GET", Path: "/browsers/{id}/replays"},
		ReplayField:   "0.replay_view_url",
		Release:       SessionAPICall{Method: "DELETE", Path: "/browsers/{id}"},
		Docs:          "kernel.sh/docs/browsers/create-a-browser; api-reference/browsers",
	},
	// Hyperbrowser (hyperbrowser.ai docs, openapi.json "Create a session"
	// and "Stop a session"): POST /api/session with x-api-key answers
	// {"id", "status", "wsEndpoint", "liveUrl", "sessionUrl", ...}; PUT
	// /api/session/{id}/stop ends it (hyperbrowserai/node-sdk
	// src/types/session.ts).
	"hyperbrowser": {
		Name:          "Hyperbrowser",
		BaseURL:       "https://api.hyperbrowser.ai",
		Auth:          SessionAPIAuth{Header: "x-api-key"},
		Create:        SessionAPICall{Method: "POST", Path: "/api/session", Body: map[string]any{}},
		IDField:       "id",
		CDPField:      "wsEndpoint",
		LiveViewField: "liveUrl",
		Replay:        SessionAPICall{Method: "GET", Path: "/api/session/{id}/recording-url"},
		ReplayField:   "recordingUrl",
		Release:       SessionAPICall{Method: "PUT", Path: "/api/session/{id}/stop"},
		Docs:          "hyperbrowser.ai/docs/sessions/lifecycle; api-reference/stop-a-session",
	},
	// Browser.cash, now Driver (BrowserCash/docs api-reference/overview.mdx,
	// openapi.json, docs/sessions/lifecycle.mdx and errors.mdx): base
	// https://api.driver.dev; POST /v1/browser/session with Authorization:
	// Bearer KEY answers {"sessionId", "status", "servedBy", "cdpUrl"}; a
	// session still "starting" has cdpUrl null, and GET
	// /v1/browser/session?sessionId=ID (the same shape) is polled every
	// second until it is "active"; DELETE /v1/browser/session?sessionId=ID
	// stops it, and answers 404 for a session already ended. Its live view
	// is a viewer page with the session's CDP URL in its query: the URL
	// that drives the browser past the router's guard, so it is not handed
	// out.
	"browser-cash": {
		Name:                   "Browser.cash",
		BaseURL:                "https://api.driver.dev",
		Auth:                   SessionAPIAuth{Header: "Authorization", Scheme: "Bearer"},
		Create:                 SessionAPICall{Method: "POST", Path: "/v1/browser/session", Body: map[string]any{}},
		IDField:                "sessionId",
		CDPField:               "cdpUrl",
		Poll:                   SessionAPICall{Method: "GET", Path: "/v1/browser/session?sessionId={id}"},
		StatusField:            "status",
		PendingStatuses:        []string{"starting"},
		Release:                SessionAPICall{Method: "DELETE", Path: "/v1/browser/session?sessionId={id}"},
		ReleaseNotFoundIsEnded: true,
		Docs:                   "BrowserCash/docs api-reference/openapi.json; docs/sessions/lifecycle.mdx, errors.mdx",
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
		s.Replay.Body = maps.Clone(s.Replay.Body)
		s.MoreCDPFields = slices.Clone(s.MoreCDPFields)
		s.PendingStatuses = slices.Clone(s.PendingStatuses)
	}
	return s, ok
}

// SessionAPIPresets names the presets, sorted.
func SessionAPIPresets() []string { return slices.Sorted(maps.Keys(sessionAPIPresets)) }

// NewBrowserless returns the client of browserless's session API
// (POST /session): its sessions' CDP URLs carry the token.
func NewBrowserless(token string, opts ...Option) *SessionAPI {
	spec, _ := SessionAPIPreset("browserless")
	p, err := NewSessionAPI(spec, token, opts...)
	if err != nil {
		panic(err) // the preset is valid: a test says so
	}
	return p
}
