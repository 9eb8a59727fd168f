package provider

import (
	"cmp"
	"context"
	"maps"
	"net/http"
	"strings"
	"time"
)

// Provider is a cloud browser service. CreateSession returns a session whose
// CDPURL the router connects to; a provider that cannot hand out a CDP
// endpoint returns a session with an empty CDPURL (and a [RESTDriver], when
// its browser has a REST API), and the router reports
// [github.com/hybroute/hybroute.ErrNoCDPEndpoint] for CDP code on it rather
// than pretending the call ran.
//
// A Router calls CreateSession and ReleaseSession from several goroutines
// at once (one per session key), so an implementation must be safe for
// concurrent use.
type Provider interface {
	// Name names the provider in logs and in error messages.
	Name() string
	// CreateSession starts one cloud browser session for the cache key.
	CreateSession(ctx context.Context, key string) (*Session, error)
	// ReleaseSession ends a session that CreateSession returned.
	ReleaseSession(ctx context.Context, s *Session) error
}

// Replayer is implemented by a [Provider] that gives a session's replay
// or recording URL on request: [Browserbase], [BrowserUse], [Steel] and
// the [SessionAPI] presets with a replay call (Anchor, Kernel,
// Hyperbrowser).
// Some providers make the recording only once the session has ended
// (Browser Use), so Replay is asked of a session already released as well
// as of a live one. It costs an API call:
// [github.com/hybroute/hybroute.Router.Replay] asks it, Status does not.
type Replayer interface {
	// Replay returns where the session's recording plays, or an error
	// matching [ErrNoReplay] when there is none (yet).
	Replay(ctx context.Context, s *Session) (string, error)
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
	// session the provider could not create; FallbackReason says why. A
	// provider that has no cloud session to give may return one so
	// marked: the router then runs the key on its local Chromium, as
	// after a failed create.
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

	// LiveViewURL is where a person watches the session's browser live,
	// and can take it over where the provider allows: Browser Use's
	// liveUrl, Steel's debugUrl with interactive=true, Browserbase's
	// debuggerFullscreenUrl, Anchor's live_view_url, Kernel's
	// browser_live_view_url, Hyperbrowser's liveUrl. Empty when the
	// provider gave none. It may carry the provider's per-session token:
	// it is for the person in the loop, not for logs.
	LiveViewURL string
	// ReplayURL is where the session's recording can be watched once it
	// has run, when the create answer named one; empty otherwise (most
	// providers make it on request, during or after the session: see
	// [Replayer]).
	ReplayURL string
	// ExpiresAt is when the provider ends the session whatever is done
	// with it: Browserbase's expiresAt, Browser Use's timeoutAt, Steel's
	// createdAt plus its timeout, browserless's ttl from the create. Zero
	// when the provider said nothing.
	ExpiresAt time.Time

	// REST drives the session's tab through the provider's REST API, for
	// a browser server with no CDP endpoint (Camofox): with an empty
	// CDPURL, the router runs the calls that can go through it
	// (a call made with hybroute.DrivesREST) and fails CDP code with
	// ErrNoCDPEndpoint.
	REST RESTDriver

	// HTTPClient dials the session's CDP websocket: its transport, proxy
	// and trusted roots govern the session as they govern the provider's
	// API calls. The built-in providers set the client they were configured
	// with ([WithHTTPClient]); a third-party Provider may set its own.
	// Nil: http.DefaultClient.
	HTTPClient *http.Client

	// releaseURL is where the release call goes when the create settled
	// it (browserless's "stop" URL, the Browser Use API version the create
	// was granted); empty: the provider's own path. Only the client that
	// made the session reads it.
	releaseURL string
}

// defaultTimeout bounds one provider call when the caller's context
// has no earlier deadline. Session creation takes seconds, not minutes.
const defaultTimeout = 60 * time.Second

// Option configures a provider client.
type Option func(*config)

// config is what the Options set.
type config struct {
	baseURL string
	client  *http.Client
	own     bool // client is the default one, ours to close
	// sender sends the client's HTTP requests: client itself when own,
	// else a copy of the caller's client whose redirects are checked.
	sender  *http.Client
	name    string
	params  map[string]any
	timeout time.Duration // the default client's; 0: defaultTimeout
	api     string        // the API version a client tries first (Browser Use: "v2", "v3" or "v4")
	profile Profile       // WithProfile (profiles.go)
	// tokenSource gives the key of each request (WithTokenSource).
	tokenSource func(context.Context) (string, error)
	// privateEndpoint: the provider may be at a private address
	// (WithPrivateEndpoint, endpoint.go).
	privateEndpoint bool
}

// WithTokenSource makes a client take the key of each request from
// source instead of the fixed key it was made with: a token that expires
// and is refreshed, as the managed gateway's OAuth access token is. The
// source is called before every request, from several goroutines at
// once; it should hand out a cached token until that is near its expiry.
// An [golang.org/x/oauth2.TokenSource] ts fits as
//
//	provider.WithTokenSource(func(context.Context) (string, error) {
//		t, err := ts.Token()
//		if err != nil {
//			return "", err
//		}
//		return t.AccessToken, nil
//	})
//
// A failure of the source fails the call, matching [ErrUnavailable] and
// wrapping the source's error. The tokens are removed from error texts as
// the key is.
func WithTokenSource(source func(ctx context.Context) (string, error)) Option {
	return func(c *config) { c.tokenSource = source }
}

// WithBaseURL points a client at another API base URL: a test server
// or a self-hosted gateway. A trailing slash is ignored.
func WithBaseURL(u string) Option {
	return func(c *config) { c.baseURL = u }
}

// WithHTTPClient makes a client send its requests with hc. The
// default client times out after 60 s and does not follow redirects (a
// redirect to another host would carry the API key header along). hc's
// own redirect policy is asked only after the client's checks: a redirect
// that the endpoint rules refuse, or to another host with the key, fails
// the call.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *config) { c.client = hc }
}

// WithName overrides the name a client reports in logs and errors.
func WithName(name string) Option {
	return func(c *config) { c.name = name }
}

// WithSessionParams adds fields to the JSON body of the create call, e.g.
// {"keepAlive": true, "timeout": 600} for Browserbase or {"timeout": 30}
// for Browser Use. The fields the client itself sets win over these.
func WithSessionParams(params map[string]any) Option {
	return func(c *config) {
		c.params = make(map[string]any, len(params))
		maps.Copy(c.params, params)
	}
}

func newConfig(defaultBase, defaultName string, opts []Option) config {
	c := config{baseURL: defaultBase, name: defaultName}
	for _, o := range opts {
		o(&c)
	}
	c.baseURL = strings.TrimRight(c.baseURL, "/")
	if c.client == nil {
		c.own = true
		c.client = &http.Client{
			// A transport of its own, so that CloseIdleConnections (which
			// a Router's Close calls) touches no one else's connections.
			Transport: http.DefaultTransport.(*http.Transport).Clone(),
			Timeout:   cmp.Or(c.timeout, defaultTimeout),
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		}
		c.sender = c.client
	} else {
		// The caller's client may follow redirects, and net/http keeps a
		// key header such as X-BB-API-Key on another host: a shallow copy
		// checks each redirect first, then asks the caller's policy.
		hc := *c.client
		hc.CheckRedirect = checkRedirect(c.client.CheckRedirect, c.privateEndpoint)
		c.sender = &hc
	}
	return c
}
