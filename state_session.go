package hybroute

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hybroute/hybroute/internal/config"
	"github.com/hybroute/hybroute/internal/remotetab"
	"github.com/hybroute/hybroute/internal/statesync"
	"github.com/hybroute/hybroute/route"
	"github.com/hybroute/hybroute/state"
)

// A session key's storage state goes into each of its browser sessions
// and follows the key from one browser to the other (internal/statesync's
// Keeper); each browser gets only what it may hold.

// WithInitialState loads s into every new browser session of every
// session key, before its first page ([Router.LoadState] sets one key's
// own). A state that does not pass [state.Parse]'s checks fails New with
// [state.ErrInvalid].
func WithInitialState(s *state.State) Option {
	return func(c *config.Config) { c.InitialState = s.Clone() }
}

// LoadState makes st the storage state of sessionKey: its cookies replace
// the cookies of the key's browser sessions, and its local and session
// storage are set in them. A browser session the key does not have yet
// gets it when it is made, before its first page; one it has gets it now
// (its page stays: the session storage of other origins than the page's
// is then left for the next browser session). Each browser gets only what
// it may hold: a remote browser never a cookie or a storage of a host the
// router keeps local (a private address, a .internal or .local name, a
// name whose lookup failed). st is checked as [state.Parse] checks a file:
// a bad one fails with [state.ErrInvalid], and nothing of it is loaded. st is
// copied; it is never logged.
func (r *Router) LoadState(ctx context.Context, sessionKey string, st *state.State) error {
	key, err := normalizeKey(sessionKey)
	if err != nil {
		return err
	}
	if st == nil {
		return fmt.Errorf("hybroute: load state: %w: no state", state.ErrInvalid)
	}
	st = st.Clone()
	if err := st.Check(); err != nil {
		return fmt.Errorf("hybroute: load state: %w", err)
	}
	if r.isClosed() {
		return ErrClosed
	}
	r.states.Put(key, st)
	return r.states.Load(ctx, st, r.lent(key))
}

// SaveState returns the storage state of sessionKey, in Playwright's
// storageState shape ([state.WriteFile] writes it): the cookies of its
// browser sessions (cloud and local), the local storage of every origin
// its pages went to, and the session storage of the origin each page is
// on. What was loaded into the key and one of its browsers could not hold
// (a local host's cookie kept off the cloud) is kept in it. A key with no
// browser session returns the state loaded for it, or fails with
// [ErrNoSession]. The state holds credentials: it is never logged; write
// it with state.WriteFile (mode 0600).
func (r *Router) SaveState(ctx context.Context, sessionKey string) (*state.State, error) {
	key, err := normalizeKey(sessionKey)
	if err != nil {
		return nil, err
	}
	if r.isClosed() {
		return nil, ErrClosed
	}
	st, err := r.states.Save(ctx, key, func() []statesync.Lend { return r.lent(key) })
	if errors.Is(err, statesync.ErrNone) {
		return nil, fmt.Errorf("hybroute: save state of %q: %w", key, ErrNoSession)
	}
	return st, err
}

// lent are the key's browser sessions, the one its page is on first, each
// held until it is lent (withEntry).
func (r *Router) lent(key string) []statesync.Lend {
	var out []statesync.Lend
	for _, e := range r.liveEntries(key) {
		out = append(out, func(fn func(statesync.Session) error) error {
			return r.withEntry(e, func(e *entry) error { return fn(r.stateSession(e)) })
		})
	}
	return out
}

// stateSession is e as its state sees it.
func (r *Router) stateSession(e *entry) statesync.Session {
	return statesync.Session{Key: e.key, Route: e.route,
		Browser: func(ctx context.Context) (statesync.Browser, error) { return r.stateBrowser(ctx, e) }}
}

// liveEntries are the key's browser sessions, the one its page is on
// first, each held (inUse) until withEntry lets it go.
func (r *Router) liveEntries(key string) []*entry {
	keys := r.pageFirst(key, r.lastRoute)
	r.mu.Lock()
	defer r.mu.Unlock()
	es := r.sess.Of(func(e *entry) bool { return !e.h.Dead() }, keys...)
	for _, e := range es {
		e.inUse.Add(1)
	}
	return es
}

// pageFirst is the cache keys of key, the one its page is on first: the
// one of the route its calls took last (last), when it is known.
func (r *Router) pageFirst(key string, last func(string) (route.Route, bool)) []string {
	if w, known := last(key); known && r.pol.CacheKey(key, w) == key+LocalSuffix {
		return []string{key + LocalSuffix, key}
	}
	return []string{key, key + LocalSuffix}
}

// withEntry runs fn on a held entry with its tab to itself (no call runs
// on it meanwhile), then lets the entry go.
func (r *Router) withEntry(e *entry, fn func(*entry) error) error {
	defer func() { e.touch(); r.letGo(e) }()
	e.callMu.Lock()
	defer e.callMu.Unlock()
	if e.released.Load() {
		return fmt.Errorf("hybroute: session %q: %w", e.key, ErrReleased)
	}
	err := fn(e)
	if err != nil && e.released.Load() && !errors.Is(err, ErrReleased) {
		// Released while fn ran: its tab went, and that is why fn failed.
		return fmt.Errorf("hybroute: session %q: %w: %w", e.key, ErrReleased, err)
	}
	return err
}

func (r *Router) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// startState is the state's part of making a browser session: its origins
// are tracked from now on, and the key's state, if it has one, is loaded
// before the session's first page.
func (r *Router) startState(ctx context.Context, e *entry) error {
	if _, ok := e.h.Tab().(*remotetab.RESTTab); ok {
		if r.states.Of(baseKey(e.key)) != nil {
			return errStateNoCDP
		}
		return nil
	}
	if err := statesync.TrackOrigins(e.h.Context(), e.h); err != nil {
		return err
	}
	return r.states.Start(ctx, baseKey(e.key), r.stateSession(e))
}

// followState carries the cookies of the browser session a call moved
// away from (prevKey) to the one it runs in, e, for a key that has a state
// loaded. Called with e's tab held by the call. A previous session busy
// with another call is not waited for: its cookies follow at the next move.
func (r *Router) followState(ctx context.Context, e *entry, prevKey string) error {
	key := baseKey(e.key)
	loaded := r.states.Get(key)
	if loaded == nil {
		return nil
	}
	r.mu.Lock()
	prev := r.sess.M[prevKey]
	if prev != nil {
		prev.inUse.Add(1)
	}
	r.mu.Unlock()
	if prev == nil {
		return nil
	}
	defer r.letGo(prev)
	if prev.h.Dead() || !prev.callMu.TryLock() {
		return nil
	}
	cookies, err := r.states.Cookies(ctx, r.stateSession(prev))
	prev.callMu.Unlock()
	if err != nil {
		return err
	}
	return r.states.Follow(ctx, key, loaded, prev.route, cookies, r.stateSession(e))
}

// baseKey is the session key of a cache key.
func baseKey(cacheKey string) string { return strings.TrimSuffix(cacheKey, LocalSuffix) }

// errStateNoCDP is the error of a state asked of a browser without CDP.
var errStateNoCDP = fmt.Errorf("%w: storage state needs a browser driven over CDP", ErrNoCDPEndpoint)

// stateBrowser lends e's browser to a read or a write of its state: a
// blank page of an origin goes only where e's guard would let a page go.
func (r *Router) stateBrowser(ctx context.Context, e *entry) (statesync.Browser, error) {
	if _, ok := e.h.Paged(); !ok {
		return statesync.Browser{}, errStateNoCDP // the kinds driven over CDP are the ones with pages
	}
	b := statesync.Browser{H: e.h, Front: e.frontID(), Landed: e.landedURL(),
		Visitable: func(o string) bool { return r.pol.Refuse(r.pol.Classify(ctx, o+"/"), e.route) == nil }}
	if e.bg != nil {
		b.Stub = e.bg.Stub
	}
	return b, nil
}
