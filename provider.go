package hybroute

import "context"

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
