package hybroute

import (
	"context"
	"sync"
	"time"

	"github.com/hybroute/hybroute/store"
)

// MemoryStore is the in-process [store.Store], the default of a router that has
// no [WithStore]. Its zero value is ready to use; one MemoryStore shared
// by several routers of one process makes them one client of the provider.
type MemoryStore struct {
	mu        sync.Mutex
	providers map[string]*memProvider
}

type memProvider struct {
	until  time.Time
	reason string
	probe  time.Time            // the probe claim's expiry; zero: free
	slots  map[string]time.Time // holder -> lease expiry
}

var _ store.Store = (*MemoryStore)(nil)

// of returns the state of provider. Called with m.mu held.
func (m *MemoryStore) of(provider string) *memProvider {
	if m.providers == nil {
		m.providers = make(map[string]*memProvider)
	}
	p := m.providers[provider]
	if p == nil {
		p = &memProvider{slots: make(map[string]time.Time)}
		m.providers[provider] = p
	}
	return p
}

// Window implements [store.Store].
func (m *MemoryStore) Window(_ context.Context, provider string) (time.Time, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.of(provider)
	return p.until, p.reason, nil
}

// OpenWindow implements [store.Store].
func (m *MemoryStore) OpenWindow(_ context.Context, provider string, until time.Time, reason string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.of(provider); until.After(p.until) {
		p.until, p.reason = until, reason
	}
	return nil
}

// CloseWindow implements [store.Store].
func (m *MemoryStore) CloseWindow(_ context.Context, provider string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.of(provider)
	p.until, p.reason = time.Time{}, ""
	return nil
}

// TryProbe implements [store.Store].
func (m *MemoryStore) TryProbe(_ context.Context, provider string, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, now := m.of(provider), time.Now()
	if now.Before(p.probe) {
		p.probe = minTime(p.probe, now.Add(ttl))
		return false, nil
	}
	p.probe = now.Add(ttl)
	return true, nil
}

// DoneProbe implements [store.Store].
func (m *MemoryStore) DoneProbe(_ context.Context, provider string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.of(provider).probe = time.Time{}
	return nil
}

// AcquireSlot implements [store.Store].
func (m *MemoryStore) AcquireSlot(_ context.Context, provider, holder string, limit int, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, now := m.of(provider), time.Now()
	bound := now.Add(ttl)
	for h, exp := range p.slots {
		switch {
		case !now.Before(exp):
			delete(p.slots, h)
		case exp.After(bound):
			p.slots[h] = bound
		}
	}
	if _, held := p.slots[holder]; !held && len(p.slots) >= limit {
		return false, nil
	}
	p.slots[holder] = now.Add(ttl)
	return true, nil
}

// RenewSlot implements [store.Store].
func (m *MemoryStore) RenewSlot(_ context.Context, provider, holder string, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, now := m.of(provider), time.Now()
	exp, held := p.slots[holder]
	p.slots[holder] = now.Add(ttl)
	return held && now.Before(exp), nil
}

// ReleaseSlot implements [store.Store].
func (m *MemoryStore) ReleaseSlot(_ context.Context, provider, holder string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.of(provider).slots, holder)
	return nil
}

// minTime is the earlier of a and b.
func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
