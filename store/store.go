// Package store names what the replicas of a fleet of routers must agree
// on about a provider: its back-off window, the one probe that asks it
// whether an outage is over, and the leases on its concurrent sessions.
// A router keeps them in a [Store]: its own in-process one
// ([Memory]) unless hybroute.WithStore sets another, such as
// the Redis one of github.com/hybroute/hybroute/redisstore, so that every
// router sharing it acts as one client of the provider. A store of your
// own implements [Store] and runs the conformance suite the library's
// stores run.
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
package store

import (
	"context"
	"time"
)

// Store holds a provider's [Health] and its [Slots].
type Store interface {
	Health
	Slots
}

// Health is the provider's back-off window and its one probe.
type Health interface {
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
}

// Slots are the leases on the provider's concurrent sessions, which keep
// a fleet to its concurrency cap.
type Slots interface {
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
	// Epoch names the store's memory of provider's leases. The first
	// call on a store that has none sets it to fresh, the name the caller
	// proposes (a random one), and every call returns the name set; it
	// changes only when the store forgets the leases with it (a restart
	// with nothing on disk, a flush). A router that had read another
	// epoch knows the store forgot the leases of the fleet's open
	// sessions, and takes no slot until their routers have had a lease's
	// time to register them again.
	Epoch(ctx context.Context, provider, fresh string) (string, error)
}
