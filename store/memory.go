package store

import (
	"context"
	"sync"
	"time"

	"github.com/hybroute/hybroute/internal/storeseam"
)

// Memory is the in-process [Store], the default of a router that has no
// hybroute.WithStore. Its zero value is ready to use; one Memory shared by
// several routers of one process makes them one client of the provider.
type Memory struct {
	mu        sync.Mutex
	providers map[string]*storeseam.Record
}

var _ Store = (*Memory)(nil)

func init() {
	storeseam.Edit = func(m any, provider string, fn func(*storeseam.Record)) {
		s := m.(*Memory)
		s.mu.Lock()
		defer s.mu.Unlock()
		fn(s.of(provider))
	}
	storeseam.Forget = func(m any) {
		s := m.(*Memory)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.providers = nil
	}
}

// of returns the state of provider. Called with m.mu held.
func (m *Memory) of(provider string) *storeseam.Record {
	if m.providers == nil {
		m.providers = make(map[string]*storeseam.Record)
	}
	p := m.providers[provider]
	if p == nil {
		p = &storeseam.Record{Slots: make(map[string]time.Time)}
		m.providers[provider] = p
	}
	return p
}

// Window implements [Store].
func (m *Memory) Window(_ context.Context, provider string) (time.Time, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.of(provider)
	return p.Until, p.Reason, nil
}

// OpenWindow implements [Store].
func (m *Memory) OpenWindow(_ context.Context, provider string, until time.Time, reason string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.of(provider); until.After(p.Until) {
		p.Until, p.Reason = until, reason
	}
	return nil
}

// CloseWindow implements [Store].
func (m *Memory) CloseWindow(_ context.Context, provider string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.of(provider)
	p.Until, p.Reason = time.Time{}, ""
	return nil
}

// TryProbe implements [Store].
func (m *Memory) TryProbe(_ context.Context, provider string, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, now := m.of(provider), time.Now()
	if now.Before(p.Probe) {
		p.Probe = minTime(p.Probe, now.Add(ttl))
		return false, nil
	}
	p.Probe = now.Add(ttl)
	return true, nil
}

// DoneProbe implements [Store].
func (m *Memory) DoneProbe(_ context.Context, provider string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.of(provider).Probe = time.Time{}
	return nil
}

// AcquireSlot implements [Store].
func (m *Memory) AcquireSlot(_ context.Context, provider, holder string, limit int, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, now := m.of(provider), time.Now()
	bound := now.Add(ttl)
	for h, exp := range p.Slots {
		switch {
		case !now.Before(exp):
			delete(p.Slots, h)
		case exp.After(bound):
			p.Slots[h] = bound
		}
	}
	if _, held := p.Slots[holder]; !held && len(p.Slots) >= limit {
		return false, nil
	}
	p.Slots[holder] = now.Add(ttl)
	return true, nil
}

// RenewSlot implements [Store].
func (m *Memory) RenewSlot(_ context.Context, provider, holder string, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, now := m.of(provider), time.Now()
	exp, held := p.Slots[holder]
	p.Slots[holder] = now.Add(ttl)
	return held && now.Before(exp), nil
}

// ReleaseSlot implements [Store].
func (m *Memory) ReleaseSlot(_ context.Context, provider, holder string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.of(provider).Slots, holder)
	return nil
}

// Epoch implements [Store].
func (m *Memory) Epoch(_ context.Context, provider, fresh string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.of(provider)
	if p.Epoch == "" {
		p.Epoch = fresh
	}
	return p.Epoch, nil
}

// minTime is the earlier of a and b.
func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
