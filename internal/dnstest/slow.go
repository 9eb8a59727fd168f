package dnstest

import (
	"context"
	"net/netip"
	"sync"
	"time"
)

// Slow answers every name after a delay, as an uncached DNS does, and
// counts: lookups per name, and the most lookups in flight at once. It
// honours its context, as net.Resolver does.
type Slow struct {
	delay time.Duration
	// Answer gives the addresses of host for its nth lookup (from 1); nil
	// means a public stand-in address. Set it before the first lookup.
	Answer func(host string, nth int) []netip.Addr

	mu       sync.Mutex
	n        map[string]int
	inFlight int
	maxIn    int
	total    int
}

// NewSlow is a resolver that answers after delay.
func NewSlow(delay time.Duration) *Slow {
	return &Slow{delay: delay, n: make(map[string]int)}
}

// LookupNetIP answers host after the delay, or ends with ctx.
func (s *Slow) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	s.mu.Lock()
	s.n[host]++
	nth := s.n[host]
	s.total++
	s.inFlight++
	s.maxIn = max(s.maxIn, s.inFlight)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}()
	t := time.NewTimer(s.delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
	}
	if s.Answer != nil {
		return s.Answer(host, nth), nil
	}
	return Addrs("93.184.215.14"), nil
}

// Counts returns the total number of lookups, the most in flight at once,
// and the lookups of host.
func (s *Slow) Counts(host string) (total, maxInFlight, ofHost int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total, s.maxIn, s.n[host]
}
