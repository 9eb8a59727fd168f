package provider

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// Browser Use's browser sessions, on the API versions the service mounts
// them under (v2, v3, v4), and the managed gateway in front of them.
//
// What the client sends follows Browser Use's API references (its SDK,
// browser-use/sdk browser-use-node/src/v{2,3}/resources/browsers.ts, and
// docs/cloud/openapi/v{2,3,4}.json; browser-use's own client,
// browser_use/browser/cloud/cloud.py): base https://api.browser-use.com;
// POST /api/{v}/browsers with the header X-Browser-Use-API-Key and a JSON
// body whose optional fields are "timeout" (minutes: at most 15 on free
// plans, 240 on paid ones), "proxyCountryCode" (lower case: "us"; "US" is
// refused with 422) and "profileId"; the answer carries "id", "status"
// ("active"/"stopped"), "cdpUrl" (an https discovery endpoint, resolved
// through /json/version), "liveUrl" and "timeoutAt". Release is PATCH
// /api/{v}/browsers/{id} with {"action":"stop"}, which also refunds the
// unused time. Errors are FastAPI shaped: {"detail": "..."}, or for 422 a
// list of {"loc","msg","type"}; 403 is answered for "Session timeout limit
// exceeded (maximum 4 hours)" and for a key scoped to another version,
// {"detail": "API key is missing required scope: ..."}: the service mounts
// the same routes under each version and grants keys per version, so a
// create so refused is tried on the next version, as browser-use's client
// does, and the version that answered is used from then on. GET
// /api/{v}/browsers/{id} answers the session's view, whose "recordingUrl"
// is set once the session has ended, when it was created with
// "enableRecording": true.

// The Browser Use API versions.
const (
	BrowserUseV3 = "v3" // /api/v3/browsers, the default
	BrowserUseV2 = "v2" // /api/v2/browsers
	BrowserUseV4 = "v4" // /api/v4/browsers
)

// browserUseVersions are the versions a create tries, in browser-use's
// own client's order, after the one configured.
var browserUseVersions = []string{BrowserUseV2, BrowserUseV3, BrowserUseV4}

// WithBrowserUseAPI makes a [BrowserUse] client try the API version v
// first ([BrowserUseV3], the default, [BrowserUseV2] or [BrowserUseV4]);
// a key that lacks v's scope is tried on the others.
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
	// "us" (proxyCountryCode, sent in lower case as the API wants it).
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
			c.params["proxyCountryCode"] = strings.ToLower(s.ProxyCountry)
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
	defaults map[string]any // the create body's fields unless params say otherwise
	gateway  *gatewayCreates
	// version is the API version creates go to first: the configured one
	// until a create was granted on another (nil at a gateway, which has
	// no version in its paths).
	version *atomic.Pointer[string]
}

// NewBrowserUse returns a [BrowserUse] client, on API v3 unless
// [WithBrowserUseAPI] names another. An unknown version is taken as v3.
func NewBrowserUse(apiKey string, opts ...Option) *BrowserUse {
	b := &BrowserUse{apiClient: newAPIClient(DefaultBrowserUseBaseURL, "Browser Use", "X-Browser-Use-API-Key", apiKey, opts)}
	v := BrowserUseV3
	if slices.Contains(browserUseVersions, b.api) {
		v = b.api
	}
	b.version = &atomic.Pointer[string]{}
	b.version.Store(&v)
	return b
}

// APIVersion is the version the client's creates go to first: the
// configured one, or the one a scoped key was last granted. Empty at the
// managed gateway.
func (b *BrowserUse) APIVersion() string {
	if b.version == nil {
		return ""
	}
	return *b.version.Load()
}

// createAnswer is the create answer of Browser Use (and of the gateway).
type createAnswer struct {
	ID         string `json:"id"`
	CDPURL     string `json:"cdpUrl"`
	ConnectURL string `json:"connectUrl"`
	LiveURL    string `json:"liveUrl"`
	TimeoutAt  string `json:"timeoutAt"`
}

// CreateSession implements [Provider]: POST /api/{v}/browsers, on the
// next version while a version's scope is missing, then the cdpUrl
// (usually https) is resolved to its websocket through /json/version. At
// the gateway it is POST {origin}/browsers with an idempotency key
// (gateway.go).
func (b *BrowserUse) CreateSession(ctx context.Context, key string) (*Session, error) {
	body := make(map[string]any, len(b.defaults)+len(b.params))
	maps.Copy(body, b.defaults)
	maps.Copy(body, b.params)
	if cc, ok := body["proxyCountryCode"].(string); ok {
		body["proxyCountryCode"] = strings.ToLower(cc)
	}
	b.profile.browserUseProfile(body, key)
	var out createAnswer
	var hdr http.Header
	var err error
	prefix := ""
	if b.gateway != nil {
		u := b.baseURL + "/browsers"
		hdr, err = b.gateway.create(ctx, key, func(extra http.Header) (http.Header, error) {
			return b.request(ctx, "create", http.MethodPost, u, body, &out, extra)
		})
	} else {
		prefix, err = b.createOnVersions(ctx, body, &out)
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
	s.LiveViewURL = out.LiveURL
	s.ExpiresAt = parseTime(out.TimeoutAt)
	s.releaseURL = b.baseURL + prefix + "/browsers/" + url.PathEscape(s.ID)
	if b.gateway != nil {
		s.ExternalCallID = truncate(hdr.Get(externalCallIDHeader), 200)
	}
	return s, nil
}

// createOnVersions posts the create to the first version, then to each
// other while the answer is a missing scope, and keeps the version that
// answered otherwise. It returns the path prefix of that version. The
// error of a key that no version granted is the first version's.
func (b *BrowserUse) createOnVersions(ctx context.Context, body map[string]any, out *createAnswer) (string, error) {
	first := b.APIVersion()
	order := append([]string{first}, slices.DeleteFunc(slices.Clone(browserUseVersions), func(v string) bool { return v == first })...)
	var firstErr error
	for _, v := range order {
		prefix := "/api/" + v
		_, err := b.request(ctx, "create", http.MethodPost, b.baseURL+prefix+"/browsers", body, out, nil)
		var pe *Error
		if err != nil && errors.As(err, &pe) && pe.MissingScope() {
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		if err == nil && v != first {
			b.version.Store(&v)
		}
		return prefix, err
	}
	return "", firstErr
}

// ReleaseSession implements [Provider]: PATCH /api/{v}/browsers/{id} with
// {"action":"stop"}, on the version that created the session.
func (b *BrowserUse) ReleaseSession(ctx context.Context, s *Session) error {
	if s == nil || s.ID == "" {
		return nil
	}
	_, err := b.request(ctx, "release", http.MethodPatch, b.browserURL(s), map[string]any{"action": "stop"}, nil, nil)
	return err
}

// Replay implements [Replayer]: GET /api/{v}/browsers/{id}, its
// recordingUrl. Browser Use records a session created with
// "enableRecording": true (WithSessionParams), and names the recording
// once the session has ended: asked before, or of a session not recorded,
// it is [ErrNoReplay].
func (b *BrowserUse) Replay(ctx context.Context, s *Session) (string, error) {
	if s == nil || s.ID == "" {
		return "", noReplay(b.name, "")
	}
	var out struct {
		RecordingURL string `json:"recordingUrl"`
	}
	if _, err := b.request(ctx, "replay", http.MethodGet, b.browserURL(s), nil, &out, nil); err != nil {
		return "", err
	}
	if out.RecordingURL == "" {
		return "", noReplay(b.name, s.ID)
	}
	return out.RecordingURL, nil
}

// browserURL is the URL of session s, on the API version that created it.
func (b *BrowserUse) browserURL(s *Session) string {
	if s.releaseURL != "" {
		return s.releaseURL
	}
	prefix := ""
	if b.gateway == nil {
		prefix = "/api/" + b.APIVersion()
	}
	return b.baseURL + prefix + "/browsers/" + url.PathEscape(s.ID)
}

// parseTime reads an RFC 3339 time, zero when there is none.
func parseTime(v string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(v))
	if err != nil {
		return time.Time{}
	}
	return t
}
