package hybroute

import (
	"context"
	"fmt"
	"sync"

	"github.com/hybroute/hybroute/provider"
)

// Replay returns where the recording of sessionKey's cloud session plays:
// the URL its create answer named, else what the provider answers when
// asked ([provider.Replayer]: an API call, which [Router.Status] never
// makes). It asks about the key's open cloud session, else the last one
// released: some providers make the recording only once the session has
// ended (Browser Use), so Replay works after [Router.Release], after the
// idle reaper's release and after Close. The Router keeps the last ended
// cloud session of the most recent keys only (maxEndedSessions); an
// older key's replay is no longer known to it.
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
	if e := r.sess.m[key]; e != nil && e.cloud != nil && !e.released.Load() {
		s = e.cloud
	}
	r.mu.Unlock()
	if s == nil {
		s = r.ended.get(key)
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

// maxEndedSessions bounds the ended cloud sessions a Router keeps for
// [Router.Replay]: one per key, the most recently ended keys.
const maxEndedSessions = 1024

// endedSessions is the last ended cloud session of each key, for
// [Router.Replay], the oldest forgotten past maxEndedSessions. It has a
// lock of its own: a session's release records it outside Router.mu.
type endedSessions struct {
	mu    sync.Mutex
	m     map[string]*provider.Session
	order []string // the keys of m, oldest first
}

// remember keeps s as key's last ended cloud session, without its REST
// driver: what is kept is what a replay call names.
func (es *endedSessions) remember(key string, s *provider.Session) {
	c := *s
	c.REST = nil
	es.mu.Lock()
	defer es.mu.Unlock()
	if es.m == nil {
		es.m = make(map[string]*provider.Session)
	}
	if _, ok := es.m[key]; ok {
		for i, k := range es.order {
			if k == key {
				es.order = append(es.order[:i], es.order[i+1:]...)
				break
			}
		}
	}
	es.m[key] = &c
	es.order = append(es.order, key)
	for len(es.order) > maxEndedSessions {
		delete(es.m, es.order[0])
		es.order = es.order[1:]
	}
}

// get is key's last ended cloud session, nil when none is kept.
func (es *endedSessions) get(key string) *provider.Session {
	es.mu.Lock()
	defer es.mu.Unlock()
	return es.m[key]
}
