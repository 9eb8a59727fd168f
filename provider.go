package hybroute

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Provider is a cloud browser service. CreateSession returns a session whose
// CDPURL the router connects to; a provider that cannot hand out a CDP
// endpoint returns a session with an empty CDPURL, and the router reports
// [ErrNoCDPEndpoint] for it rather than pretending the call ran.
type Provider interface {
	// Name names the provider in logs and in error messages.
	Name() string
	// CreateSession starts one cloud browser session for the cache key.
	CreateSession(ctx context.Context, key string) (*Session, error)
	// ReleaseSession ends a session that CreateSession returned.
	ReleaseSession(ctx context.Context, s *Session) error
}

// SessionParamLister is implemented by a [Provider] that takes session
// params (the clients of this package, with [WithSessionParams]): the
// router names the params a fallback to local Chromium does without in the
// outage's log line.
type SessionParamLister interface {
	// SessionParamKeys lists the names of the params sent with each create.
	SessionParamKeys() []string
}

// Session is one browser session, cloud or local, under one cache key.
type Session struct {
	// Key is the cache key the session was created for (CreateSession's
	// key): a provider may use it to name or tag its session.
	Key string
	// ID is the provider's id of the session, what ReleaseSession names;
	// empty when there is nothing to release.
	ID string
	// CDPURL is the session's CDP websocket URL. It may carry a credential
	// (a key, a signing key, a token): it is logged only in redacted form.
	CDPURL string
	// FallbackFromCloud marks a local session that stands in for a cloud
	// session the provider could not create; FallbackReason says why.
	FallbackFromCloud bool
	FallbackReason    string
	// ExternalCallID is the id a billing gateway gave the create call (the
	// managed gateway's x-external-call-id answer header): the router logs
	// it with the session and puts it on the create call's span, so a bill
	// and a session can be matched. Empty when the provider gave none.
	ExternalCallID string
	// SingleConnection marks a session whose provider serves one CDP
	// websocket per session (browserless: a second connection ends or is
	// refused): the router dials its CDPURL once, never again, and a lost
	// connection ends the session rather than being redialled.
	SingleConnection bool

	// releaseURL is where the release call goes when the create answer
	// named it (browserless's "stop" URL); empty: the provider's own path.
	releaseURL string
	// REST drives the session's tab through the provider's REST API, for
	// a browser server with no CDP endpoint (Camofox): with an empty
	// CDPURL, the router runs the calls that can go through it
	// (restpage.go) and fails CDP code with ErrNoCDPEndpoint.
	REST RESTDriver

	// HTTPClient dials the session's CDP websocket: its transport, proxy
	// and trusted roots govern the session as they govern the provider's
	// API calls. The built-in providers set the client they were configured
	// with (WithProviderHTTPClient); a third-party Provider may set its
	// own. Nil: http.DefaultClient.
	HTTPClient *http.Client
}

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
	// ExternalCallID is the gateway's x-external-call-id of the failed
	// call, when it sent one.
	ExternalCallID string
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

// Is matches the sentinels by status: [ErrRateLimited] (429),
// [ErrProviderAuth] (401, 403), [ErrProviderPayment] (402, or a billing
// refusal of another 4xx), [ErrProviderUnavailable] (5xx, 408, or no
// usable answer).
func (e *ProviderError) Is(target error) bool {
	switch target {
	case ErrRateLimited:
		return e.Status == http.StatusTooManyRequests && !e.billing()
	case ErrProviderAuth:
		return (e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden) && !e.billing()
	case ErrProviderPayment:
		return e.Status == http.StatusPaymentRequired || e.billing()
	case ErrProviderUnavailable:
		return e.Status < 300 || e.Status == http.StatusRequestTimeout || e.Status >= 500
	}
	return false
}

// billingWords are what a provider's error code or message says when it
// refuses for money rather than for the key: some answer 403 or 429 with
// them instead of 402.
var billingWords = []string{"payment", "billing", "credits", "insufficient_funds", "insufficient funds",
	"insufficient_balance", "insufficient balance", "subscription"}

// billing reports a 4xx refusal whose code or message is about money.
func (e *ProviderError) billing() bool {
	if e.Status < 400 || e.Status > 499 {
		return false
	}
	text := strings.ToLower(e.Code + " " + e.Message)
	for _, w := range billingWords {
		if strings.Contains(text, w) {
			return true
		}
	}
	return false
}

// defaultProviderTimeout bounds one provider call when the caller's context
// has no earlier deadline. Session creation takes seconds, not minutes.
const defaultProviderTimeout = 60 * time.Second

// ProviderOption configures a provider client.
type ProviderOption func(*providerConfig)

// providerConfig is what the ProviderOptions set.
type providerConfig struct {
	baseURL string
	client  *http.Client
	own     bool // client is the default one, ours to close
	name    string
	params  map[string]any
	timeout time.Duration   // the default client's; 0: defaultProviderTimeout
	api     string          // the API version a client speaks (Browser Use: "v2" or "v3")
	profile ProviderProfile // WithProviderProfile (provider_profiles.go)
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
		c.own = true
		c.client = &http.Client{
			// A transport of its own, so that Router.Close can close its
			// idle connections without touching anyone else's.
			Transport: http.DefaultTransport.(*http.Transport).Clone(),
			Timeout:   cmp.Or(c.timeout, defaultProviderTimeout),
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		}
	}
	return c
}
