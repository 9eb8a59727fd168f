package hybroute

import (
	"context"
	"sync"
	"time"
)

// Store holds what the replicas of a fleet must agree on about a provider:
// its back-off window, the one probe that asks it whether an outage is
// over, and the leases on its concurrent sessions. The default,
// [MemoryStore], is in-process; [WithStore] sets another, such as the
// Redis one of github.com/hybroute/hybroute/redisstore, so that every
// router sharing it acts as one client of the provider.
//
// A store is never on the security floor: the router bounds every call by
// a short timeout, and on an error or a timeout it carries on with its own
// in-process state (one warning per outage, one line when the store is
// back). A store can make the fleet less coordinated, never a call fail.
//
// Every method is safe for concurrent use. provider is the provider's
// Name(). Instants are the caller's clock's (time.Now). A store shared by
// processes must not hand one replica's instants to another, whose clock
// may drift from it: the Redis store keeps a window as its length on the
// server's clock, and leases as expiries read from that clock too.
type Store interface {
	// Window returns the provider's open back-off window: the instant new
	// sessions may ask the provider again, and why it opened. A zero until
	// means no window was opened (or it was closed).
	Window(ctx context.Context, provider string) (until time.Time, reason string, err error)
	// OpenWindow opens the window until that instant, or extends it: a
	// window is never shortened by a later, shorter one.
	OpenWindow(ctx context.Context, provider string, until time.Time, reason string) error
	// CloseWindow closes the window: the provider answered again.
	CloseWindow(ctx context.Context, provider string) error
	// TryProbe claims the provider's one probe for ttl and reports whether
	// the caller got it. A claim nobody gives back expires after ttl. A
	// claim found with no expiry, or with more than ttl left, is cut to
	// ttl from now: no claim, however it was written, keeps the probe
	// from every later caller for longer than the lease that caller would
	// take.
	TryProbe(ctx context.Context, provider string, ttl time.Duration) (bool, error)
	// DoneProbe gives the probe claim back.
	DoneProbe(ctx context.Context, provider string) error

	// AcquireSlot takes one of the provider's limit session slots for
	// holder (a name unique to one session of one router), as a lease of
	// ttl, and reports whether it got one. Expired leases do not count.
	// Acquiring a slot holder already holds renews it and succeeds, even
	// if the limit has since been lowered. A lease found ending more than
	// ttl from now is cut to end ttl from now, so that no holder, however
	// it was written, outlives one lease of the caller's.
	AcquireSlot(ctx context.Context, provider, holder string, limit int, ttl time.Duration) (bool, error)
	// RenewSlot extends holder's lease to ttl from now, and reports
	// whether the store still had it. A lease the store had lost (it
	// expired while the store was unreachable, or the store restarted
	// empty) is added again, even past the limit, and RenewSlot reports
	// false: the session it stands for is still open, and the count must
	// see it for the cap to hold.
	RenewSlot(ctx context.Context, provider, holder string, ttl time.Duration) (bool, error)
	// ReleaseSlot gives holder's slot back; releasing a slot not held is
	// no error.
	ReleaseSlot(ctx context.Context, provider, holder string) error
}

// MemoryStore is the in-process [Store], the default of a router that has
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

var _ Store = (*MemoryStore)(nil)

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

// Window implements [Store].
func (m *MemoryStore) Window(_ context.Context, provider string) (time.Time, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.of(provider)
	return p.until, p.reason, nil
}

// OpenWindow implements [Store].
func (m *MemoryStore) OpenWindow(_ context.Context, provider string, until time.Time, reason string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.of(provider); until.After(p.until) {
		p.until, p.reason = until, reason
	}
	return nil
}

// CloseWindow implements [Store].
func (m *MemoryStore) CloseWindow(_ context.Context, provider string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.of(provider)
	p.until, p.reason = time.Time{}, ""
	return nil
}

// TryProbe implements [Store].
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

// DoneProbe implements [Store].
func (m *MemoryStore) DoneProbe(_ context.Context, provider string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.of(provider).probe = time.Time{}
	return nil
}

// AcquireSlot implements [Store].
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

// RenewSlot implements [Store].
func (m *MemoryStore) RenewSlot(_ context.Context, provider, holder string, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, now := m.of(provider), time.Now()
	exp, held := p.slots[holder]
	p.slots[holder] = now.Add(ttl)
	return held && now.Before(exp), nil
}

// ReleaseSlot implements [Store].
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
