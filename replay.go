package hybroute

import (
	"context"
	"fmt"

	"github.com/hybroute/hybroute/provider"
)

// Replay returns where the recording of sessionKey's cloud session plays:
// the URL its create answer named, else what the provider answers when
// asked ([provider.Replayer]: an API call, which [Router.Status] never
// makes). It asks about the key's open cloud session, else the last one
// released: some providers make the recording only once the session has
// ended (Browser Use), so Replay works after [Router.Release], after the
// idle reaper's release and after Close. The Router keeps the last ended
// cloud session of the most recent keys only ; an
// older key's replay is no longer known to it (sessions.MaxEnded).
//
// The error matches [provider.ErrNoReplay] when there is none: the key
// has had no cloud session (it ran locally, or not at all), the provider
// gives no replay URL, or the session was not recorded or its recording
// is not ready yet. A failed call to the provider is its
// [*provider.Error].
func (r *Router) Replay(ctx context.Context, sessionKey string) (string, error) {
	key, err := normalizeKey(sessionKey)
	if err != nil {
		return "", err
	}
	var s *provider.Session
	r.mu.Lock()
	if e := r.sess.M[key]; e != nil && e.cloud != nil && !e.released.Load() {
		s = e.cloud
	}
	r.mu.Unlock()
	if s == nil {
		s = r.ended.Get(key)
	}
	if s == nil {
		return "", fmt.Errorf("%w: session key %q has had no cloud session", provider.ErrNoReplay, key)
	}
	if s.ReplayURL != "" {
		return s.ReplayURL, nil
	}
	rp, ok := r.provider.(provider.Replayer)
	if !ok {
		return "", fmt.Errorf("%w: %s gives no replay URL", provider.ErrNoReplay, r.provider.Name())
	}
	return rp.Replay(ctx, s)
}
