package provider

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The clients of the cloud browser providers. What each client sends was
// checked against the providers' public API references (stored copies of
// their documentation pages):
//
//   - Browserbase (docs.browserbase.com, "Create a Session" and "Update a
//     Session"): base https://api.browserbase.com; POST /v1/sessions with the
//     header X-BB-API-Key and the JSON body {"projectId": ...}; the answer
//     (201) carries "id" and "connectUrl" (a wss URL) among other fields.
//     Release is POST /v1/sessions/{id} with {"status":"REQUEST_RELEASE"};
//     older references mark "projectId" required there, newer ones optional
//     (since 2026-02), so the client sends it when it has one, and leaves it
//     out of both calls otherwise. The concurrency guide says both limits
//     (max concurrent browsers, session creations per minute) answer 429.
//     The create answer's "expiresAt" is the session's end; GET
//     /v1/sessions/{id}/debug answers the live view, "debuggerFullscreenUrl"
//     (browserbase/sdk-node src/resources/sessions). GET
//     /v1/sessions/{id}/replays answers the session's replay, one HLS
//     playlist per page: {"pages": [{"url", ...}]}.
//   - Browser Use and its managed gateway: see browseruse.go.
//   - Steel (docs.steel.dev, SDK references and session lifecycle): base
//     https://api.steel.dev; POST /v1/sessions with the header steel-api-key;
//     the answer carries "id", "websocketUrl", "sessionViewerUrl" (the
//     dashboard's viewer, behind a Steel login), "debugUrl" (the live view a
//     person opens or embeds; with "?interactive=true" they can click and
//     type in it: docs.steel.dev "Live Sessions" and "Human-in-the-Loop
//     Controls"), "createdAt" and "timeout" (ms; steel-dev/steel-node
//     src/resources/sessions/sessions.ts). Steel records every session: GET
//     /v1/sessions/{id}/hls answers its HLS playlist, with the same key
//     header (docs.steel.dev "Past Sessions"). Its
//     Puppeteer/Playwright guides connect to websocketUrl with the API key
//     appended as the "apiKey" query parameter, so the CDP URL this client
//     returns carries it (print it only through redact.URL). Release is POST
//     /v1/sessions/{id}/release.
//   - A plain CDP endpoint (browserless and self-hosted grids): a ws(s) URL is
//     dialled as given; an http(s) URL is resolved through GET /json/version
//     (the DevTools HTTP endpoint), whose webSocketDebuggerUrl must be on the
//     endpoint's host (and wss after https), keeping the original query
//     (e.g. browserless's ?token=) on that host only.
//
// Every session carries the client's HTTP client, which dials its CDP
// websocket too (internal/cdpconn), so WithHTTPClient governs the
// whole session.

// Default API base URLs of the providers.
const (
	DefaultBrowserbaseBaseURL = "https://api.browserbase.com"
	DefaultBrowserUseBaseURL  = "https://api.browser-use.com"
	DefaultSteelBaseURL       = "https://api.steel.dev"
)

// Browserbase is the client of Browserbase's session API.
type Browserbase struct {
	apiClient
	projectID string
}

// NewBrowserbase returns a [Browserbase] client for the project.
func NewBrowserbase(apiKey, projectID string, opts ...Option) *Browserbase {
	return &Browserbase{
		apiClient: newAPIClient(DefaultBrowserbaseBaseURL, "Browserbase", "X-BB-API-Key", apiKey, opts),
		projectID: projectID,
	}
}

// CreateSession implements [Provider]: POST /v1/sessions, then GET
// /v1/sessions/{id}/debug for the live view (a session is handed out
// without one when that call fails).
func (b *Browserbase) CreateSession(ctx context.Context, key string) (*Session, error) {
	var out struct {
		ID         string `json:"id"`
		ConnectURL string `json:"connectUrl"`
		ExpiresAt  string `json:"expiresAt"`
	}
	fields := map[string]any{}
	if b.projectID != "" {
		fields["projectId"] = b.projectID
	}
	body := b.createBody(fields)
	b.profile.browserbaseContext(body, key)
	if err := b.call(ctx, "create", http.MethodPost, "/v1/sessions", body, &out); err != nil {
		return nil, err
	}
	s, err := b.session(ctx, key, out.ID, out.ConnectURL)
	if err != nil {
		return nil, err
	}
	s.ExpiresAt = parseTime(out.ExpiresAt)
	s.LiveViewURL = b.liveView(ctx, s.ID)
	return s, nil
}

// liveViewTimeout bounds the call that asks for a live view: the
// session works without one.
const liveViewTimeout = 5 * time.Second

// liveView asks for the session's live view: debuggerFullscreenUrl of
// GET /v1/sessions/{id}/debug. "" when the call fails.
func (b *Browserbase) liveView(ctx context.Context, id string) string {
	ctx, cancel := context.WithTimeout(ctx, liveViewTimeout)
	defer cancel()
	var out struct {
		DebuggerFullscreenURL string `json:"debuggerFullscreenUrl"`
		DebuggerURL           string `json:"debuggerUrl"`
	}
	if err := b.call(ctx, "debug", http.MethodGet, "/v1/sessions/"+url.PathEscape(id)+"/debug", nil, &out); err != nil {
		return ""
	}
	return cmp.Or(out.DebuggerFullscreenURL, out.DebuggerURL)
}

// Replay implements [Replayer]: GET /v1/sessions/{id}/replays, the URL
// of its first page's replay (an HLS playlist). A session with no page
// recorded yet has none ([ErrNoReplay]).
func (b *Browserbase) Replay(ctx context.Context, s *Session) (string, error) {
	if s == nil || s.ID == "" {
		return "", noReplay(b.name, "")
	}
	var out struct {
		Pages []struct {
			URL string `json:"url"`
		} `json:"pages"`
	}
	if err := b.call(ctx, "replay", http.MethodGet, "/v1/sessions/"+url.PathEscape(s.ID)+"/replays", nil, &out); err != nil {
		return "", err
	}
	for _, p := range out.Pages {
		if p.URL != "" {
			return p.URL, nil
		}
	}
	return "", noReplay(b.name, s.ID)
}

// noReplay is the error of a session whose provider gave no replay.
func noReplay(provider, id string) error {
	if id == "" {
		return fmt.Errorf("%w: %s has no session to ask", ErrNoReplay, provider)
	}
	return fmt.Errorf("%w: %s gave none for session %s", ErrNoReplay, provider, id)
}

// ReleaseSession implements [Provider]: POST /v1/sessions/{id} with
// {"status":"REQUEST_RELEASE"}.
func (b *Browserbase) ReleaseSession(ctx context.Context, s *Session) error {
	if s == nil || s.ID == "" {
		return nil
	}
	body := map[string]any{"status": "REQUEST_RELEASE"}
	if b.projectID != "" {
		body["projectId"] = b.projectID
	}
	return b.call(ctx, "release", http.MethodPost, "/v1/sessions/"+url.PathEscape(s.ID), body, nil)
}

// Steel is the client of Steel's sessions API.
type Steel struct{ apiClient }

// NewSteel returns a [Steel] client.
func NewSteel(apiKey string, opts ...Option) *Steel {
	return &Steel{newAPIClient(DefaultSteelBaseURL, "Steel", "steel-api-key", apiKey, opts)}
}

// CreateSession implements [Provider]: POST /v1/sessions. The returned CDPURL
// is the answer's websocketUrl with the "apiKey" query parameter Steel's
// websocket requires, so it is a credential: a Router logs it only in
// redacted form.
func (s *Steel) CreateSession(ctx context.Context, key string) (*Session, error) {
	var out struct {
		ID               string  `json:"id"`
		WebsocketURL     string  `json:"websocketUrl"`
		SessionViewerURL string  `json:"sessionViewerUrl"`
		DebugURL         string  `json:"debugUrl"`
		CreatedAt        string  `json:"createdAt"`
		Timeout          float64 `json:"timeout"` // ms
	}
	body := s.createBody(nil)
	s.profile.steelProfile(body, key)
	if err := s.call(ctx, "create", http.MethodPost, "/v1/sessions", body, &out); err != nil {
		return nil, err
	}
	sess, err := s.session(ctx, key, out.ID, out.WebsocketURL)
	if err != nil {
		return nil, err
	}
	sess.LiveViewURL = cmp.Or(interactive(out.DebugURL), out.SessionViewerURL)
	if created := parseTime(out.CreatedAt); !created.IsZero() && out.Timeout > 0 {
		sess.ExpiresAt = created.Add(time.Duration(out.Timeout * float64(time.Millisecond)))
	}
	if sess.CDPURL == "" {
		return sess, nil
	}
	if u, perr := url.Parse(sess.CDPURL); perr == nil && s.key != "" {
		q := u.Query()
		if !q.Has("apiKey") {
			q.Set("apiKey", s.key)
			u.RawQuery = q.Encode()
			sess.CDPURL = u.String()
		}
	}
	return sess, nil
}

// interactive is Steel's debugUrl with interactive=true, the view in which
// a person can act as well as watch; "" for none.
func interactive(debugURL string) string {
	u, err := url.Parse(debugURL)
	if debugURL == "" || err != nil {
		return ""
	}
	q := u.Query()
	q.Set("interactive", "true")
	u.RawQuery = q.Encode()
	return u.String()
}

// Replay implements [Replayer]: GET /v1/sessions/{id}/hls, whose answer
// is the session's HLS playlist; the URL is that playlist's, which plays
// with the steel-api-key header (it carries no key). A session Steel does
// not know, or has no recording of yet, fails the call.
func (s *Steel) Replay(ctx context.Context, sess *Session) (string, error) {
	if sess == nil || sess.ID == "" {
		return "", noReplay(s.name, "")
	}
	path := "/v1/sessions/" + url.PathEscape(sess.ID) + "/hls"
	// The answer is the playlist, not JSON: asked for as what it is.
	accept := http.Header{"Accept": {"application/vnd.apple.mpegurl, */*"}}
	if _, err := s.request(ctx, "replay", http.MethodGet, s.baseURL+path, nil, nil, accept); err != nil {
		var pe *Error
		if errors.As(err, &pe) && pe.Status == http.StatusNotFound {
			return "", fmt.Errorf("%w: %w", ErrNoReplay, err)
		}
		return "", err
	}
	return s.baseURL + path, nil
}

// ReleaseSession implements [Provider]: POST /v1/sessions/{id}/release.
func (s *Steel) ReleaseSession(ctx context.Context, sess *Session) error {
	if sess == nil || sess.ID == "" {
		return nil
	}
	return s.call(ctx, "release", http.MethodPost, "/v1/sessions/"+url.PathEscape(sess.ID)+"/release", nil, nil)
}

// Endpoint is a browser that is already running behind a CDP
// endpoint (browserless, a self-hosted grid): nothing to create or release.
type Endpoint struct {
	apiClient
	raw string
}

// CDPEndpoint returns a provider for a plain CDP endpoint: a ws(s) URL used
// as given, or an http(s) URL (possibly with ?token=) resolved through
// /json/version at each CreateSession, keeping the token. Only the
// [WithHTTPClient] and [WithName] options apply.
//
// The browser at the URL is the router's cloud route like any provider's:
// private URLs run on the local Chromium, and an unreachable endpoint falls
// back to it. To send every call to one browser and never run locally, use
// [github.com/hybroute/hybroute.WithCDPURL] instead.
func CDPEndpoint(rawURL string, opts ...Option) *Endpoint {
	return &Endpoint{apiClient: newAPIClient("", "CDP endpoint", "", "", opts), raw: rawURL}
}

// CreateSession implements [Provider]. The session has no ID: there is nothing
// to release.
func (p *Endpoint) CreateSession(ctx context.Context, key string) (*Session, error) {
	if p.raw == "" {
		return nil, p.fail("create", 0, errors.New("no CDP URL configured"))
	}
	if u, err := url.Parse(p.raw); err == nil {
		// The endpoint's query (browserless's ?token=) and userinfo are its
		// key, and so is a ws URL's path: a hosted browser's
		// /devtools/browser/<id>, or a provider's /<token>/..., lets whoever
		// reads it drive the browser.
		keyed := u.RawQuery != "" || u.Scheme == "ws" && strings.Trim(u.Path, "/") != ""
		if err := checkEndpoint(u, keyed, p.privateEndpoint); err != nil {
			return nil, p.fail("create", 0, err)
		}
	}
	ws, err := p.resolveCDP(ctx, "create", p.raw)
	if err != nil {
		return nil, err
	}
	return &Session{Key: key, CDPURL: ws, HTTPClient: p.client}, nil
}

// ReleaseSession implements [Provider]; a CDP endpoint has nothing to release.
func (p *Endpoint) ReleaseSession(context.Context, *Session) error { return nil }

var (
	_ Provider = (*Browserbase)(nil)
	_ Provider = (*BrowserUse)(nil)
	_ Provider = (*Steel)(nil)
	_ Provider = (*Endpoint)(nil)
	_ Replayer = (*Browserbase)(nil)
	_ Replayer = (*BrowserUse)(nil)
	_ Replayer = (*SessionAPI)(nil)
	_ Replayer = (*Steel)(nil)
)
