package hybroute

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Provider is a cloud browser service. CreateSession returns a session whose
// CDPURL the router connects to; a provider that cannot hand out a CDP
// endpoint returns a session with an empty CDPURL, and the router reports
// ErrNoCDPEndpoint for it rather than pretending the call ran.
type Provider interface {
	// Name names the provider in logs and in error messages.
	Name() string
	// CreateSession starts one cloud browser session for the cache key.
	CreateSession(ctx context.Context, key string) (*Session, error)
	// ReleaseSession ends a session that CreateSession returned.
	ReleaseSession(ctx context.Context, s *Session) error
}

// Session is one browser session, cloud or local, under one cache key.
type Session struct {
	Key, ID, CDPURL string
	// FallbackFromCloud marks a local session that stands in for a cloud
	// session the provider could not create; FallbackReason says why.
	FallbackFromCloud bool
	FallbackReason    string
}

// This file also holds the HTTP clients of the cloud browser providers. What
// each client sends was checked against the providers' public API references
// (stored copies of their documentation pages):
//
//   - Browserbase (docs.browserbase.com, "Create a Session" and "Update a
//     Session"): base https://api.browserbase.com; POST /v1/sessions with the
//     header X-BB-API-Key and the JSON body {"projectId": ...}; the answer
//     (201) carries "id" and "connectUrl" (a wss URL) among other fields.
//     Release is POST /v1/sessions/{id} with {"status":"REQUEST_RELEASE"};
//     older references mark "projectId" required there, newer ones optional,
//     so the client sends both. The concurrency guide says both limits (max
//     concurrent browsers, session creations per minute) answer 429.
//   - Browser Use (docs.cloud.browser-use.com, API v2 "Create Browser
//     Session" and "Update Browser Session"): base https://api.browser-use.com;
//     POST /api/v2/browsers with X-Browser-Use-API-Key; the answer carries
//     "id", "status" ("active"/"stopped"), "cdpUrl" and "liveUrl". Release is
//     PATCH /api/v2/browsers/{id} with {"action":"stop"}. Errors are FastAPI
//     shaped: {"detail": "Session not found"}, or for 422 a list of
//     {"loc","msg","type"}. Its rate-limit 429s are documented without a
//     Retry-After header, so the session layer must bring its own window.
//   - Steel (docs.steel.dev, SDK references and session lifecycle): base
//     https://api.steel.dev; POST /v1/sessions with the header steel-api-key;
//     the answer carries "id", "websocketUrl" and "sessionViewerUrl". Its
//     Puppeteer/Playwright guides connect to websocketUrl with the API key
//     appended as the "apiKey" query parameter, so the CDP URL this client
//     returns carries it (see redactURL before logging one). Release is POST
//     /v1/sessions/{id}/release.
//   - A plain CDP endpoint (browserless and self-hosted grids): a ws(s) URL is
//     used as given; an http(s) URL is resolved through GET /json/version
//     (the DevTools HTTP endpoint, also what chromedp's remote allocator
//     does), keeping the original query (e.g. browserless's ?token=).

// ProviderError is the error of a provider call that did not succeed: every
// non-2xx answer, and every failure to get or read one.
type ProviderError struct {
	Provider string // the provider's Name()
	Op       string // "create" or "release"
	// Status is the HTTP status, or 0 when no answer arrived (network error,
	// timeout). A 2xx status with a non-nil Err means a malformed answer.
	Status int
	// Code is the provider's machine-readable error code, e.g.
	// "RATE_LIMIT_EXCEEDED", read from the body's "errorCode", "code",
	// "error" or "error.code".
	Code string
	// Message is the provider's human-readable message ("message", "detail",
	// "error.message"), with any credential removed.
	Message string
	// RetryAfter is how long the provider asked us to wait: the larger of
	// the Retry-After header (delta-seconds or HTTP-date) and a "retryAfter"
	// body field in seconds. Zero when it said nothing.
	RetryAfter time.Duration
	// Limit is the advertised limit (body "limit" or X-RateLimit-Limit),
	// zero when none.
	Limit int
	// Err is the underlying cause for failures without a usable answer
	// (transport error, context error, decode error), with credentials
	// removed from its text. Unwrap returns it.
	Err error
}

// Error describes the failure. It never contains an API key or a URL token.
func (e *ProviderError) Error() string {
	var b strings.Builder
	b.WriteString("cloud browser provider ")
	b.WriteString(e.Provider)
	b.WriteString(": ")
	b.WriteString(e.Op)
	b.WriteString(" session failed")
	if e.Status != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.Status)
	}
	if e.Code != "" {
		b.WriteString(" ")
		b.WriteString(e.Code)
	}
	if e.Message != "" && e.Message != e.Code {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	var extra []string
	if e.RetryAfter > 0 {
		extra = append(extra, "retry after "+e.RetryAfter.String())
	}
	if e.Limit > 0 {
		extra = append(extra, "limit "+strconv.Itoa(e.Limit))
	}
	if len(extra) > 0 {
		b.WriteString(" (" + strings.Join(extra, ", ") + ")")
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause, if any.
func (e *ProviderError) Unwrap() error { return e.Err }

// Is matches the sentinels by status: ErrRateLimited (429), ErrUnauthorized
// (401, 403), ErrPaymentRequired (402), ErrProviderUnavailable (5xx, 408, or
// no usable answer).
func (e *ProviderError) Is(target error) bool {
	switch target {
	case ErrRateLimited:
		return e.Status == http.StatusTooManyRequests
	case ErrUnauthorized:
		return e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden
	case ErrPaymentRequired:
		return e.Status == http.StatusPaymentRequired
	case ErrProviderUnavailable:
		return e.Status < 300 || e.Status == http.StatusRequestTimeout || e.Status >= 500
	}
	return false
}

// Default API base URLs of the providers.
const (
	DefaultBrowserbaseBaseURL = "https://api.browserbase.com"
	DefaultBrowserUseBaseURL  = "https://api.browser-use.com"
	DefaultSteelBaseURL       = "https://api.steel.dev"
)

// maxAnswerBytes bounds how much of any answer body a client reads.
const maxAnswerBytes = 1 << 20

// defaultProviderTimeout bounds one provider call when the caller's context
// has no earlier deadline. Session creation takes seconds, not minutes.
const defaultProviderTimeout = 60 * time.Second

// ProviderOption configures a provider client.
type ProviderOption func(*providerConfig)

type providerConfig struct {
	baseURL string
	client  *http.Client
	name    string
	params  map[string]any
}

// WithProviderBaseURL points a client at another API base URL: a test server
// or a self-hosted gateway. A trailing slash is ignored.
func WithProviderBaseURL(u string) ProviderOption {
	return func(c *providerConfig) { c.baseURL = u }
}

// WithProviderHTTPClient makes a client send its requests with hc. The
// default client times out after 60 s and does not follow redirects (a
// redirect to another host would carry the API key header along).
func WithProviderHTTPClient(hc *http.Client) ProviderOption {
	return func(c *providerConfig) { c.client = hc }
}

// WithProviderName overrides the name a client reports in logs and errors.
func WithProviderName(name string) ProviderOption {
	return func(c *providerConfig) { c.name = name }
}

// WithSessionParams adds fields to the JSON body of the create call, e.g.
// {"keepAlive": true, "timeout": 600} for Browserbase or {"timeout": 30}
// for Browser Use. The fields the client itself sets win over these.
func WithSessionParams(params map[string]any) ProviderOption {
	return func(c *providerConfig) {
		c.params = make(map[string]any, len(params))
		maps.Copy(c.params, params)
	}
}

func newProviderConfig(defaultBase, defaultName string, opts []ProviderOption) providerConfig {
	c := providerConfig{baseURL: defaultBase, name: defaultName}
	for _, o := range opts {
		o(&c)
	}
	c.baseURL = strings.TrimRight(c.baseURL, "/")
	if c.client == nil {
		c.client = &http.Client{
			Timeout: defaultProviderTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		}
	}
	return c
}

// createBody merges the configured session params with the fields the client
// must set.
func (c providerConfig) createBody(fields map[string]any) map[string]any {
	body := make(map[string]any, len(c.params)+len(fields))
	maps.Copy(body, c.params)
	maps.Copy(body, fields)
	return body
}

// apiClient is the HTTP plumbing the provider clients share.
type apiClient struct {
	provider  string
	base      string
	hc        *http.Client
	keyHeader string
	key       string
}

// call sends one JSON request and decodes a 2xx answer into out (when out is
// not nil). It returns a *ProviderError for every failure.
func (c *apiClient) call(ctx context.Context, op, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return c.fail(op, 0, fmt.Errorf("encoding the request: %w", err), nil)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return c.fail(op, 0, err, nil)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "hybroute")
	if c.keyHeader != "" {
		req.Header.Set(c.keyHeader, c.key)
	}
	return c.send(req, op, out, nil)
}

// send runs req and decodes the answer. extra lists secrets beyond the API
// key that must not reach an error string (URL tokens).
func (c *apiClient) send(req *http.Request, op string, out any, extra []string) error {
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.fail(op, 0, err, extra)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return c.fail(op, resp.StatusCode, fmt.Errorf("reading the answer: %w", err), extra)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return c.answerError(op, resp, data, extra)
	}
	if len(data) > maxAnswerBytes {
		return c.fail(op, resp.StatusCode, fmt.Errorf("answer larger than %d bytes", maxAnswerBytes), extra)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return c.fail(op, resp.StatusCode, fmt.Errorf("decoding the answer: %w", err), extra)
	}
	return nil
}

// fail builds the *ProviderError of a failure without a usable answer.
func (c *apiClient) fail(op string, status int, cause error, extra []string) *ProviderError {
	return &ProviderError{Provider: c.provider, Op: op, Status: status, Err: c.redactErr(cause, extra)}
}

func (c *apiClient) secrets(extra []string) []string {
	s := make([]string, 0, len(extra)+1)
	if c.key != "" {
		s = append(s, c.key)
	}
	return append(s, extra...)
}

// redactErr returns err with every secret removed from its text, still
// unwrapping to err (so errors.Is finds context.DeadlineExceeded).
func (c *apiClient) redactErr(err error, extra []string) error {
	if err == nil {
		return nil
	}
	var msg string
	if ue, ok := errors.AsType[*url.Error](err); ok {
		// The URL of a request may carry a token: log its redacted form.
		cp := *ue
		cp.URL = redactURL(ue.URL)
		msg = cp.Error()
	} else {
		msg = err.Error()
	}
	return &redactedError{msg: scrub(msg, c.secrets(extra)), err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// scrub replaces every secret in s.
func scrub(s string, secrets []string) string {
	for _, sec := range secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, "[REDACTED]")
		}
	}
	return s
}

// answerError turns a non-2xx answer into a *ProviderError, reading the
// shapes the providers use: {"error":"RATE_LIMIT_EXCEEDED","retryAfter":17,
// "limit":200}, {"statusCode":429,"error":"Too Many Requests","message":...},
// {"error":{"code":...,"message":...}}, {"code":...,"message":...},
// {"detail":"..."} and {"detail":[{"msg":...}]}.
func (c *apiClient) answerError(op string, resp *http.Response, data []byte, extra []string) *ProviderError {
	e := &ProviderError{Provider: c.provider, Op: op, Status: resp.StatusCode}
	if len(data) > maxAnswerBytes {
		data = data[:maxAnswerBytes]
	}
	now := time.Now()
	e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), now)
	if n, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("X-RateLimit-Limit"))); err == nil && n > 0 {
		e.Limit = n
	}

	var obj map[string]any
	if json.Unmarshal(data, &obj) == nil && obj != nil {
		nested, _ := obj["error"].(map[string]any)
		e.Code = firstString(obj["errorCode"], obj["error_code"], obj["code"], obj["error"], nested["code"], nested["type"])
		e.Message = firstString(obj["message"], detailMessage(obj["detail"]), nested["message"], obj["msg"], obj["error_description"])
		if d, ok := seconds(firstPresent(obj["retryAfter"], obj["retry_after"], nested["retryAfter"], nested["retry_after"])); ok && d > e.RetryAfter {
			e.RetryAfter = d
		}
		if n, ok := number(firstPresent(obj["limit"], nested["limit"])); ok && n > 0 {
			e.Limit = int(n)
		}
	} else if text := strings.TrimSpace(string(data)); text != "" && !strings.HasPrefix(text, "<") {
		// A plain-text answer: keep its first line, briefly.
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			text = text[:i]
		}
		e.Message = truncate(strings.TrimSpace(text), 200)
	}
	if e.Code == "" && e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	sec := c.secrets(extra)
	e.Code = truncate(scrub(e.Code, sec), 100)
	e.Message = truncate(scrub(e.Message, sec), 500)
	return e
}

// parseRetryAfter reads a Retry-After header: delta-seconds or an HTTP-date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if d, ok := seconds(v); ok {
		return d
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d.Round(time.Second)
		}
	}
	return 0
}

// seconds reads a number of seconds from a JSON number or a numeric string.
func seconds(v any) (time.Duration, bool) {
	f, ok := number(v)
	if !ok || f < 0 || f > 1e9 {
		return 0, false
	}
	return time.Duration(f * float64(time.Second)), true
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, !math.IsNaN(n) && !math.IsInf(n, 0)
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, false
		}
		return f, true
	}
	return 0, false
}

func firstPresent(vs ...any) any {
	for _, v := range vs {
		if v != nil {
			return v
		}
	}
	return nil
}

func firstString(vs ...any) string {
	for _, v := range vs {
		if s, ok := v.(string); ok && strings.TrimSpace(s) != "" {
			return strings.TrimSpace(s)
		}
	}
	return ""
}

// detailMessage reads FastAPI's "detail": a string, or a list of
// {"loc","msg","type"} objects.
func detailMessage(v any) any {
	list, ok := v.([]any)
	if !ok {
		return v
	}
	var msgs []string
	for _, item := range list {
		if m, ok := item.(map[string]any); ok {
			if s, ok := m["msg"].(string); ok && s != "" {
				msgs = append(msgs, s)
			}
		}
	}
	return strings.Join(msgs, "; ")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// resolveCDP turns a CDP endpoint into a websocket URL: ws(s) URLs are used
// as given, http(s) URLs are resolved through GET {url}/json/version, whose
// webSocketDebuggerUrl is returned with the original query (a token) added
// where it lacks it. The API key is not sent to the endpoint.
func (c *apiClient) resolveCDP(ctx context.Context, op, raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", c.fail(op, 0, fmt.Errorf("invalid CDP URL %s", redactURL(raw)), nil)
	}
	extra := urlSecrets(u)
	switch strings.ToLower(u.Scheme) {
	case "ws", "wss":
		return raw, nil
	case "http", "https":
	default:
		return "", c.fail(op, 0, fmt.Errorf("CDP URL %s has scheme %q, want ws, wss, http or https", redactURL(raw), u.Scheme), extra)
	}
	vu := *u
	vu.Path = strings.TrimRight(u.Path, "/") + "/json/version"
	vu.RawPath = ""
	vu.Fragment = ""
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, vu.String(), nil)
	if err != nil {
		return "", c.fail(op, 0, err, extra)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "hybroute")
	var version struct {
		WebSocketDebuggerURL string `json:"webSocketDebuggerUrl"`
	}
	if err := c.send(req, op, &version, extra); err != nil {
		return "", err
	}
	ws, err := url.Parse(version.WebSocketDebuggerURL)
	if err != nil || (ws.Scheme != "ws" && ws.Scheme != "wss") || ws.Host == "" {
		return "", c.fail(op, http.StatusOK, fmt.Errorf("%s/json/version gave no websocket URL", redactURL(raw)), extra)
	}
	if len(u.Query()) > 0 {
		q := ws.Query()
		for k, vs := range u.Query() {
			if !q.Has(k) {
				q[k] = vs
			}
		}
		ws.RawQuery = q.Encode()
	}
	return ws.String(), nil
}

// urlSecrets lists the credentials a URL carries: the userinfo password and
// every query value.
func urlSecrets(u *url.URL) []string {
	var s []string
	if u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			s = append(s, p)
		}
	}
	for _, vs := range u.Query() {
		for _, v := range vs {
			if len(v) >= 4 {
				s = append(s, v)
			}
		}
	}
	return s
}

// redactURL returns s fit for a log line: userinfo dropped, every query value
// (tokens, API keys, signing keys, session ids) replaced by REDACTED, the
// fragment dropped. A string that does not parse as a URL comes back as
// "[unparseable URL]".
func redactURL(s string) string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil {
		return "[unparseable URL]"
	}
	u.User = nil
	u.Fragment = ""
	u.RawFragment = ""
	if u.RawQuery != "" {
		q, _ := url.ParseQuery(u.RawQuery)
		for k := range q {
			q[k] = []string{"REDACTED"}
		}
		if len(q) == 0 {
			u.RawQuery = "REDACTED"
		} else {
			u.RawQuery = q.Encode()
		}
	}
	return u.String()
}

// Browserbase is the client of Browserbase's session API.
type Browserbase struct {
	cfg       providerConfig
	api       *apiClient
	projectID string
}

// NewBrowserbase returns a Browserbase client for the project.
func NewBrowserbase(apiKey, projectID string, opts ...ProviderOption) *Browserbase {
	cfg := newProviderConfig(DefaultBrowserbaseBaseURL, "Browserbase", opts)
	return &Browserbase{
		cfg:       cfg,
		projectID: projectID,
		api:       &apiClient{provider: cfg.name, base: cfg.baseURL, hc: cfg.client, keyHeader: "X-BB-API-Key", key: apiKey},
	}
}

// Name implements Provider.
func (b *Browserbase) Name() string { return b.cfg.name }

// CreateSession implements Provider: POST /v1/sessions.
func (b *Browserbase) CreateSession(ctx context.Context, key string) (*Session, error) {
	var out struct {
		ID         string `json:"id"`
		ConnectURL string `json:"connectUrl"`
	}
	body := b.cfg.createBody(map[string]any{"projectId": b.projectID})
	if err := b.api.call(ctx, "create", http.MethodPost, "/v1/sessions", body, &out); err != nil {
		return nil, err
	}
	return b.api.session(ctx, key, out.ID, out.ConnectURL)
}

// ReleaseSession implements Provider: POST /v1/sessions/{id} with
// {"status":"REQUEST_RELEASE"}.
func (b *Browserbase) ReleaseSession(ctx context.Context, s *Session) error {
	if s == nil || s.ID == "" {
		return nil
	}
	body := map[string]any{"status": "REQUEST_RELEASE"}
	if b.projectID != "" {
		body["projectId"] = b.projectID
	}
	return b.api.call(ctx, "release", http.MethodPost, "/v1/sessions/"+url.PathEscape(s.ID), body, nil)
}

// session builds the Session of a create answer, resolving an http(s) CDP URL.
// A 2xx answer without a session id is a malformed answer.
func (c *apiClient) session(ctx context.Context, key, id, cdp string) (*Session, error) {
	if id == "" {
		return nil, c.fail("create", http.StatusOK, errors.New("the answer has no session id"), nil)
	}
	ws, err := c.resolveCDP(ctx, "create", cdp)
	if err != nil {
		return nil, err
	}
	return &Session{Key: key, ID: id, CDPURL: ws}, nil
}

// BrowserUse is the client of Browser Use's cloud API v2 browser sessions.
type BrowserUse struct {
	cfg providerConfig
	api *apiClient
}

// NewBrowserUse returns a Browser Use client.
func NewBrowserUse(apiKey string, opts ...ProviderOption) *BrowserUse {
	cfg := newProviderConfig(DefaultBrowserUseBaseURL, "Browser Use", opts)
	return &BrowserUse{
		cfg: cfg,
		api: &apiClient{provider: cfg.name, base: cfg.baseURL, hc: cfg.client, keyHeader: "X-Browser-Use-API-Key", key: apiKey},
	}
}

// Name implements Provider.
func (b *BrowserUse) Name() string { return b.cfg.name }

// CreateSession implements Provider: POST /api/v2/browsers, then the cdpUrl
// (usually https) is resolved to its websocket through /json/version.
func (b *BrowserUse) CreateSession(ctx context.Context, key string) (*Session, error) {
	var out struct {
		ID     string `json:"id"`
		CDPURL string `json:"cdpUrl"`
	}
	if err := b.api.call(ctx, "create", http.MethodPost, "/api/v2/browsers", b.cfg.createBody(nil), &out); err != nil {
		return nil, err
	}
	return b.api.session(ctx, key, out.ID, out.CDPURL)
}

// ReleaseSession implements Provider: PATCH /api/v2/browsers/{id} with
// {"action":"stop"}.
func (b *BrowserUse) ReleaseSession(ctx context.Context, s *Session) error {
	if s == nil || s.ID == "" {
		return nil
	}
	return b.api.call(ctx, "release", http.MethodPatch, "/api/v2/browsers/"+url.PathEscape(s.ID), map[string]any{"action": "stop"}, nil)
}

// Steel is the client of Steel's sessions API.
type Steel struct {
	cfg providerConfig
	api *apiClient
}

// NewSteel returns a Steel client.
func NewSteel(apiKey string, opts ...ProviderOption) *Steel {
	cfg := newProviderConfig(DefaultSteelBaseURL, "Steel", opts)
	return &Steel{
		cfg: cfg,
		api: &apiClient{provider: cfg.name, base: cfg.baseURL, hc: cfg.client, keyHeader: "steel-api-key", key: apiKey},
	}
}

// Name implements Provider.
func (s *Steel) Name() string { return s.cfg.name }

// CreateSession implements Provider: POST /v1/sessions. The returned CDPURL
// is the answer's websocketUrl with the "apiKey" query parameter Steel's
// websocket requires, so it is a credential: log it only through redactURL.
func (s *Steel) CreateSession(ctx context.Context, key string) (*Session, error) {
	var out struct {
		ID           string `json:"id"`
		WebsocketURL string `json:"websocketUrl"`
	}
	if err := s.api.call(ctx, "create", http.MethodPost, "/v1/sessions", s.cfg.createBody(nil), &out); err != nil {
		return nil, err
	}
	sess, err := s.api.session(ctx, key, out.ID, out.WebsocketURL)
	if err != nil || sess.CDPURL == "" {
		return sess, err
	}
	if u, perr := url.Parse(sess.CDPURL); perr == nil && s.api.key != "" {
		q := u.Query()
		if !q.Has("apiKey") {
			q.Set("apiKey", s.api.key)
			u.RawQuery = q.Encode()
			sess.CDPURL = u.String()
		}
	}
	return sess, nil
}

// ReleaseSession implements Provider: POST /v1/sessions/{id}/release.
func (s *Steel) ReleaseSession(ctx context.Context, sess *Session) error {
	if sess == nil || sess.ID == "" {
		return nil
	}
	return s.api.call(ctx, "release", http.MethodPost, "/v1/sessions/"+url.PathEscape(sess.ID)+"/release", nil, nil)
}

// CDPEndpointProvider is a browser that is already running behind a CDP
// endpoint (browserless, a self-hosted grid): nothing to create or release.
type CDPEndpointProvider struct {
	cfg providerConfig
	api *apiClient
	raw string
}

// CDPEndpoint returns a provider for a plain CDP endpoint: a ws(s) URL used
// as given, or an http(s) URL (possibly with ?token=) resolved through
// /json/version at each CreateSession, keeping the token. Only the
// WithProviderHTTPClient and WithProviderName options apply.
func CDPEndpoint(rawURL string, opts ...ProviderOption) *CDPEndpointProvider {
	cfg := newProviderConfig("", "CDP endpoint", opts)
	return &CDPEndpointProvider{cfg: cfg, raw: rawURL, api: &apiClient{provider: cfg.name, hc: cfg.client}}
}

// Name implements Provider.
func (p *CDPEndpointProvider) Name() string { return p.cfg.name }

// CreateSession implements Provider. The session has no ID: there is nothing
// to release.
func (p *CDPEndpointProvider) CreateSession(ctx context.Context, key string) (*Session, error) {
	if p.raw == "" {
		return nil, p.api.fail("create", 0, errors.New("no CDP URL configured"), nil)
	}
	ws, err := p.api.resolveCDP(ctx, "create", p.raw)
	if err != nil {
		return nil, err
	}
	return &Session{Key: key, CDPURL: ws}, nil
}

// ReleaseSession implements Provider; a CDP endpoint has nothing to release.
func (p *CDPEndpointProvider) ReleaseSession(context.Context, *Session) error { return nil }

// restOnly is a browser service that exposes only a REST API and no CDP.
type restOnly struct {
	name string
	n    atomic.Int64
}

// RESTOnly returns an example provider for a REST-only browser service: its
// sessions come back with an ID and an empty CDPURL, which the router reports
// as ErrNoCDPEndpoint ("Cloud browser provider <Name> returned no CDP
// endpoint, ...") instead of pretending the call ran.
func RESTOnly(name string) Provider { return &restOnly{name: name} }

func (r *restOnly) Name() string { return r.name }

func (r *restOnly) CreateSession(_ context.Context, key string) (*Session, error) {
	return &Session{Key: key, ID: fmt.Sprintf("rest-%d", r.n.Add(1))}, nil
}

func (r *restOnly) ReleaseSession(context.Context, *Session) error { return nil }

var (
	_ Provider = (*Browserbase)(nil)
	_ Provider = (*BrowserUse)(nil)
	_ Provider = (*Steel)(nil)
	_ Provider = (*CDPEndpointProvider)(nil)
	_ Provider = (*restOnly)(nil)
)
