package cloudtest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The fakes of the session APIs the declarative provider speaks. Each
// shape is written from its provider's documentation (stored copies of
// the pages cited), independently of hybroute's presets, so a test that
// passes proves the preset speaks the documented API, not that it agrees
// with itself:
//
//   - browserless (docs.browserless.io, "/sessions API"): POST
//     /session?token=T with {"ttl": ms} answers 200 {"id", "connect",
//     "stop", "ttl"}; connect is wss://HOST/e/<hex>/session/connect/<id>
//     ?token=T, stop https://HOST/e/<hex>/session/<id>?token=T, ended by a
//     DELETE; with WithCloseSessionShape, the shape of its
//     /examples/close-session, {"id", "browserQL", "browserWSEndpoint",
//     "stop"}. Reconnecting to a session is documented: a session takes
//     another websocket while it lives. A bad token is a plain-text 401.
//   - Anchor Browser (docs.anchorbrowser.io, "Start Browser Session", "End
//     Browser Session"): POST /v1/sessions, header anchor-api-key, answers
//     {"data": {"id", "cdp_url", "live_view_url"}}; cdp_url is
//     wss://connect.anchorbrowser.io?apiKey=K&sessionId=ID; DELETE
//     /v1/sessions/{id} answers {"data": {"status": "ok"}}.
//   - Kernel (kernel.sh, "Create a browser", API reference): POST /browsers
//     with Authorization: Bearer K answers {"session_id", "cdp_ws_url",
//     "browser_live_view_url"}; cdp_ws_url carries a per-session jwt;
//     DELETE /browsers/{id} answers 204. Errors: {"code", "message"}.
//   - Hyperbrowser (hyperbrowser.ai openapi.json): POST /api/session with
//     x-api-key answers {"id", "status", "wsEndpoint", "liveUrl", "token"};
//     PUT /api/session/{id}/stop answers {"success": true}.
//   - Browser.cash (BrowserCash/docs api-reference/openapi.json,
//     docs/sessions/lifecycle.mdx, errors.mdx): POST /v1/browser/session
//     with Authorization: Bearer K answers {"sessionId", "status",
//     "servedBy", "createdAt", "cdpUrl"}, cdpUrl wss://HOST/v1/consumer/
//     <id>/devtools/browser/<uuid>, or with WithStartingSessions status
//     "starting" and cdpUrl null; GET /v1/browser/session?sessionId=ID
//     answers the same shape; DELETE /v1/browser/session?sessionId=ID
//     stops it ({"success": true}), and answers 404 for a session already
//     ended. Errors are {"error": "..."}.

// The session API kinds.
const (
	Browserless  Kind = "browserless"
	Anchor       Kind = "anchor"
	Kernel       Kind = "kernel"
	Hyperbrowser Kind = "hyperbrowser"
	BrowserCash  Kind = "browser-cash"
)

// The hosts of their websockets with WithRealShapes (the front's names).
const (
	BrowserlessConnectHost  = "production.browserless.test"
	AnchorConnectHost       = "connect.anchorbrowser.test"
	KernelConnectHost       = "browser.kernel.test"
	HyperbrowserConnectHost = "connect.hyperbrowser.test"
	BrowserCashConnectHost  = "node-1.browser-cash.test"
)

// SessionAPIKinds are the kinds the declarative provider's presets speak.
var SessionAPIKinds = []Kind{Browserless, Anchor, Kernel, Hyperbrowser, BrowserCash}

// apiShape is one session API as its documentation gives it.
type apiShape struct {
	createMethod, createPath string
	createStatus             int
	// authorized reports whether r carries key where the API takes it.
	authorized func(r *http.Request, key string) bool
	// answer is the create answer for session id with CDP URL cdp (and,
	// for browserless, the stop URL).
	answer func(id, cdp, stop, token string) map[string]any
	// releaseID reads the session id of a release call; ok false: not one.
	releaseID     func(r *http.Request) (string, bool)
	releaseStatus int
	releaseBody   any
	errorBody     func(status int, msg string) string
	// ws is the real-shape websocket URL of session id on host.
	ws func(host, id, key, token string) string
	// wsSession reads the session (and checks its key) of a websocket
	// upgrade of the real shape.
	wsSession func(r *http.Request, key string, tokens map[string]string) (string, error)
	host      string
}

func bearer(r *http.Request, key string) bool { return r.Header.Get("Authorization") == "Bearer "+key }

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// pathID reads the id from a path prefix+ID+suffix.
func pathID(method, prefix, suffix string) func(r *http.Request) (string, bool) {
	return func(r *http.Request) (string, bool) {
		if r.Method != method || !strings.HasPrefix(r.URL.Path, prefix) || !strings.HasSuffix(r.URL.Path, suffix) {
			return "", false
		}
		id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, prefix), suffix)
		return id, id != "" && !strings.Contains(id, "/")
	}
}

var apiShapes = map[Kind]apiShape{
	Browserless: {
		createMethod: http.MethodPost, createPath: "/session", createStatus: http.StatusOK,
		authorized: func(r *http.Request, key string) bool { return r.URL.Query().Get("token") == key },
		answer: func(id, cdp, stop, _ string) map[string]any {
			return map[string]any{"id": id, "connect": cdp, "stop": stop, "ttl": 900000, "browserQL": nil}
		},
		releaseID:     pathID(http.MethodDelete, "/e/53203b/session/", ""),
		releaseStatus: http.StatusOK,
		releaseBody:   map[string]any{"success": true},
		errorBody:     func(_ int, msg string) string { return msg }, // browserless answers plain text
		ws: func(host, id, key, _ string) string {
			return "wss://" + host + "/e/53203b/session/connect/" + id + "?token=" + url.QueryEscape(key)
		},
		wsSession: func(r *http.Request, key string, _ map[string]string) (string, error) {
			id, ok := strings.CutPrefix(r.URL.Path, "/e/53203b/session/connect/")
			if !ok || r.URL.Query().Get("token") != key {
				return "", errors.New("bad or missing token")
			}
			return id, nil
		},
		host: BrowserlessConnectHost,
	},
	Anchor: {
		createMethod: http.MethodPost, createPath: "/v1/sessions", createStatus: http.StatusOK,
		authorized: func(r *http.Request, key string) bool { return r.Header.Get("anchor-api-key") == key },
		answer: func(id, cdp, _, _ string) map[string]any {
			d := map[string]any{"id": id, "live_view_url": "https://live.anchorbrowser.test?sessionId=" + id}
			if cdp != "" {
				d["cdp_url"] = cdp
			}
			return map[string]any{"data": d}
		},
		releaseID:     pathID(http.MethodDelete, "/v1/sessions/", ""),
		releaseStatus: http.StatusOK,
		releaseBody:   map[string]any{"data": map[string]any{"status": "ok"}},
		errorBody: func(status int, msg string) string {
			return jsonString(map[string]any{"error": map[string]any{"code": status, "message": msg}})
		},
		ws: func(host, id, key, _ string) string {
			return "wss://" + host + "?apiKey=" + url.QueryEscape(key) + "&sessionId=" + id
		},
		wsSession: func(r *http.Request, key string, _ map[string]string) (string, error) {
			if r.URL.Query().Get("apiKey") != key || (r.URL.Path != "" && r.URL.Path != "/") {
				return "", errors.New("invalid apiKey")
			}
			return r.URL.Query().Get("sessionId"), nil
		},
		host: AnchorConnectHost,
	},
	Kernel: {
		createMethod: http.MethodPost, createPath: "/browsers", createStatus: http.StatusOK,
		authorized: bearer,
		answer: func(id, cdp, _, _ string) map[string]any {
			out := map[string]any{"session_id": id, "browser_live_view_url": "https://live.kernel.test/" + id,
				"webdriver_ws_url": "wss://browser.kernel.test/webdriver", "headless": false, "stealth": false, "timeout_seconds": 60}
			if cdp != "" {
				out["cdp_ws_url"] = cdp
			}
			return out
		},
		releaseID:     pathID(http.MethodDelete, "/browsers/", ""),
		releaseStatus: http.StatusNoContent,
		errorBody: func(status int, msg string) string {
			return jsonString(map[string]any{"code": strings.ToLower(strings.ReplaceAll(http.StatusText(status), " ", "_")), "message": msg})
		},
		ws: func(host, _, _, token string) string { return "wss://" + host + "/browser/cdp?jwt=" + token },
		wsSession: func(r *http.Request, _ string, tokens map[string]string) (string, error) {
			id, ok := tokens[r.URL.Query().Get("jwt")]
			if !ok || r.URL.Path != "/browser/cdp" {
				return "", errors.New("invalid jwt")
			}
			return id, nil
		},
		host: KernelConnectHost,
	},
	Hyperbrowser: {
		createMethod: http.MethodPost, createPath: "/api/session", createStatus: http.StatusOK,
		authorized: func(r *http.Request, key string) bool { return r.Header.Get("x-api-key") == key },
		answer: func(id, cdp, _, token string) map[string]any {
			out := map[string]any{"id": id, "status": "active", "liveUrl": "https://app.hyperbrowser.test/live?token=" + token,
				"token": token, "sessionUrl": "https://app.hyperbrowser.test/sessions/" + id}
			if cdp != "" {
				out["wsEndpoint"] = cdp
			}
			return out
		},
		releaseID:     pathID(http.MethodPut, "/api/session/", "/stop"),
		releaseStatus: http.StatusOK,
		releaseBody:   map[string]any{"success": true},
		errorBody:     func(_ int, msg string) string { return jsonString(map[string]any{"message": msg}) },
		ws:            func(host, _, _, token string) string { return "wss://" + host + "/?token=" + token },
		wsSession: func(r *http.Request, _ string, tokens map[string]string) (string, error) {
			id, ok := tokens[r.URL.Query().Get("token")]
			if !ok {
				return "", errors.New("invalid token")
			}
			return id, nil
		},
		host: HyperbrowserConnectHost,
	},
	BrowserCash: {
		createMethod: http.MethodPost, createPath: "/v1/browser/session", createStatus: http.StatusOK,
		authorized: bearer,
		answer: func(id, cdp, _, _ string) map[string]any {
			out := map[string]any{"sessionId": id, "status": "active", "servedBy": "node-1",
				"createdAt": time.Now().UTC().Format(time.RFC3339), "stoppedAt": nil}
			if cdp != "" {
				out["cdpUrl"] = cdp
			}
			return out
		},
		releaseID: func(r *http.Request) (string, bool) {
			id := r.URL.Query().Get("sessionId")
			return id, r.Method == http.MethodDelete && r.URL.Path == "/v1/browser/session" && id != ""
		},
		releaseStatus: http.StatusOK,
		releaseBody:   map[string]any{"success": true},
		errorBody:     func(_ int, msg string) string { return jsonString(map[string]any{"error": msg}) },
		ws: func(host, id, _, token string) string {
			return "wss://" + host + "/v1/consumer/" + id + "/devtools/browser/" + token
		},
		wsSession: func(r *http.Request, _ string, tokens map[string]string) (string, error) {
			rest, ok := strings.CutPrefix(r.URL.Path, "/v1/consumer/")
			id, tok, ok2 := strings.Cut(rest, "/devtools/browser/")
			if !ok || !ok2 || tokens[tok] != id {
				return "", errors.New("no such session")
			}
			return id, nil
		},
		host: BrowserCashConnectHost,
	},
}

// serveSessionAPI answers a session API kind's create and release calls.
func (s *Server) serveSessionAPI(w http.ResponseWriter, r *http.Request, body []byte) {
	shape := apiShapes[s.Kind]
	if r.Method == shape.createMethod && r.URL.Path == shape.createPath {
		s.creates.Add(1)
		s.mu.Lock()
		s.created = append(s.created, time.Now())
		s.mu.Unlock()
		if !shape.authorized(r, s.APIKey) {
			s.unauthorized(w)
			return
		}
		rep, done := s.applyScripted(w, r, epCreate)
		if done {
			return
		}
		if len(body) > 0 && !json.Valid(body) {
			writeRaw(w, http.StatusBadRequest, shape.errorBody(http.StatusBadRequest, "body is not JSON"))
			return
		}
		id := s.newID()
		s.setLive(id, true)
		s.noteRecording(id, body)
		token := sessionToken()
		s.mu.Lock()
		s.tokens[token] = id
		s.mu.Unlock()
		cdp := withQuery(s.WSURL, "sessionId="+id)
		if s.Front != nil {
			cdp = shape.ws(shape.host, id, s.APIKey, token)
		}
		if rep.NoCDP {
			cdp = ""
		}
		stop := s.URL + "/e/53203b/session/" + id + "?token=" + url.QueryEscape(s.APIKey)
		out := shape.answer(id, cdp, stop, token)
		s.mu.Lock()
		s.cdps[id] = cdp
		s.mu.Unlock()
		switch {
		case s.Kind == Browserless && s.altShape:
			out = map[string]any{"id": id, "browserQL": s.URL + "/e/53203b/session/" + id + "/browserql?token=" + url.QueryEscape(s.APIKey),
				"browserWSEndpoint": cdp, "stop": stop}
		case s.Kind == BrowserCash && s.starting > 0:
			s.mu.Lock()
			s.pending[id] = s.starting
			s.mu.Unlock()
			out["status"], out["cdpUrl"] = "starting", nil
		}
		writeJSON(w, shape.createStatus, out)
		return
	}
	if s.Kind == BrowserCash && r.Method == http.MethodGet && r.URL.Path == "/v1/browser/session" {
		s.serveBrowserCashRead(w, r, shape)
		return
	}
	if id, ok := shape.releaseID(r); ok {
		s.releases.Add(1)
		if !shape.authorized(r, s.APIKey) {
			s.unauthorized(w)
			return
		}
		if _, done := s.applyScripted(w, r, epRelease); done {
			return
		}
		if !s.setLive(id, false) {
			writeRaw(w, http.StatusNotFound, shape.errorBody(http.StatusNotFound, "Session not found"))
			return
		}
		if shape.releaseBody == nil {
			w.WriteHeader(shape.releaseStatus)
			return
		}
		writeJSON(w, shape.releaseStatus, shape.releaseBody)
		return
	}
	writeRaw(w, http.StatusNotFound, shape.errorBody(http.StatusNotFound, "Not Found"))
}

// unauthorized answers a missing or wrong key as the kind does.
func (s *Server) unauthorized(w http.ResponseWriter) {
	shape := apiShapes[s.Kind]
	if s.Kind == Browserless {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte("Bad or missing authentication."))
		return
	}
	writeRaw(w, http.StatusUnauthorized, shape.errorBody(http.StatusUnauthorized, "Invalid API key"))
}

// authorizeSessionAPI is the front's check of a session API's websocket:
// the real URL shape's key or token, and a live session.
func (s *Server) authorizeSessionAPI(shape apiShape, host string, r *http.Request) error {
	if host != shape.host {
		return errors.New("unknown host")
	}
	s.mu.Lock()
	id, err := shape.wsSession(r, s.APIKey, s.tokens)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if !s.Live(id) {
		return errors.New("no such session")
	}
	return nil
}

// sessionToken is a per-session websocket token.
func sessionToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// serveBrowserCashRead answers GET /v1/browser/session?sessionId=ID in
// the create's shape: "starting" while the session has reads pending,
// then "active" with its cdpUrl; "completed" once released.
func (s *Server) serveBrowserCashRead(w http.ResponseWriter, r *http.Request, shape apiShape) {
	if !shape.authorized(r, s.APIKey) {
		s.unauthorized(w)
		return
	}
	id := r.URL.Query().Get("sessionId")
	s.mu.Lock()
	s.polls[id]++
	cdp, known := s.cdps[id]
	left := s.pending[id]
	if left > 0 {
		s.pending[id] = left - 1
	}
	s.mu.Unlock()
	out := shape.answer(id, cdp, "", "")
	switch {
	case !known:
		writeRaw(w, http.StatusNotFound, shape.errorBody(http.StatusNotFound, "Session not found"))
		return
	case !s.Live(id):
		out["status"], out["cdpUrl"], out["stoppedAt"] = "completed", nil, time.Now().UTC().Format(time.RFC3339)
	case left > 1:
		out["status"], out["cdpUrl"] = "starting", nil
	}
	writeJSON(w, http.StatusOK, out)
}
