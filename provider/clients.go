package provider

import (
	"context"
	"errors"
	"net/http"
	"net/url"
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
//     older references mark "projectId" required there, newer ones optional,
//     so the client sends both. The concurrency guide says both limits (max
//     concurrent browsers, session creations per minute) answer 429.
//   - Browser Use and its managed gateway: see browseruse.go.
//   - Steel (docs.steel.dev, SDK references and session lifecycle): base
//     https://api.steel.dev; POST /v1/sessions with the header steel-api-key;
//     the answer carries "id", "websocketUrl" and "sessionViewerUrl". Its
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

// CreateSession implements [Provider]: POST /v1/sessions.
func (b *Browserbase) CreateSession(ctx context.Context, key string) (*Session, error) {
	var out struct {
		ID         string `json:"id"`
		ConnectURL string `json:"connectUrl"`
	}
	body := b.createBody(map[string]any{"projectId": b.projectID})
	b.profile.browserbaseContext(body, key)
	if err := b.call(ctx, "create", http.MethodPost, "/v1/sessions", body, &out); err != nil {
		return nil, err
	}
	return b.session(ctx, key, out.ID, out.ConnectURL)
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
		ID           string `json:"id"`
		WebsocketURL string `json:"websocketUrl"`
	}
	body := s.createBody(nil)
	s.profile.steelProfile(body, key)
	if err := s.call(ctx, "create", http.MethodPost, "/v1/sessions", body, &out); err != nil {
		return nil, err
	}
	sess, err := s.session(ctx, key, out.ID, out.WebsocketURL)
	if err != nil || sess.CDPURL == "" {
		return sess, err
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
)
