package hybroute

import (
	"context"
	"slices"
	"time"

	sc "github.com/hybroute/hybroute/internal/sidecar"

	"github.com/hybroute/hybroute/route"
)

// SessionStatus is what [Router.Status] reports of one session key: where
// its page's browser session runs and what that browser is.
type SessionStatus struct {
	// Open: the key has a live browser session. When false (no call has
	// run yet, or it was released), Route, CacheKey, the fallback fields
	// and Browser are empty.
	Open     bool
	Route    route.Route
	CacheKey string // the session key, or the key with LocalSuffix for a session on the local route
	// Provider names the cloud provider of the Router ("" with none, "CDP
	// override" with [WithCDPURL]), whether or not the session is on it.
	Provider string
	// FallbackFromCloud and FallbackReason: the provider could not give the
	// session a browser, and it runs on local Chromium; the reason is the
	// Router's, free of keys (as in [Result]).
	FallbackFromCloud bool
	FallbackReason    string
	// Browser is the product the session's browser gave for
	// Browser.getVersion when the guard took it on, e.g.
	// "HeadlessChrome/148.0.7778.0"; empty for a browser without CDP.
	Browser string
	// Profile: the session keeps a persistent profile ([WithProfileDir]).
	Profile bool
	// LiveViewURL, ReplayURL and ExpiresAt are what the provider gave of
	// a cloud session (see [github.com/hybroute/hybroute/provider.Session]): where a person watches it
	// live, where its recording plays, when the provider ends it. Empty or
	// zero when it gave none, and for a local session. ReplayURL is filled
	// only when the create answer named one: most providers give it on
	// request, which [Router.Replay] makes.
	LiveViewURL string
	ReplayURL   string
	ExpiresAt   time.Time
}

// Rules are the rules a Router enforces, as its options set them
// ([Router.Rules]). Metadata addresses are refused whatever they say.
type Rules struct {
	// LocalOnly: there is no cloud; every call runs on local Chromium.
	LocalOnly bool
	// CDPOverride: every call runs on the browser of [WithCDPURL].
	CDPOverride bool
	// Hybrid: private URLs, and URLs that carry a credential, run on the
	// local browser while the rest run in the cloud
	// ([WithAutoLocalForPrivateURLs]).
	Hybrid bool
	// PrivateURLsLocal: a private address may be opened on the local
	// browser; PrivateURLsRemote: on a remote one too
	// ([WithAllowPrivateURLs]).
	PrivateURLsLocal  bool
	PrivateURLsRemote bool
	// SecretsInURLsRemote: URLs that carry a credential may go to a remote
	// browser ([WithAllowSecretsInURLs]).
	SecretsInURLsRemote bool
	// CloudWebRTC: the pages of remote browsers keep WebRTC, which reaches
	// any address a page names ([WithCloudWebRTC]).
	CloudWebRTC bool
	// AllowedHosts and BlockedHosts are the operator's lists, as given
	// ([WithAllowedHosts], [WithBlockedHosts]).
	AllowedHosts []string
	BlockedHosts []string
	// AllowedSchemes are the extra schemes let through, local only
	// ([WithAllowedSchemes]).
	AllowedSchemes []string
	// Dialogs is how JavaScript dialogs are answered ([WithDialogPolicy]).
	Dialogs DialogPolicy
	// Fallback: a cloud session the provider cannot give runs on local
	// Chromium ([WithFallback]).
	Fallback bool
	// PersistentProfiles: local sessions keep a profile ([WithProfileDir]).
	PersistentProfiles bool
}

// Rules reports the rules the Router enforces.
func (r *Router) Rules() Rules {
	return Rules{
		LocalOnly:           r.pol.Local,
		CDPOverride:         r.pol.Override,
		Hybrid:              r.pol.Hybrid,
		PrivateURLsLocal:    r.pol.Rule.PrivateOnLocal,
		PrivateURLsRemote:   r.pol.Rule.PrivateOnCloud,
		SecretsInURLsRemote: r.pol.Rule.SecretsOnCloud,
		CloudWebRTC:         r.cfg.CloudWebRTC,
		AllowedHosts:        slices.Clone(r.cfg.AllowedHosts),
		BlockedHosts:        slices.Clone(r.cfg.BlockedHosts),
		AllowedSchemes:      slices.Clone(r.cfg.AllowedSchemes),
		Dialogs:             DialogPolicy(r.cfg.Dialogs),
		Fallback:            r.cfg.Fallback && r.provider != nil && !r.pol.Override,
		PersistentProfiles:  r.profiles != nil,
	}
}

// Status reports the browser session of sessionKey where its page is: on
// the route its calls took last, else whichever of its sessions is open.
// It makes nothing and asks the browser nothing: a key with no session
// reports Open false. It fails only for an invalid key, or after Close.
func (r *Router) Status(ctx context.Context, sessionKey string) (SessionStatus, error) {
	key, err := normalizeKey(sessionKey)
	if err != nil {
		return SessionStatus{}, err
	}
	st := SessionStatus{Provider: r.providerName()}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return SessionStatus{}, ErrClosed
	}
	es := r.sess.Of(func(*entry) bool { return true }, r.pageFirst(key, r.routes.Get)...)
	if len(es) == 0 || es[0].released.Load() || es[0].h.Dead() {
		return st, nil
	}
	e := es[0]
	st.Open, st.Route, st.CacheKey = true, e.route, e.key
	st.FallbackFromCloud, st.FallbackReason = e.fallback, e.fallbackAccount
	if e.bg != nil {
		st.Browser = e.bg.Browser().Product
	}
	if c := e.cloud; c != nil {
		st.LiveViewURL, st.ReplayURL, st.ExpiresAt = c.LiveViewURL, c.ReplayURL, c.ExpiresAt
	}
	_, st.Profile = e.h.Tab().(*sc.Tab)
	st.Profile = st.Profile && r.profiles != nil
	return st, nil
}

// providerName names where cloud sessions come from.
func (r *Router) providerName() string {
	switch {
	case r.pol.Override:
		return "CDP override"
	case r.provider != nil:
		return r.provider.Name()
	}
	return ""
}
