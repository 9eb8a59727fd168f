package statesync

import (
	"context"
	"errors"
	"fmt"

	"github.com/hybroute/hybroute/route"
	"github.com/hybroute/hybroute/state"
)

// Keeper is each session key's storage state, across its browser
// sessions: the state loaded for the key (or Initial, for every key) goes
// into each browser session the key gets, on either route, as it is made:
// the cloud session, the hybrid sidecar session, the local fallback. When
// a call moves the key from one browser to the other, the cookies of the
// one it leaves go to the one it comes to. Each browser gets only what it
// may hold (MayHold): a remote browser never gets a cookie or a storage of
// a host the router keeps local.
type Keeper struct {
	Memory
	Initial *state.State
	// MayHold says whether a browser at w may hold what belongs to rawURL
	// (the root's floor decides).
	MayHold func(ctx context.Context, rawURL string, w route.Route) bool
}

// Session is one browser session of a key, its tab held by the caller:
// its cache key, where it runs, and its browser, lent for a read or a
// write (an error for a browser without CDP).
type Session struct {
	Key     string
	Route   route.Route
	Browser func(ctx context.Context) (Browser, error)
}

// Lend runs fn on one browser session of a key, with its tab to itself,
// and lets the session go.
type Lend func(fn func(Session) error) error

// Of is the state a new browser session of key starts with, or nil.
func (k *Keeper) Of(key string) *state.State {
	if st := k.Get(key); st != nil {
		return st
	}
	return k.Initial
}

// split parts st into what may go to a browser at w (kept) and what may
// not (dropped): on the local browser every cookie may, and every origin
// MayHold lets it hold.
func (k *Keeper) split(ctx context.Context, st *state.State, w route.Route) (kept, dropped *state.State) {
	return Split(st, w == route.Local, func(rawURL string) bool { return k.MayHold(ctx, rawURL, w) })
}

// Start loads key's state, if it has one, into s, a browser session being
// made, before its first page.
func (k *Keeper) Start(ctx context.Context, key string, s Session) error {
	st := k.Of(key)
	if st == nil {
		return nil
	}
	kept, _ := k.split(ctx, st, s.Route)
	b, err := s.Browser(ctx)
	if err == nil {
		err = b.Write(ctx, kept, true, false)
	}
	if err != nil {
		return fmt.Errorf("hybroute: loading the storage state: %w", err)
	}
	return nil
}

// Load sets st, the key's state now, in each of its live sessions: their
// cookies are replaced, and the storage is set.
func (k *Keeper) Load(ctx context.Context, st *state.State, sessions []Lend) error {
	var errs []error
	for _, lend := range sessions {
		errs = append(errs, lend(func(s Session) error {
			kept, _ := k.split(ctx, st, s.Route)
			b, err := s.Browser(ctx)
			if err == nil {
				err = b.Write(ctx, kept, false, true)
			}
			if err != nil {
				return fmt.Errorf("hybroute: load state into %s session %q: %w", s.Route, s.Key, err)
			}
			return nil
		}))
	}
	return errors.Join(errs...)
}

// ErrNone is Save's error for a key with no live session and no state
// loaded.
var ErrNone = errors.New("no browser session and no state loaded")

// Save is the state of key from its live sessions (the one its page is on
// first): what no browser of the key could hold stays as loaded, the rest
// is what the browsers hold now, the page's browser's last so it wins. A
// key with no live session has the state loaded for it, or fails with
// ErrNone.
func (k *Keeper) Save(ctx context.Context, key string, live func() []Lend) (*state.State, error) {
	loaded := k.Get(key)
	sessions := live()
	if len(sessions) == 0 {
		if loaded == nil {
			return nil, ErrNone
		}
		return loaded.Clone(), nil
	}
	beyond := loaded
	snaps := make([]*state.State, len(sessions))
	var failed error
	for i, lend := range sessions {
		if failed != nil {
			// Every session was held for its lend: each is let go, read
			// or not.
			_ = lend(func(Session) error { return nil })
			continue
		}
		failed = lend(func(s Session) error {
			_, beyond = k.split(ctx, beyond, s.Route)
			b, err := s.Browser(ctx)
			var snap *state.State
			if err == nil {
				snap, err = b.Read(ctx, OriginsOf(loaded))
			}
			if err != nil {
				return fmt.Errorf("hybroute: save state of %s session %q: %w", s.Route, s.Key, err)
			}
			snaps[i] = snap
			return nil
		})
	}
	if failed != nil {
		return nil, failed
	}
	out := beyond
	for i := len(snaps) - 1; i >= 0; i-- {
		out = out.Merge(snaps[i])
	}
	if loaded != nil {
		k.Put(key, out.Clone())
	}
	return out.Clone(), nil
}

// Cookies reads the cookies of prev, the browser session a call moves
// away from.
func (k *Keeper) Cookies(ctx context.Context, prev Session) ([]state.Cookie, error) {
	b, err := prev.Browser(ctx)
	var cookies []state.Cookie
	if err == nil {
		cookies, err = b.ReadCookies(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("hybroute: carrying the cookies from %s session %q: %w", prev.Route, prev.Key, err)
	}
	return cookies, nil
}

// Follow carries cookies, read from the browser session at from that a
// call of key moved away from, to next, the one it runs in; loaded is the
// key's state.
func (k *Keeper) Follow(ctx context.Context, key string, loaded *state.State, from route.Route, cookies []state.Cookie, next Session) error {
	_, beyond := k.split(ctx, &state.State{Cookies: loaded.Cookies}, from)
	carried := Carried(loaded, beyond, cookies)
	k.Put(key, carried)
	kept, _ := k.split(ctx, &state.State{Cookies: carried.Cookies}, next.Route)
	b, err := next.Browser(ctx)
	if err == nil {
		err = b.WriteCookies(ctx, kept.Cookies, false)
	}
	if err != nil {
		return fmt.Errorf("hybroute: carrying the cookies to %s session %q: %w", next.Route, next.Key, err)
	}
	return nil
}
