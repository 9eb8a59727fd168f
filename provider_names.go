package hybroute

import (
	"io"
	"net/http"

	"github.com/hybroute/hybroute/provider"
)

// The names the provider clients had when they lived in this package. They
// are the same types, values and functions as package provider's, so code
// written against either name works with the other (errors.Is finds
// hybroute.ErrRateLimited in an error of provider.ErrRateLimited: it is the
// same error value). Each is deprecated so that the package's documentation
// shows the Router, and package provider the providers.

// Provider is a cloud browser service.
//
// Deprecated: use provider.Provider.
type Provider = provider.Provider

// SessionParamLister is implemented by a Provider that takes session params.
//
// Deprecated: use provider.SessionParamLister.
type SessionParamLister = provider.SessionParamLister

// Session is one browser session, cloud or local, under one cache key.
//
// Deprecated: use provider.Session.
type Session = provider.Session

// ProviderError is the error of a provider call that did not succeed.
//
// Deprecated: use provider.Error.
type ProviderError = provider.Error

// ProviderOption configures a provider client.
//
// Deprecated: use provider.Option.
type ProviderOption = provider.Option

// ProviderProfile is the provider's own persistent profile a cloud session
// starts from.
//
// Deprecated: use provider.Profile.
type ProviderProfile = provider.Profile

// RESTDriver drives one tab of a browser server through its REST API.
//
// Deprecated: use provider.RESTDriver.
type RESTDriver = provider.RESTDriver

// Browserbase is the client of Browserbase's session API.
//
// Deprecated: use provider.Browserbase.
type Browserbase = provider.Browserbase

// Steel is the client of Steel's sessions API.
//
// Deprecated: use provider.Steel.
type Steel = provider.Steel

// BrowserUse is the client of Browser Use's browser sessions API.
//
// Deprecated: use provider.BrowserUse.
type BrowserUse = provider.BrowserUse

// BrowserUseSession is what a Browser Use browser session is created with.
//
// Deprecated: use provider.BrowserUseSession.
type BrowserUseSession = provider.BrowserUseSession

// CDPEndpointProvider is a browser already running behind a CDP endpoint.
//
// Deprecated: use provider.Endpoint.
type CDPEndpointProvider = provider.Endpoint

// Camofox is the client of a camofox-browser server.
//
// Deprecated: use provider.Camofox.
type Camofox = provider.Camofox

// SessionAPI is the client of a session API a SessionAPISpec describes.
//
// Deprecated: use provider.SessionAPI.
type SessionAPI = provider.SessionAPI

// SessionAPISpec describes a session API.
//
// Deprecated: use provider.SessionAPISpec.
type SessionAPISpec = provider.SessionAPISpec

// SessionAPIAuth says where a session API takes its key.
//
// Deprecated: use provider.SessionAPIAuth.
type SessionAPIAuth = provider.SessionAPIAuth

// SessionAPICall is one call of a session API.
//
// Deprecated: use provider.SessionAPICall.
type SessionAPICall = provider.SessionAPICall

const (
	// DefaultBrowserbaseBaseURL is Browserbase's API base URL.
	//
	// Deprecated: use provider.DefaultBrowserbaseBaseURL.
	DefaultBrowserbaseBaseURL = provider.DefaultBrowserbaseBaseURL
	// DefaultBrowserUseBaseURL is Browser Use's API base URL.
	//
	// Deprecated: use provider.DefaultBrowserUseBaseURL.
	DefaultBrowserUseBaseURL = provider.DefaultBrowserUseBaseURL
	// DefaultSteelBaseURL is Steel's API base URL.
	//
	// Deprecated: use provider.DefaultSteelBaseURL.
	DefaultSteelBaseURL = provider.DefaultSteelBaseURL
	// DefaultCamofoxBaseURL is where camofox-browser listens by default.
	//
	// Deprecated: use provider.DefaultCamofoxBaseURL.
	DefaultCamofoxBaseURL = provider.DefaultCamofoxBaseURL
	// BrowserUseV3 is Browser Use's current API version, the default.
	//
	// Deprecated: use provider.BrowserUseV3.
	BrowserUseV3 = provider.BrowserUseV3
	// BrowserUseV2 is Browser Use's API version before v3.
	//
	// Deprecated: use provider.BrowserUseV2.
	BrowserUseV2 = provider.BrowserUseV2
)

var (
	// ErrRateLimited is matched by a provider error for HTTP 429.
	//
	// Deprecated: use provider.ErrRateLimited, the same error.
	ErrRateLimited = provider.ErrRateLimited
	// ErrProviderAuth is matched by a provider error for HTTP 401 and 403.
	//
	// Deprecated: use provider.ErrAuth, the same error.
	ErrProviderAuth = provider.ErrAuth
	// ErrUnauthorized is matched by a provider error for HTTP 401 and 403.
	//
	// Deprecated: use provider.ErrAuth, the same error.
	ErrUnauthorized = provider.ErrAuth
	// ErrProviderPayment is matched by a provider error for HTTP 402 and
	// billing refusals.
	//
	// Deprecated: use provider.ErrPayment, the same error.
	ErrProviderPayment = provider.ErrPayment
	// ErrPaymentRequired is matched by a provider error for HTTP 402 and
	// billing refusals.
	//
	// Deprecated: use provider.ErrPayment, the same error.
	ErrPaymentRequired = provider.ErrPayment
	// ErrProviderUnavailable is matched by a provider error for HTTP 5xx,
	// 408, and failures with no usable answer.
	//
	// Deprecated: use provider.ErrUnavailable, the same error.
	ErrProviderUnavailable = provider.ErrUnavailable
	// ErrInvalidSpec is wrapped by the error of an unusable session API spec.
	//
	// Deprecated: use provider.ErrInvalidSpec, the same error.
	ErrInvalidSpec = provider.ErrInvalidSpec
)

// NewBrowserbase returns a Browserbase client for the project.
//
// Deprecated: use provider.NewBrowserbase.
func NewBrowserbase(apiKey, projectID string, opts ...ProviderOption) *Browserbase {
	return provider.NewBrowserbase(apiKey, projectID, opts...)
}

// NewSteel returns a Steel client.
//
// Deprecated: use provider.NewSteel.
func NewSteel(apiKey string, opts ...ProviderOption) *Steel {
	return provider.NewSteel(apiKey, opts...)
}

// NewBrowserUse returns a Browser Use client.
//
// Deprecated: use provider.NewBrowserUse.
func NewBrowserUse(apiKey string, opts ...ProviderOption) *BrowserUse {
	return provider.NewBrowserUse(apiKey, opts...)
}

// NewBrowserUseGateway returns a Browser Use client of the managed gateway.
//
// Deprecated: use provider.NewBrowserUseGateway.
func NewBrowserUseGateway(origin, userToken string, opts ...ProviderOption) *BrowserUse {
	return provider.NewBrowserUseGateway(origin, userToken, opts...)
}

// NewCamofox returns a Camofox client.
//
// Deprecated: use provider.NewCamofox.
func NewCamofox(accessKey string, opts ...ProviderOption) *Camofox {
	return provider.NewCamofox(accessKey, opts...)
}

// NewBrowserless returns the client of browserless's session API.
//
// Deprecated: use provider.NewBrowserless.
func NewBrowserless(token string, opts ...ProviderOption) *SessionAPI {
	return provider.NewBrowserless(token, opts...)
}

// CDPEndpoint returns a provider for a plain CDP endpoint.
//
// Deprecated: use provider.CDPEndpoint.
func CDPEndpoint(rawURL string, opts ...ProviderOption) *CDPEndpointProvider {
	return provider.CDPEndpoint(rawURL, opts...)
}

// NewSessionAPI returns the client of the spec's API with the API key.
//
// Deprecated: use provider.NewSessionAPI.
func NewSessionAPI(spec SessionAPISpec, apiKey string, opts ...ProviderOption) (*SessionAPI, error) {
	return provider.NewSessionAPI(spec, apiKey, opts...)
}

// LoadSessionAPISpec reads a spec from JSON and validates it.
//
// Deprecated: use provider.LoadSessionAPISpec.
func LoadSessionAPISpec(r io.Reader) (SessionAPISpec, error) { return provider.LoadSessionAPISpec(r) }

// SessionAPIPreset returns the spec of a preset.
//
// Deprecated: use provider.SessionAPIPreset.
func SessionAPIPreset(name string) (SessionAPISpec, bool) { return provider.SessionAPIPreset(name) }

// SessionAPIPresets names the presets, sorted.
//
// Deprecated: use provider.SessionAPIPresets.
func SessionAPIPresets() []string { return provider.SessionAPIPresets() }

// WithProviderBaseURL points a client at another API base URL.
//
// Deprecated: use provider.WithBaseURL.
func WithProviderBaseURL(u string) ProviderOption { return provider.WithBaseURL(u) }

// WithProviderHTTPClient makes a client send its requests with hc.
//
// Deprecated: use provider.WithHTTPClient.
func WithProviderHTTPClient(hc *http.Client) ProviderOption { return provider.WithHTTPClient(hc) }

// WithProviderName overrides the name a client reports in logs and errors.
//
// Deprecated: use provider.WithName.
func WithProviderName(name string) ProviderOption { return provider.WithName(name) }

// WithProviderProfile makes every cloud session start from the provider's
// persistent profile p.
//
// Deprecated: use provider.WithProfile.
func WithProviderProfile(p ProviderProfile) ProviderOption { return provider.WithProfile(p) }

// WithSessionParams adds fields to the JSON body of the create call.
//
// Deprecated: use provider.WithSessionParams.
func WithSessionParams(params map[string]any) ProviderOption {
	return provider.WithSessionParams(params)
}

// WithBrowserUseAPI makes a BrowserUse client speak the API version v.
//
// Deprecated: use provider.WithBrowserUseAPI.
func WithBrowserUseAPI(v string) ProviderOption { return provider.WithBrowserUseAPI(v) }

// WithBrowserUseSession sets the fields of a Browser Use create body.
//
// Deprecated: use provider.WithBrowserUseSession.
func WithBrowserUseSession(s BrowserUseSession) ProviderOption {
	return provider.WithBrowserUseSession(s)
}
