package provider

import (
	"cmp"
	"context"
	"maps"
	"math"
	"net/http"
	"net/url"
	"time"
)

// Browser Use's browser sessions, on its current API (v3, the default) or
// the one before (v2), and the managed gateway in front of it.
//
// What the client sends follows Browser Use's API references (stored
// copies of docs.browser-use.com "Create Browser Session" and "Update
// Browser Session", API v3 and v2, and docs.cloud.browser-use.com
// "Browser"): base https://api.browser-use.com; POST /api/v3/browsers
// (/api/v2/browsers) with the header X-Browser-Use-API-Key and a JSON body
// whose optional fields are "timeout" (minutes: at most 15 on free plans,
// 240 on paid ones), "proxyCountryCode" and "profileId"; the answer
// carries "id", "status" ("active"/"stopped"), "cdpUrl" (an https
// discovery endpoint, resolved through /json/version) and "liveUrl".
// Release is PATCH /api/v3/browsers/{id} with {"action":"stop"}, which
// also refunds the unused time. Errors are FastAPI shaped: {"detail":
// "..."}, or for 422 a list of {"loc","msg","type"}. Its rate-limit 429s
// are documented without a Retry-After header, so the session layer
// brings its own window.

// The Browser Use API versions.
const (
	BrowserUseV3 = "v3" // /api/v3/browsers, the default
	BrowserUseV2 = "v2" // /api/v2/browsers, for a user pinned to it
)

// WithBrowserUseAPI makes a [BrowserUse] client speak the API version v
// ([BrowserUseV3], the default, or [BrowserUseV2]).
func WithBrowserUseAPI(v string) Option {
	return func(c *config) { c.api = v }
}

// BrowserUseSession is what a Browser Use browser session is created with.
// Zero fields are left out: the provider's defaults apply.
type BrowserUseSession struct {
	// Timeout is how long the session may run before Browser Use stops it,
	// sent in whole minutes (rounded up).
	Timeout time.Duration
	// ProxyCountry is the country of the session's residential proxy, e.g.
	// "us" (proxyCountryCode).
	ProxyCountry string
	// ProfileID is the saved browser profile the session starts from, with
	// its cookies and logins (profileId).
	ProfileID string
}

// WithBrowserUseSession sets the fields of the create body a
// [BrowserUse] client (or the managed gateway's) sends: timeout, proxy
// country, profile. It adds to [WithSessionParams], which it overrides
// for the fields it sets.
func WithBrowserUseSession(s BrowserUseSession) Option {
	return func(c *config) {
		if c.params == nil {
			c.params = map[string]any{}
		}
		if s.Timeout > 0 {
			c.params["timeout"] = int(math.Ceil(s.Timeout.Minutes()))
		}
		if s.ProxyCountry != "" {
			c.params["proxyCountryCode"] = s.ProxyCountry
		}
		if s.ProfileID != "" {
			c.params["profileId"] = s.ProfileID
		}
	}
}

// BrowserUse is the client of Browser Use's browser sessions API, or of
// the managed gateway in front of it ([NewBrowserUseGateway]).
type BrowserUse struct {
	apiClient
	prefix   string         // the path before /browsers: "/api/v3", "/api/v2", or "" at a gateway
	defaults map[string]any // the create body's fields unless params say otherwise
	gateway  *gatewayCreates
}

// NewBrowserUse returns a [BrowserUse] client, on API v3 unless
// [WithBrowserUseAPI] says v2. An unknown version is taken as v3.
func NewBrowserUse(apiKey string, opts ...Option) *BrowserUse {
	b := &BrowserUse{apiClient: newAPIClient(DefaultBrowserUseBaseURL, "Browser Use", "X-Browser-Use-API-Key", apiKey, opts)}
	b.prefix = "/api/" + BrowserUseV3
	if b.api == BrowserUseV2 {
		b.prefix = "/api/" + BrowserUseV2
	}
	return b
}

// CreateSession implements [Provider]: POST {prefix}/browsers, then the
// cdpUrl (usually https) is resolved to its websocket through
// /json/version. At the gateway it carries an idempotency key (gateway.go).
func (b *BrowserUse) CreateSession(ctx context.Context, key string) (*Session, error) {
	body := make(map[string]any, len(b.defaults)+len(b.params))
	maps.Copy(body, b.defaults)
	maps.Copy(body, b.params)
	b.profile.browserUseProfile(body, key)
	var out struct {
		ID         string `json:"id"`
		CDPURL     string `json:"cdpUrl"`
		ConnectURL string `json:"connectUrl"`
	}
	u := b.baseURL + b.prefix + "/browsers"
	var hdr http.Header
	var err error
	if b.gateway != nil {
		hdr, err = b.gateway.create(ctx, key, func(extra http.Header) (http.Header, error) {
			return b.request(ctx, "create", http.MethodPost, u, body, &out, extra)
		})
	} else {
		hdr, err = b.request(ctx, "create", http.MethodPost, u, body, &out, nil)
	}
	if err != nil {
		return nil, err
	}
	// The gateway's sessions may name their endpoint connectUrl instead of
	// cdpUrl; clients of the gateway read either, so this does too.
	s, err := b.session(ctx, key, out.ID, cmp.Or(out.CDPURL, out.ConnectURL))
	if err != nil {
		return nil, err
	}
	if b.gateway != nil {
		s.ExternalCallID = truncate(hdr.Get(externalCallIDHeader), 200)
	}
	return s, nil
}

// ReleaseSession implements [Provider]: PATCH {prefix}/browsers/{id} with
// {"action":"stop"}.
func (b *BrowserUse) ReleaseSession(ctx context.Context, s *Session) error {
	if s == nil || s.ID == "" {
		return nil
	}
	return b.call(ctx, "release", http.MethodPatch, b.prefix+"/browsers/"+url.PathEscape(s.ID), map[string]any{"action": "stop"}, nil)
}
