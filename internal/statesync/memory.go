package statesync

import (
	"sync"

	"github.com/hybroute/hybroute/state"
)

// Memory is each session key's state, once one was loaded. Its own lock:
// it is asked while a session is made, outside the router's. The zero
// value is empty and ready.
type Memory struct {
	mu sync.Mutex
	m  map[string]*state.State
}

// Get is key's state, or nil.
func (s *Memory) Get(key string) *state.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key]
}

// Put makes st key's state.
func (s *Memory) Put(key string, st *state.State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*state.State{}
	}
	s.m[key] = st
}

// Forget drops key's state.
func (s *Memory) Forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
}
