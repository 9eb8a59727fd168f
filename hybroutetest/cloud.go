package hybroutetest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/providertest"
	"github.com/hybroute/hybroute/internal/testenv"
	"github.com/hybroute/hybroute/provider"
)

// Kind names the service a [Cloud] stands in for: the API it speaks, and
// the shape of the CDP URLs it hands out.
type Kind string

// The services a Cloud can stand in for (the names are the stand-ins'
// own).
const (
	Browserbase  Kind = "browserbase"
	BrowserUse   Kind = "browser-use" // its v3 API
	Steel        Kind = "steel"
	Browserless  Kind = "browserless" // its /session API
	Anchor       Kind = "anchor"
	Kernel       Kind = "kernel"
	Hyperbrowser Kind = "hyperbrowser"
	BrowserCash  Kind = "browser-cash"
)

// Kinds are all the services a Cloud can stand in for.
var Kinds = []Kind{Browserbase, BrowserUse, Steel, Browserless, Anchor, Kernel, Hyperbrowser, BrowserCash}

// CloudUserAgent is the user agent of the Cloud's browser, and
// LocalUserAgent that of the local browser of a [NewRouter] Router: a
// [Site] tells by it which browser fetched a page.
const (
	CloudUserAgent = "hybroutetest-cloud"
	LocalUserAgent = "hybroutetest-local"
)

// Cloud is a stand-in for a cloud browser provider, on loopback: a fake
// of the service's API (its endpoints, headers, bodies and CDP URL
// shapes, as the service documents them) in front of a real headless
// Chromium, which serves every session it hands out. Its answers to
// session creates are scripted with [Cloud.Answer] and [Cloud.AnswerNext],
// and may change while a test runs.
type Cloud struct {
	kind    Kind
	srv     *cloudtest.Server
	browser *cloudtest.Chromium
}

// NewCloud starts a stand-in for the service kind, healthy, with its
// Chromium; both end with the test. The Chromium maps every name under
// .test to loopback, as a [Site] needs. The test is skipped, saying why,
// under -short and when no Chromium is installed.
func NewCloud(t testing.TB, kind Kind) *Cloud {
	t.Helper()
	testenv.RequireChromium(t)
	c := &Cloud{kind: kind}
	c.browser = cloudtest.LaunchChromium(t, "--user-agent="+CloudUserAgent, "--host-resolver-rules="+hostRules)
	// The real shapes: the session's CDP URL is the service's own
	// (wss://connect.browserbase..., a per-session key in the query),
	// served by a TLS front that checks it and can drop the connections.
	c.srv = cloudtest.NewServer(t, cloudtest.Kind(kind), c.browser.WSURL, cloudtest.WithRealShapes())
	return c
}

// Kind is the service the Cloud stands in for.
func (c *Cloud) Kind() Kind { return c.kind }

// Provider is hybroute's client of the service, pointed at the stand-in
// with the key it accepts and an HTTP client that reaches it on loopback
// only. opts add to those (such as provider.WithSessionParams).
func (c *Cloud) Provider(opts ...provider.Option) provider.Provider {
	p, _ := c.provider(opts...)
	return p
}

// provider is Provider and its HTTP client, whose idle connections are
// the caller's to close: a Router leaves a client it was given alone.
func (c *Cloud) provider(opts ...provider.Option) (provider.Provider, *http.Client) {
	hc := c.srv.HTTPClient()
	return providertest.Client(c.srv, append([]provider.Option{provider.WithHTTPClient(hc)}, opts...)...), hc
}

// Answer makes a every create's answer from now on, after any queued by
// AnswerNext: [Healthy] ends an outage.
func (c *Cloud) Answer(a Answer) {
	if a.healthy {
		c.srv.AlwaysOnCreate(nil)
		return
	}
	r := a.reply(c.kind)
	c.srv.AlwaysOnCreate(&r)
}

// AnswerNext queues answers for the next creates, in order; after them
// the Cloud answers as Answer set.
func (c *Cloud) AnswerNext(as ...Answer) {
	for _, a := range as {
		c.srv.OnCreate(a.reply(c.kind))
	}
}

// KillSessions drops the connection of every session's browser at once,
// as a service does when a session dies (it crashed, or its time ran
// out): a call under way on one fails with hybroute.ErrBrowserDead. The
// Cloud serves new sessions as before.
func (c *Cloud) KillSessions() { c.srv.Front.DropConnections() }

// Creates counts the session creates the Cloud received, answered or
// not: one per outage is what a Router's back-off promises.
func (c *Cloud) Creates() int { return int(c.srv.Creates()) }

// Releases counts the session releases the Cloud received.
func (c *Cloud) Releases() int { return int(c.srv.Releases()) }

// Live counts the sessions the Cloud made and that were not released.
func (c *Cloud) Live() int { return c.srv.LiveCount() }

// Answer is a scripted answer to a session create. Its status, headers
// and body are the service's own for that refusal (each Kind's error
// shape, with the words its documentation gives).
type Answer struct {
	name       string
	healthy    bool
	status     int
	retryAfter time.Duration
	fixed      *cloudtest.Reply // the same for every Kind
}

// String names the answer, for test names.
func (a Answer) String() string { return a.name }

// Healthy is the normal answer: a session, on the Cloud's browser.
func Healthy() Answer { return Answer{name: "healthy", healthy: true} }

// RateLimited is a 429, in the service's shape, with HTTP's Retry-After
// header in whole seconds when retryAfter is positive. No service
// documents that header (they document the 429 alone): a proxy or a
// gateway in front of one may send it, and hybroute waits that long before
// it asks again.
func RateLimited(retryAfter time.Duration) Answer {
	return Answer{name: "429 rate limited", status: http.StatusTooManyRequests, retryAfter: retryAfter}
}

// PaymentRequired is a 402, in the service's shape: the account is out of
// credits.
func PaymentRequired() Answer {
	return Answer{name: "402 payment required", status: http.StatusPaymentRequired}
}

// LimitForbidden is a limit answered as 403, in the service's shape with
// the words of a concurrent-session limit (Browser.cash and Anchor
// document their limits so).
func LimitForbidden() Answer {
	return Answer{name: "403 limit", status: http.StatusForbidden}
}

// Hang is an answer that never comes: the create waits until the client
// gives up (hybroute.WithCreateTimeout bounds that).
func Hang() Answer {
	r := cloudtest.Hang()
	return Answer{name: "hang", fixed: &r}
}

// Malformed is a success status whose body is cut short: JSON that does
// not parse.
func Malformed() Answer {
	r := cloudtest.Malformed()
	return Answer{name: "malformed", fixed: &r}
}

// reply is the answer as kind gives it.
func (a Answer) reply(kind Kind) cloudtest.Reply {
	switch {
	case a.healthy:
		return cloudtest.Reply{}
	case a.fixed != nil:
		return *a.fixed
	}
	r := cloudtest.Reply{Status: a.status, Body: refusalBody(kind, a.status)}
	if a.retryAfter > 0 {
		secs := int((a.retryAfter + time.Second - 1) / time.Second)
		r.Header = http.Header{"Retry-After": {strconv.Itoa(secs)}}
	}
	return r
}

// refusalWords are what each service says for a refusal, by status, as its
// SDK or documentation gives it (/work/shared/PROVIDER-CONTRACTS.md names
// the sources); a status a service documents no words for is answered with
// Browser.cash's, the one service that documents all three.
var refusalWords = map[Kind]map[int]string{
	// Browserbase's concurrency guide: its limits answer 429 "Too Many
	// Requests" (the Fastify answer of its API, browserbase/sdk-node).
	Browserbase: {http.StatusTooManyRequests: "Too Many Requests"},
	// browser-use/sdk docs/cloud/openapi/v4.json: 429 "Too many
	// concurrent active sessions".
	BrowserUse: {http.StatusTooManyRequests: "Too many concurrent active sessions"},
	// steel-dev/steel-node: 429 "Rate limit exceeded".
	Steel: {http.StatusTooManyRequests: "Rate limit exceeded"},
	// browserless's HTTP error codes page: 429 "Too Many Requests".
	Browserless: {http.StatusTooManyRequests: "Too Many Requests"},
	// AnchorBrowser-SDK-Typescript: 403 "Concurrent sessions limit
	// reached for your plan".
	Anchor: {http.StatusForbidden: "Concurrent sessions limit reached for your plan"},
	// Kernel's API reference: 429 "concurrent browser limit reached".
	Kernel: {http.StatusTooManyRequests: "concurrent browser limit reached"},
	// hyperbrowserai/node-sdk openapi.json: 429 "Too many concurrent
	// sessions".
	Hyperbrowser: {http.StatusTooManyRequests: "Too many concurrent sessions"},
	// BrowserCash/docs docs/sessions/errors.mdx: 402 "Insufficient
	// balance", 403 "Session or account limit reached: the plan's
	// concurrent-browser limit", 429 "Too many requests".
	BrowserCash: {
		http.StatusPaymentRequired: "Insufficient balance",
		http.StatusForbidden:       "Session or account limit reached: the plan's concurrent-browser limit",
		http.StatusTooManyRequests: "Too many requests",
	},
}

// refusalBody is the body kind answers status with: its error shape,
// holding its words.
func refusalBody(kind Kind, status int) string {
	msg, ok := refusalWords[kind][status]
	if !ok {
		msg = refusalWords[BrowserCash][status]
	}
	var v any
	switch kind {
	case Browserbase:
		// Fastify's error shape (browserbase/sdk-node's APIError reads it).
		v = map[string]any{"statusCode": status, "error": http.StatusText(status), "message": msg}
	case BrowserUse:
		// FastAPI's (browser-use/sdk).
		v = map[string]any{"detail": msg}
	case Steel, Hyperbrowser:
		// {"message"} (steel-node; Hyperbrowser's openapi.json).
		v = map[string]any{"message": msg}
	case Browserless:
		// Plain text (browserless's HTTP error codes page).
		return msg
	case Anchor:
		// {"error": {"code", "message"}} (AnchorBrowser-SDK-Typescript).
		v = map[string]any{"error": map[string]any{"code": status, "message": msg}}
	case Kernel:
		// {"code", "message"} (Kernel's API reference).
		code := map[int]string{http.StatusTooManyRequests: "rate_limited", http.StatusPaymentRequired: "payment_required",
			http.StatusForbidden: "forbidden"}[status]
		v = map[string]any{"code": code, "message": msg}
	default:
		// {"error"} (BrowserCash/docs errors.mdx).
		v = map[string]any{"error": msg}
	}
	b, _ := json.Marshal(v)
	return string(b)
}
