package admission

import "iter"

// Bounded sessions: past a cap on the sessions, or on the local browser's
// memory, a new session first ends the least recently used idle ones. The
// root owns the sessions and their locks; these are the choices it makes
// with them.

// LeastRecent is the session of all that idle accepts with the oldest
// last use; ok is false when idle accepts none. idle returns a session's
// last use (any clock that grows) and whether it may be ended now.
func LeastRecent[T any](all iter.Seq[T], idle func(T) (lastUsed int64, ok bool)) (victim T, ok bool) {
	var oldest int64
	for s := range all {
		last, free := idle(s)
		if free && (!ok || last < oldest) {
			victim, oldest, ok = s, last, true
		}
	}
	return victim, ok
}

// MemoryShed is how many of n local sessions to end for a browser that
// uses used bytes to come back under budget, and the share of the
// browser each holds (about an equal one). needRoom says a new session
// waits for room: its share must fit too. Zero: nothing to end. At least
// one is ended when any is.
func MemoryShed(used, budget int64, n int, needRoom bool) (shed int, per int64) {
	if n > 0 {
		per = used / int64(n)
	}
	want := used
	if needRoom {
		want += per
	}
	if want <= budget {
		return 0, per
	}
	shed = 1
	if per > 0 {
		shed = max(1, int((want-budget+per-1)/per))
	}
	return shed, per
}

// maxEvictedKeys bounds the keys remembered as evicted, so that their next
// call can say so; past it they are forgotten (the call still works).
const maxEvictedKeys = 4096

// Evicted is the keys whose session was ended to make room, until their
// next call takes the news. Its owner locks it. The zero value is empty
// and ready.
type Evicted struct{ m map[string]struct{} }

// Mark remembers that key's session was evicted.
func (s *Evicted) Mark(key string) {
	if s.m == nil || len(s.m) >= maxEvictedKeys {
		s.m = make(map[string]struct{})
	}
	s.m[key] = struct{}{}
}

// Take reports, once, that key's session was evicted.
func (s *Evicted) Take(key string) bool {
	_, ok := s.m[key]
	delete(s.m, key)
	return ok
}
