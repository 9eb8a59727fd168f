package cloudtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// What each kind hands out with WithRealShapes follows the providers'
// documentation (stored copies of their pages, read when this was written):
//
//   - Browserbase, "Create a Session" (docs.browserbase.com): the answer's
//     connectUrl is "WebSocket URL to connect to the Session" and signingKey
//     the "Signing key to use when connecting"; clients in the wild receive
//     wss://connect.browserbase.com?signingKey=... (TLS, no port, no path,
//     the per-session key in the query). Its older Connect API page shows
//     wss://connect.browserbase.com?apiKey=... for on-the-fly sessions.
//   - Steel (docs.steel.dev, the Puppeteer guide and cookbook): puppeteer
//     connects to `${session.websocketUrl}&apiKey=${STEEL_API_KEY}`, so
//     websocketUrl already carries a query (the session id); the docs'
//     quick reference gives wss://connect.steel.dev?apiKey=<key>&sessionId=<id>.
//   - Browser Use (docs.cloud.browser-use.com, "Browser"): a browser session
//     has a cdpUrl for direct CDP access; Browser Use's own tooling resolves
//     it as an HTTP discovery endpoint (https://cdpN.browser-use.com, GET
//     /json/version, then webSocketDebuggerUrl), not as a websocket.
//   - browserless (docs.browserless.io, "Connection URL Patterns"): every
//     connection is wss://<region host>/<path>?token=TOKEN.

// Kind names the API a fake server speaks.
type Kind string

// The kinds of fake servers.
const (
	// Browserbase: POST /v1/sessions (X-BB-API-Key, {"projectId"}) answers
	// 201 with "id" and "connectUrl"; POST /v1/sessions/{id} with
	// {"status":"REQUEST_RELEASE"} releases.
	Browserbase Kind = "browserbase"
	// BrowserUse: POST /api/v3/browsers (X-Browser-Use-API-Key) answers 201
	// with "id" and an http "cdpUrl" whose /json/version the fake serves;
	// PATCH /api/v3/browsers/{id} with {"action":"stop"} releases.
	BrowserUse Kind = "browser-use"
	// BrowserUseV2 is BrowserUse on /api/v2/browsers.
	BrowserUseV2 Kind = "browser-use-v2"
	// Nous is the managed gateway: BrowserUse's API at the origin's
	// /browsers, with the user token in X-Browser-Use-API-Key. Every
	// create must carry X-Idempotency-Key; a key seen before answers the
	// session it made (the gateway deduplicates), and every created
	// session's answer has an x-external-call-id header.
	Nous Kind = "nous"
	// Steel: POST /v1/sessions (steel-api-key) answers with "id" and
	// "websocketUrl"; POST /v1/sessions/{id}/release releases.
	Steel Kind = "steel"
	// CDP: a plain CDP endpoint that serves GET /json/version?token=KEY.
	CDP Kind = "cdp"
)

// Reply scripts one answer of a fake server. The zero Reply is the normal
// success answer.
type Reply struct {
	// Status is the HTTP status; 0 means the endpoint's success status.
	Status int
	// Header is added to the answer (e.g. Retry-After).
	Header http.Header
	// Body is sent as is when not empty; otherwise the endpoint's normal
	// answer is sent (a success body, or for an error status the kind's
	// documented error shape with the status's text).
	Body string
	// Hang blocks the answer until the request's context is done.
	Hang bool
	// NoCDP answers success without the CDP URL field.
	NoCDP bool
}

// RateLimited is a 429 in the server kind's documented error shape (each
// provider documents its limits as 429 "Too Many Requests": Browserbase's
// concurrency guide, Browser Use's v4 OpenAPI, Browser.cash's errors page,
// Steel's, browserless's HTTP error codes), and, when retryAfter is not
// empty, HTTP's Retry-After header with that value (seconds or an
// HTTP-date). No provider documents that header: a test that gives one
// tests the client's reading of HTTP (a proxy or a gateway in front of the
// provider may send it), not a provider's answer.
func RateLimited(retryAfter string) Reply {
	r := Reply{Status: http.StatusTooManyRequests}
	if retryAfter != "" {
		r.Header = http.Header{"Retry-After": {retryAfter}}
	}
	return r
}

// Status is an answer with the status and body.
func Status(code int, body string) Reply { return Reply{Status: code, Body: body} }

// Hang is an answer that never comes: the handler waits until the client
// gives up.
func Hang() Reply { return Reply{Hang: true} }

// Malformed is a success status with a truncated JSON body.
func Malformed() Reply { return Reply{Body: `{"id": "sess-malformed", "connectUrl": "ws://`} }

// NoCDP is a success answer whose session has no CDP URL.
func NoCDP() Reply { return Reply{NoCDP: true} }

// Request is one request a fake server received.
type Request struct {
	Method string
	Host   string // the Host header
	Path   string
	Query  string
	Header http.Header
	Body   []byte
}

// Server is a fake cloud browser provider on 127.0.0.1.
type Server struct {
	Kind Kind
	// APIKey is the key the server accepts.
	APIKey string
	// ProjectID is the Browserbase project the server expects.
	ProjectID string
	// URL is the API base URL (for Kind CDP: the endpoint, without token).
	URL string
	// WSURL is the websocket of the browser behind the server: without
	// WithRealShapes, the URL the server hands out (plus the kind's query).
	WSURL string
	// Front is the TLS websocket front in front of WSURL, with
	// WithRealShapes; nil otherwise.
	Front *Front

	srv        *httptest.Server
	closing    chan struct{}
	realShapes bool

	mu       sync.Mutex
	createQ  replyQueue
	releaseQ replyQueue
	versionQ replyQueue
	requests requestLog
	created  []time.Time // when each create call arrived
	live     map[string]bool
	sigKeys  map[string]string // Browserbase signing key -> session id
	idem     map[string]string // Nous: idempotency key -> the session it made
	tokens   map[string]string // a session API's per-session websocket token -> session id
	// scopes are the Browser Use API versions the key is granted (nil:
	// all); starting is how many reads a Browser.cash session answers
	// "starting" before it is "active" (0: created active); altShape
	// makes browserless answer its close-session example's shape.
	scopes   []string
	starting int
	altShape bool
	polls    map[string]int              // Browser.cash: the reads of each session
	pending  map[string]int              // Browser.cash: the reads a session answers "starting" to
	cdps     map[string]string           // a session API's sessions' CDP URLs, kept after their release
	recorded map[string]bool             // every session made: whether it is recorded (replay.go)
	replays  map[string][]map[string]any // Kernel: each session's replays

	creates, releases, versions atomic.Int64
	nextID                      atomic.Int64
	made, ended                 atomic.Int64
	releaseDelay                atomic.Int64 // time.Duration
	releasing, maxReleasing     atomic.Int64
}

// ServerOption configures NewServer.
type ServerOption func(*Server)

// WithAPIKey sets the key the server accepts.
func WithAPIKey(key string) ServerOption { return func(s *Server) { s.APIKey = key } }

// WithProjectID sets the Browserbase project the server expects.
func WithProjectID(id string) ServerOption { return func(s *Server) { s.ProjectID = id } }

// WithKeyScopes grants the key the Browser Use API versions named ("v2",
// "v3", "v4") only: the others answer 403 {"detail": "API key is missing
// required scope: ..."}, as the service does for a key scoped per version
// (browser-use's browser_use/browser/cloud/cloud.py reads that prefix).
func WithKeyScopes(versions ...string) ServerOption {
	return func(s *Server) { s.scopes = append([]string{}, versions...) }
}

// WithStartingSessions makes a Browser.cash create answer status
// "starting" with cdpUrl null, and its GET /v1/browser/session answer
// "starting" for reads-1 reads more before "active" with the cdpUrl
// (BrowserCash/docs docs/sessions/lifecycle.mdx, "Waiting for active").
// reads below 1 is 1.
func WithStartingSessions(reads int) ServerOption {
	return func(s *Server) { s.starting = max(reads, 1) }
}

// WithCloseSessionShape makes a browserless create answer the shape of
// its docs' /examples/close-session: {"id", "browserQL",
// "browserWSEndpoint", "stop"}, with no "connect".
func WithCloseSessionShape() ServerOption { return func(s *Server) { s.altShape = true } }

// Polls counts the reads of Browser.cash sessions (GET
// /v1/browser/session).
func (s *Server) Polls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, p := range s.polls {
		n += p
	}
	return n
}

// WithRealShapes makes the server hand out its kind's real-world CDP URL
// shape, served by a TLS Front (s.Front) in front of the browser:
//
//   - Browserbase: connectUrl wss://connect.browserbase.test?signingKey=K,
//     K a per-session key with "+", "/" and "=" in it (so its escaped
//     spellings differ from the raw one); the front checks it.
//   - Steel: websocketUrl wss://connect.steel.test?sessionId=ID; the front
//     wants apiKey=APIKey as well, which the Steel client appends.
//   - Browser Use: cdpUrl https://ID.cdp.browser-use.test, whose
//     /json/version answers wss://ID.cdp.browser-use.test/devtools/browser/..
//     (scripted by OnVersion); the front checks that ID is live.
//   - CDP: EndpointURL is wss://cdp.browserless.test?token=APIKey.
//
// Use HTTPClient as the provider's HTTP client: it trusts the front and
// dials those names on loopback.
func WithRealShapes() ServerOption { return func(s *Server) { s.realShapes = true } }

// NewServer starts a fake provider of the kind that hands out wsURL (the
// websocket of a real Chromium, see LaunchChromium) as its sessions' browser.
// It is closed in t.Cleanup.
func NewServer(t testing.TB, kind Kind, wsURL string, opts ...ServerOption) *Server {
	t.Helper()
	s := &Server{
		Kind:      kind,
		APIKey:    "sk-test-" + string(kind) + "-9f8e7d6c5b4a",
		ProjectID: "proj-test-1",
		WSURL:     wsURL,
		closing:   make(chan struct{}),
		live:      map[string]bool{},
		sigKeys:   map[string]string{},
		idem:      map[string]string{},
		tokens:    map[string]string{},
		polls:     map[string]int{},
		pending:   map[string]int{},
		cdps:      map[string]string{},
		recorded:  map[string]bool{},
		replays:   map[string][]map[string]any{},
	}
	for _, o := range opts {
		o(s)
	}
	switch kind {
	case Browserbase, BrowserUse, BrowserUseV2, Nous, Steel, CDP:
	default:
		if _, ok := apiShapes[kind]; ok {
			break
		}
		t.Fatalf("cloudtest: unknown server kind %q", kind)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.Close)
	if s.realShapes {
		s.Front = NewFront(t, wsURL, WithFrontAuth(s.authorizeWS), WithFrontVersion(s.serveFrontVersion), withFrontAnyPath())
	}
	return s
}

// HTTPClient is the client to give the provider (provider.WithHTTPClient):
// with WithRealShapes it trusts the Front's certificate and dials the
// provider names at the front; either way it dials loopback only.
func (s *Server) HTTPClient() *http.Client {
	if s.Front != nil {
		return s.Front.Client()
	}
	return loopbackClient(nil, "", nil)
}

// Close stops the server, releasing any hanging handler first.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.closing:
		s.mu.Unlock()
		return
	default:
		close(s.closing)
	}
	s.mu.Unlock()
	s.srv.Close()
}

// EndpointURL is the URL to give provider.CDPEndpoint for Kind CDP: the
// server's http URL with ?token=APIKey, or with WithRealShapes
// wss://cdp.browserless.test?token=APIKey.
func (s *Server) EndpointURL() string {
	if s.Front != nil {
		return "wss://" + BrowserlessHost + "?token=" + url.QueryEscape(s.APIKey)
	}
	return s.URL + "/?token=" + s.APIKey
}

// OnCreate queues scripted answers for the next create calls; when the
// queue is empty the server answers normally.
func (s *Server) OnCreate(r ...Reply) { s.createQ.push(r...) }

// OnRelease queues scripted answers for the next release calls.
func (s *Server) OnRelease(r ...Reply) { s.releaseQ.push(r...) }

// OnVersion queues scripted answers for the next GET .../json/version calls
// (Kind BrowserUse and CDP).
func (s *Server) OnVersion(r ...Reply) { s.versionQ.push(r...) }

// AlwaysOnCreate makes r the answer of every create call with no queued
// answer (nil: back to the normal answer): an outage that lasts.
func (s *Server) AlwaysOnCreate(r *Reply) { s.createQ.setDefault(r) }

// SetReleaseDelay makes every release call take d before it answers.
func (s *Server) SetReleaseDelay(d time.Duration) { s.releaseDelay.Store(int64(d)) }

// MaxConcurrentReleases is the most release calls the server has had in
// progress at once.
func (s *Server) MaxConcurrentReleases() int64 { return s.maxReleasing.Load() }

// Made counts the sessions the server created (and handed out).
func (s *Server) Made() int64 { return s.made.Load() }

// Ended counts the sessions the server ended on a release.
func (s *Server) Ended() int64 { return s.ended.Load() }

// LiveCount counts the sessions created and not yet released.
func (s *Server) LiveCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, l := range s.live {
		if l {
			n++
		}
	}
	return n
}

// Creates counts the create calls received, failed or not.
func (s *Server) Creates() int64 { return s.creates.Load() }

// CreateTimes returns when each create call arrived, in order, failed or
// not: on the server's side, so callers in other processes are timed on
// one clock.
func (s *Server) CreateTimes() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.created...)
}

// Releases counts the release calls received.
func (s *Server) Releases() int64 { return s.releases.Load() }

// Versions counts the /json/version calls received.
func (s *Server) Versions() int64 { return s.versions.Load() }

// Requests returns a copy of every request received, in order.
func (s *Server) Requests() []Request { return s.requests.all() }

// Live reports whether the session id was created and not yet released.
func (s *Server) Live(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live[id]
}

// replyQueue is a queue of scripted answers, safe for concurrent use.
type replyQueue struct {
	mu  sync.Mutex
	q   []Reply
	def *Reply // answered when q is empty
}

// setDefault makes r the answer of every call with nothing queued (nil: the
// normal answer).
func (q *replyQueue) setDefault(r *Reply) {
	q.mu.Lock()
	q.def = r
	q.mu.Unlock()
}

func (q *replyQueue) push(r ...Reply) {
	q.mu.Lock()
	q.q = append(q.q, r...)
	q.mu.Unlock()
}

func (q *replyQueue) pop() (Reply, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.q) == 0 {
		if q.def != nil {
			return *q.def, true
		}
		return Reply{}, false
	}
	r := q.q[0]
	q.q = q.q[1:]
	return r, true
}

// requestLog records the requests a fake received, safe for concurrent use.
type requestLog struct {
	mu   sync.Mutex
	reqs []Request
}

func (l *requestLog) add(r *http.Request, body []byte) {
	l.mu.Lock()
	l.reqs = append(l.reqs, Request{Method: r.Method, Host: r.Host, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
	l.mu.Unlock()
}

func (l *requestLog) all() []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Request(nil), l.reqs...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	s.requests.add(r, body)
	if s.serveReplay(w, r) {
		return
	}
	switch s.Kind {
	case Browserbase:
		s.serveBrowserbase(w, r, body)
	case BrowserUse, BrowserUseV2, Nous:
		s.serveBrowserUse(w, r, body)
	case Steel:
		s.serveSteel(w, r, body)
	case CDP:
		s.serveCDP(w, r)
	default:
		s.serveSessionAPI(w, r, body)
	}
}

type endpoint int

const (
	epCreate endpoint = iota
	epRelease
	epVersion
)

// scripted counts a call of the endpoint, checks the API key in
// authHeader (none when empty), then pops and applies the next scripted
// answer. It returns the Reply to shape a success answer with, and whether
// the answer has already been written.
func (s *Server) scripted(w http.ResponseWriter, r *http.Request, ep endpoint, authHeader string) (Reply, bool) {
	switch ep {
	case epCreate:
		s.creates.Add(1)
		s.mu.Lock()
		s.created = append(s.created, time.Now())
		s.mu.Unlock()
	case epRelease:
		s.releases.Add(1)
		n := s.releasing.Add(1)
		defer s.releasing.Add(-1)
		for m := s.maxReleasing.Load(); n > m && !s.maxReleasing.CompareAndSwap(m, n); m = s.maxReleasing.Load() {
		}
		if d := time.Duration(s.releaseDelay.Load()); d > 0 {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
			case <-s.closing:
			}
		}
	case epVersion:
		s.versions.Add(1)
	}
	if authHeader != "" && !s.authorized(w, r, authHeader) {
		return Reply{}, true
	}
	return s.applyScripted(w, r, ep)
}

// applyScripted pops the next scripted answer of ep and writes it, unless
// it is a success to shape: it returns it, and whether the answer has
// already been written.
func (s *Server) applyScripted(w http.ResponseWriter, r *http.Request, ep endpoint) (Reply, bool) {
	q := map[endpoint]*replyQueue{epCreate: &s.createQ, epRelease: &s.releaseQ, epVersion: &s.versionQ}[ep]
	rep, ok := q.pop()
	if !ok {
		return Reply{}, false
	}
	for k, vs := range rep.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if rep.Hang {
		select {
		case <-r.Context().Done():
		case <-s.closing:
		}
		return rep, true
	}
	if rep.Status != 0 && (rep.Status < 200 || rep.Status > 299) {
		b := rep.Body
		if b == "" {
			b = s.errorBody(rep.Status, http.StatusText(rep.Status))
		}
		writeRaw(w, rep.Status, b)
		return rep, true
	}
	if rep.Body != "" {
		st := rep.Status
		if st == 0 {
			st = s.successStatus(ep)
		}
		writeRaw(w, st, rep.Body)
		return rep, true
	}
	return rep, false
}

func (s *Server) successStatus(ep endpoint) int {
	if ep == epCreate && (s.Kind == Browserbase || s.Kind == BrowserUse || s.Kind == BrowserUseV2 || s.Kind == Nous) {
		return http.StatusCreated
	}
	if shape, ok := apiShapes[s.Kind]; ok && ep == epCreate {
		return shape.createStatus
	}
	return http.StatusOK
}

// errorBody is an error answer in the kind's own shape.
func (s *Server) errorBody(status int, msg string) string {
	var v any
	switch s.Kind {
	case Browserbase:
		// Browserbase's API answers errors in the Fastify shape.
		v = map[string]any{"statusCode": status, "error": http.StatusText(status), "message": msg}
	case BrowserUse, BrowserUseV2:
		// FastAPI.
		v = map[string]any{"detail": msg}
	case Nous:
		// The gateway's own: {"error": {"code", "message"}}.
		v = map[string]any{"error": map[string]any{"code": strings.ToUpper(strings.ReplaceAll(http.StatusText(status), " ", "_")), "message": msg}}
	default:
		if shape, ok := apiShapes[s.Kind]; ok {
			return shape.errorBody(status, msg)
		}
		v = map[string]any{"error": http.StatusText(status), "message": msg}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func writeRaw(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	writeRaw(w, status, string(b))
}

func (s *Server) authorized(w http.ResponseWriter, r *http.Request, header string) bool {
	if r.Header.Get(header) == s.APIKey {
		return true
	}
	msg := "Invalid API key"
	if r.Header.Get(header) == "" {
		msg = "Missing " + header + " header"
	}
	writeRaw(w, http.StatusUnauthorized, s.errorBody(http.StatusUnauthorized, msg))
	return false
}

// end marks session id released, or answers 404 when it is not live.
func (s *Server) end(w http.ResponseWriter, id string) bool {
	if !s.setLive(id, false) {
		writeRaw(w, http.StatusNotFound, s.errorBody(http.StatusNotFound, "Session not found"))
		return false
	}
	return true
}

func (s *Server) newID() string {
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", s.nextID.Add(1))
}

func (s *Server) setLive(id string, live bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	was := s.live[id]
	if live {
		s.live[id] = true
		s.made.Add(1)
	} else if was {
		delete(s.live, id)
		s.ended.Add(1)
	}
	return was
}

func withQuery(u, q string) string {
	if strings.Contains(u, "?") {
		return u + "&" + q
	}
	return u + "?" + q
}

func (s *Server) serveBrowserbase(w http.ResponseWriter, r *http.Request, body []byte) {
	now := time.Now().UTC().Format(time.RFC3339)
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/sessions":
		rep, done := s.scripted(w, r, epCreate, "X-BB-API-Key")
		if done {
			return
		}
		var in struct {
			ProjectID       *string `json:"projectId"`
			BrowserSettings struct {
				// A context is {id, persist}: an id of a context of the
				// project, persist a boolean (Create a Session).
				Context *struct {
					ID      string `json:"id"`
					Persist *bool  `json:"persist"`
				} `json:"context"`
			} `json:"browserSettings"`
		}
		// projectId is optional (since 2026-02: the key's project); one
		// given must be the account's, and not empty.
		if json.Unmarshal(body, &in) != nil {
			writeRaw(w, http.StatusBadRequest, s.errorBody(http.StatusBadRequest, "body must be object"))
			return
		}
		if in.ProjectID != nil && *in.ProjectID == "" {
			writeRaw(w, http.StatusBadRequest, s.errorBody(http.StatusBadRequest, "body/projectId must NOT have fewer than 1 characters"))
			return
		}
		if in.ProjectID != nil && *in.ProjectID != s.ProjectID {
			writeRaw(w, http.StatusBadRequest, s.errorBody(http.StatusBadRequest, "body/projectId must be a project of this account"))
			return
		}
		project := s.ProjectID
		if c := in.BrowserSettings.Context; c != nil && c.ID == "" {
			writeRaw(w, http.StatusBadRequest, s.errorBody(http.StatusBadRequest, "browserSettings.context must have required property 'id'"))
			return
		}
		id := s.newID()
		s.setLive(id, true)
		s.noteRecording(id, body)
		out := map[string]any{
			"id": id, "createdAt": now, "updatedAt": now, "projectId": project,
			"startedAt": now, "expiresAt": s.expiresAt(), "status": "RUNNING", "proxyBytes": 0,
			"keepAlive": false, "region": "us-west-2",
			"seleniumRemoteUrl": "http://connect.invalid/webdriver",
			"signingKey":        "sig-" + id,
		}
		if s.Front != nil {
			key := signingKey(id)
			s.mu.Lock()
			s.sigKeys[key] = id
			s.mu.Unlock()
			out["signingKey"] = key
		}
		if !rep.NoCDP {
			// Browserbase's connectUrl carries a signingKey query.
			out["connectUrl"] = withQuery(s.WSURL, "signingKey=sig-"+id)
			if s.Front != nil {
				out["connectUrl"] = "wss://" + BrowserbaseConnectHost + "?signingKey=" + url.QueryEscape(out["signingKey"].(string))
			}
		}
		writeJSON(w, http.StatusCreated, out)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/sessions/") && strings.HasSuffix(r.URL.Path, "/debug"):
		// Session live URLs (browserbase/sdk-node
		// src/resources/sessions/debug.ts): debuggerFullscreenUrl,
		// debuggerUrl, wsUrl and the pages'.
		if !s.authorized(w, r, "X-BB-API-Key") {
			return
		}
		id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/v1/sessions/"), "/debug")
		if !s.Live(id) {
			writeRaw(w, http.StatusNotFound, s.errorBody(http.StatusNotFound, "Session not found"))
			return
		}
		live := BrowserbaseLiveURL(id)
		writeJSON(w, http.StatusOK, map[string]any{
			"debuggerFullscreenUrl": live, "debuggerUrl": live + "&navbar=false", "wsUrl": "wss://connect.browserbase.invalid/debug/" + id,
			"pages": []any{map[string]any{"id": "page-1", "url": "about:blank", "title": "", "faviconUrl": "",
				"debuggerFullscreenUrl": live, "debuggerUrl": live}},
		})
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/sessions/"):
		if _, done := s.scripted(w, r, epRelease, "X-BB-API-Key"); done {
			return
		}
		id := strings.TrimPrefix(r.URL.Path, "/v1/sessions/")
		var in struct {
			Status    string `json:"status"`
			ProjectID string `json:"projectId"`
		}
		if json.Unmarshal(body, &in) != nil || in.Status != "REQUEST_RELEASE" {
			writeRaw(w, http.StatusBadRequest, s.errorBody(http.StatusBadRequest, "body/status must be equal to one of the allowed values"))
			return
		}
		if !s.end(w, id) {
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "status": "COMPLETED", "projectId": s.ProjectID, "updatedAt": now})
	default:
		writeRaw(w, http.StatusNotFound, s.errorBody(http.StatusNotFound, "Route not found"))
	}
}

// FakeSessionLife is how long after its create a fake session says it
// ends (Browserbase's expiresAt, Browser Use's timeoutAt): fixed, so
// tests can check the expiry a client reads.
const FakeSessionLife = 15 * time.Minute

// expiresAt is the expiry the fakes answer for a session made now, to
// the second.
func (s *Server) expiresAt() string {
	return time.Now().UTC().Add(FakeSessionLife).Truncate(time.Second).Format(time.RFC3339)
}

// BrowserbaseLiveURL is the live view the fake answers for session id.
func BrowserbaseLiveURL(id string) string {
	return "https://www.browserbase.invalid/devtools-fullscreen/inspector.html?wss=connect.browserbase.invalid/debug/" + id
}

// browserUseVersion reads the API version of a Browser Use path: the
// service mounts the same browser routes under /api/v2, /api/v3 and
// /api/v4 (browser-use/sdk docs/cloud/openapi/v{2,3,4}.json); the gateway
// has them at its origin's root (version ""). rest is the path after it.
func (s *Server) browserUseVersion(path string) (version, rest string, ok bool) {
	if s.Kind == Nous {
		return "", path, true
	}
	for _, v := range []string{"v2", "v3", "v4"} {
		if rest, ok := strings.CutPrefix(path, "/api/"+v); ok {
			return v, rest, true
		}
	}
	return "", path, false
}

// granted reports a Browser Use version the key may use (WithKeyScopes),
// answering the service's 403 when it may not.
func (s *Server) granted(w http.ResponseWriter, version string) bool {
	if version == "" || s.scopes == nil || slices.Contains(s.scopes, version) {
		return true
	}
	writeJSON(w, http.StatusForbidden, map[string]any{"detail": "API key is missing required scope: browsers:" + version})
	return false
}

func (s *Server) serveBrowserUse(w http.ResponseWriter, r *http.Request, body []byte) {
	now := time.Now().UTC()
	version, path, mounted := s.browserUseVersion(r.URL.Path)
	if !mounted {
		path = r.URL.Path
	}
	switch {
	case mounted && r.Method == http.MethodPost && path == "/browsers":
		idem := r.Header.Get("X-Idempotency-Key")
		if s.Kind == Nous && idem == "" {
			s.creates.Add(1)
			writeRaw(w, http.StatusBadRequest, s.errorBody(http.StatusBadRequest, "X-Idempotency-Key header is required"))
			return
		}
		if r.Header.Get("X-Browser-Use-API-Key") == s.APIKey && !s.granted(w, version) {
			s.creates.Add(1)
			return
		}
		rep, done := s.scripted(w, r, epCreate, "X-Browser-Use-API-Key")
		if done {
			return
		}
		var in map[string]any
		if len(body) > 0 && json.Unmarshal(body, &in) != nil {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": []any{map[string]any{"loc": []string{"body"}, "msg": "JSON decode error", "type": "json_invalid"}}})
			return
		}
		if v, ok := in["profileId"]; ok && v != nil {
			if _, ok := v.(string); !ok {
				writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": []any{map[string]any{"loc": []string{"body", "profileId"}, "msg": "Input should be a valid UUID", "type": "uuid_type"}}})
				return
			}
		}
		if t, ok := in["timeout"].(float64); ok && (t < 1 || t > 240) {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": []any{map[string]any{"loc": []string{"body", "timeout"}, "msg": "Input should be less than or equal to 240", "type": "less_than_equal"}}})
			return
		}
		// The country codes are an enum of lower-case codes ("us", "de",
		// ...): "US" is refused (openapi v3 ProxyCountryCode).
		if cc, ok := in["proxyCountryCode"].(string); ok && cc != strings.ToLower(cc) {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": []any{map[string]any{"loc": []string{"body", "proxyCountryCode"}, "msg": "Input should be 'us', 'uk', 'fr', 'it', 'jp', 'au', 'de', 'fi', 'ca' or 'in'", "type": "enum"}}})
			return
		}
		s.mu.Lock()
		id, replay := s.idem[idem]
		s.mu.Unlock()
		if !replay || idem == "" {
			id = s.newID()
			s.setLive(id, true)
			s.noteRecording(id, body)
			if idem != "" {
				s.mu.Lock()
				s.idem[idem] = id
				s.mu.Unlock()
			}
		}
		out := map[string]any{
			"id": id, "status": "active",
			"timeoutAt": s.expiresAt(), "startedAt": now.Format(time.RFC3339),
			"liveUrl": s.URL + "/live/" + id, "cdpUrl": nil,
			"finishedAt": nil, "proxyUsedMb": "0", "proxyCost": "0", "browserCost": "0",
		}
		if !rep.NoCDP {
			// As the real service does, an https-style endpoint that must
			// be resolved through /json/version.
			out["cdpUrl"] = s.URL + "/cdp/" + id
			if s.Front != nil {
				out["cdpUrl"] = "https://" + id + "." + BrowserUseCDPDomain
			}
		}
		if s.Kind == Nous {
			w.Header().Set("x-external-call-id", "call-"+id)
		}
		writeJSON(w, http.StatusCreated, out)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/cdp/") && strings.HasSuffix(r.URL.Path, "/json/version"):
		s.serveVersion(w, r)
	case mounted && r.Method == http.MethodPatch && strings.HasPrefix(path, "/browsers/"):
		if r.Header.Get("X-Browser-Use-API-Key") == s.APIKey && !s.granted(w, version) {
			s.releases.Add(1)
			return
		}
		if _, done := s.scripted(w, r, epRelease, "X-Browser-Use-API-Key"); done {
			return
		}
		id := strings.TrimPrefix(path, "/browsers/")
		var in struct {
			Action string `json:"action"`
		}
		if json.Unmarshal(body, &in) != nil || in.Action != "stop" {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": []any{map[string]any{"loc": []string{"body", "action"}, "msg": "Input should be 'stop'", "type": "enum"}}})
			return
		}
		if !s.end(w, id) {
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "status": "stopped", "finishedAt": now.Format(time.RFC3339)})
	default:
		writeRaw(w, http.StatusNotFound, s.errorBody(http.StatusNotFound, "Not Found"))
	}
}

func (s *Server) serveSteel(w http.ResponseWriter, r *http.Request, body []byte) {
	now := time.Now().UTC().Format(time.RFC3339)
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/sessions":
		rep, done := s.scripted(w, r, epCreate, "steel-api-key")
		if done {
			return
		}
		// The profile fields (sessions.create): profileId a string,
		// persistProfile a boolean; a persisted session without an id
		// makes a new profile, named in the answer.
		var in struct {
			ProfileID      *string `json:"profileId"`
			PersistProfile *bool   `json:"persistProfile"`
		}
		if len(body) > 0 && json.Unmarshal(body, &in) != nil {
			writeRaw(w, http.StatusBadRequest, s.errorBody(http.StatusBadRequest, "profileId must be a string and persistProfile a boolean"))
			return
		}
		id := s.newID()
		s.setLive(id, true)
		s.noteRecording(id, body)
		out := map[string]any{
			"id": id, "createdAt": now, "status": "live", "duration": 0, "eventCount": 0,
			"timeout": 300000, "creditsUsed": 0,
			"sessionViewerUrl": s.URL + "/sessions/" + id, "debugUrl": s.URL + "/debug/" + id,
		}
		switch {
		case in.ProfileID != nil:
			out["profileId"] = *in.ProfileID
		case in.PersistProfile != nil && *in.PersistProfile:
			out["profileId"] = "profile-" + id
		}
		if !rep.NoCDP {
			out["websocketUrl"] = withQuery(s.WSURL, "sessionId="+id)
			if s.Front != nil {
				out["websocketUrl"] = "wss://" + SteelConnectHost + "?sessionId=" + id
			}
		}
		writeJSON(w, http.StatusOK, out)
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/sessions/") && strings.HasSuffix(r.URL.Path, "/release"):
		if _, done := s.scripted(w, r, epRelease, "steel-api-key"); done {
			return
		}
		id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/v1/sessions/"), "/release")
		if !s.end(w, id) {
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "status": "released", "success": true})
	default:
		writeRaw(w, http.StatusNotFound, s.errorBody(http.StatusNotFound, "Not Found"))
	}
}

func (s *Server) serveCDP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/json/version") {
		if r.URL.Query().Get("token") != s.APIKey {
			s.versions.Add(1)
			// browserless answers a bad token with a plain-text 401.
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, "Bad or missing authentication.")
			return
		}
		s.serveVersion(w, r)
		return
	}
	writeRaw(w, http.StatusNotFound, s.errorBody(http.StatusNotFound, "Not Found"))
}

// serveVersion answers /json/version as Chromium does, pointing at the real
// browser's websocket.
func (s *Server) serveVersion(w http.ResponseWriter, r *http.Request) {
	s.writeVersion(w, r, s.WSURL)
}

// writeVersion answers /json/version with the websocket URL ws, unless a
// scripted answer comes first.
func (s *Server) writeVersion(w http.ResponseWriter, r *http.Request, ws string) {
	if _, done := s.scripted(w, r, epVersion, ""); done {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"Browser":              "HeadlessChrome/156.0.0.0",
		"Protocol-Version":     "1.3",
		"User-Agent":           "Mozilla/5.0 HeadlessChrome",
		"webSocketDebuggerUrl": ws,
	})
}

// signingKey is the per-session Browserbase key of WithRealShapes. It has
// "+", "/" and "=" in it, so its raw, query-escaped and path-escaped
// spellings all differ: a redaction that knows only one of them leaks.
func signingKey(id string) string {
	return "bbsk+" + strings.ReplaceAll(id, "-", "") + "/sig=="
}

// serveFrontVersion is the Front's /json/version for Browser Use: the host
// <id>.cdp.browser-use.test of a live session answers its own wss URL, as
// a Chromium behind a TLS proxy does (Chromium builds the URL from the
// Host header).
func (s *Server) serveFrontVersion(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.browserUseID(r.Host); !s.isBrowserUse() || !ok {
		s.versions.Add(1)
		writeRaw(w, http.StatusNotFound, s.errorBody(http.StatusNotFound, "Not Found"))
		return
	}
	s.writeVersion(w, r, "wss://"+r.Host+s.Front.BrowserPath)
}

// browserUseID reads the session id of a live session from a Host header
// <id>.cdp.browser-use.test.
func (s *Server) browserUseID(host string) (string, bool) {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	id, ok := strings.CutSuffix(strings.ToLower(host), "."+BrowserUseCDPDomain)
	if !ok || id == "" || strings.Contains(id, ".") || !s.Live(id) {
		return "", false
	}
	return id, true
}

// isBrowserUse reports a kind that speaks Browser Use's API.
func (s *Server) isBrowserUse() bool {
	return s.Kind == BrowserUse || s.Kind == BrowserUseV2 || s.Kind == Nous
}

// authorizeWS is the Front's key check for the kind's URL shape.
func (s *Server) authorizeWS(r *http.Request) error {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	q := r.URL.Query()
	if shape, ok := apiShapes[s.Kind]; ok {
		return s.authorizeSessionAPI(shape, host, r)
	}
	if p := r.URL.Path; p != "" && p != "/" && p != s.Front.BrowserPath {
		return errors.New("no such path")
	}
	switch s.Kind {
	case Browserbase:
		s.mu.Lock()
		id, ok := s.sigKeys[q.Get("signingKey")]
		s.mu.Unlock()
		if host != BrowserbaseConnectHost || !ok || !s.Live(id) {
			return errors.New("invalid signingKey")
		}
	case Steel:
		if host != SteelConnectHost || q.Get("apiKey") != s.APIKey || !s.Live(q.Get("sessionId")) {
			return errors.New("invalid apiKey or sessionId")
		}
	case BrowserUse, BrowserUseV2, Nous:
		if _, ok := s.browserUseID(host); !ok || r.URL.Path != s.Front.BrowserPath {
			return errors.New("no such browser")
		}
	case CDP:
		if host != BrowserlessHost || q.Get("token") != s.APIKey {
			return errors.New("bad or missing token")
		}
	}
	return nil
}
