package redisstore

import "time"

// WithClock sets the clock the store converts windows on, so that a test
// can give two stores clocks that disagree.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }
