// Package storetest is the conformance suite of a store.Store, the state
// Routers share: every implementation runs it (hybroute's in-process
// store, redisstore, and a user's own), so they cannot drift apart in what
// a window, a probe or a lease means. A user's store runs it from a test:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) storetest.Store { return newEmptyStore(t) })
//	}
//
// Some subtests wait out short leases (a few hundred milliseconds each).
package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hybroute/hybroute/store"
)

// Store is the interface the suite holds a store to.
type Store = store.Store

// long is a ttl no test outlives; short is one every test waits out with
// expire.
const (
	long  = time.Minute
	short = 150 * time.Millisecond
)

// roundTrips bounds how far an end read back may be from the one written:
// a store on a server converts it to a length and back, one round trip
// each way, on a machine that may be loaded.
const roundTrips = 2 * time.Second

// expire waits until a lease of ttl short taken before the call has
// surely expired.
func expire() { time.Sleep(3 * short) }

// Run runs the suite; newStore returns an empty store for each subtest.
func Run(t *testing.T, newStore func(t *testing.T) Store) {
	ctx := func(t *testing.T) context.Context {
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		t.Cleanup(cancel)
		return c
	}
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	mustBool := func(t *testing.T, want bool, got bool, err error, what string) {
		t.Helper()
		must(t, err)
		if got != want {
			t.Fatalf("%s: got %v, want %v", what, got, want)
		}
	}

	t.Run("Window", func(t *testing.T) {
		s, c := newStore(t), ctx(t)
		until, reason, err := s.Window(c, "p")
		must(t, err)
		if !until.IsZero() || reason != "" {
			t.Fatalf("a new store has a window: %v %q", until, reason)
		}
		// A shared store may keep a window as its length on its own
		// clock and give it back on the caller's: the end it reads
		// back is the one written, give or take the round trips.
		window := func(want time.Duration, wantReason string, what string) {
			t.Helper()
			until, reason, err := s.Window(c, "p")
			must(t, err)
			if d := until.Sub(time.Now().Add(want)); d < -roundTrips || d > roundTrips || reason != wantReason {
				t.Fatalf("%s: got %v left, %q; want %v, %q", what, time.Until(until), reason, want, wantReason)
			}
		}
		must(t, s.OpenWindow(c, "p", time.Now().Add(17*time.Second), "rate_limited"))
		window(17*time.Second, "rate_limited", "window")
		// A shorter later window never shortens the open one; a longer
		// one extends it, with its reason.
		must(t, s.OpenWindow(c, "p", time.Now().Add(5*time.Second), "unavailable"))
		window(17*time.Second, "rate_limited", "a shorter window shortened the open one")
		must(t, s.OpenWindow(c, "p", time.Now().Add(30*time.Second), "unavailable"))
		window(30*time.Second, "unavailable", "a longer window did not extend")
		// Providers are separate.
		until, _, err = s.Window(c, "other")
		must(t, err)
		if !until.IsZero() {
			t.Fatalf("another provider shares the window: %v", until)
		}
		must(t, s.CloseWindow(c, "p"))
		until, reason, err = s.Window(c, "p")
		must(t, err)
		if !until.IsZero() || reason != "" {
			t.Fatalf("closed window still open: %v %q", until, reason)
		}
		// After a close, any window opens, however short.
		must(t, s.OpenWindow(c, "p", time.Now().Add(6*time.Second), "timeout"))
		window(6*time.Second, "timeout", "window after close")
	})

	t.Run("WindowEnds", func(t *testing.T) {
		s, c := newStore(t), ctx(t)
		must(t, s.OpenWindow(c, "p", time.Now().Add(short), "timeout"))
		expire()
		if until, _, err := s.Window(c, "p"); err != nil || time.Now().Before(until) {
			t.Fatalf("a window past its end is still open: %v %v", until, err)
		}
	})

	t.Run("Probe", func(t *testing.T) {
		s, c := newStore(t), ctx(t)
		ok, err := s.TryProbe(c, "p", long)
		mustBool(t, true, ok, err, "first claim")
		ok, err = s.TryProbe(c, "p", long)
		mustBool(t, false, ok, err, "second claim while the first holds")
		ok, err = s.TryProbe(c, "other", long)
		mustBool(t, true, ok, err, "another provider's claim")
		must(t, s.DoneProbe(c, "p"))
		ok, err = s.TryProbe(c, "p", short)
		mustBool(t, true, ok, err, "claim after done")
		expire()
		ok, err = s.TryProbe(c, "p", long)
		mustBool(t, true, ok, err, "claim after the previous one expired")
	})

	t.Run("ProbeOneWinner", func(t *testing.T) {
		s, c := newStore(t), ctx(t)
		var wins atomic.Int32
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				if ok, err := s.TryProbe(c, "p", long); err != nil {
					t.Error(err)
				} else if ok {
					wins.Add(1)
				}
			})
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("%d concurrent probe claims won, want 1", wins.Load())
		}
	})

	t.Run("Slots", func(t *testing.T) {
		s, c := newStore(t), ctx(t)
		for i := range 3 {
			ok, err := s.AcquireSlot(c, "p", fmt.Sprint("h", i), 3, long)
			mustBool(t, true, ok, err, fmt.Sprint("slot ", i))
		}
		ok, err := s.AcquireSlot(c, "p", "h3", 3, long)
		mustBool(t, false, ok, err, "slot past the cap")
		ok, err = s.AcquireSlot(c, "p", "h0", 3, long)
		mustBool(t, true, ok, err, "a holder acquiring again (a renewal)")
		ok, err = s.AcquireSlot(c, "other", "h3", 3, long)
		mustBool(t, true, ok, err, "another provider's slot")
		must(t, s.ReleaseSlot(c, "p", "h1"))
		must(t, s.ReleaseSlot(c, "p", "h1")) // twice: no error
		must(t, s.ReleaseSlot(c, "p", "never"))
		ok, err = s.AcquireSlot(c, "p", "h3", 3, long)
		mustBool(t, true, ok, err, "slot after a release")
		ok, err = s.AcquireSlot(c, "p", "h4", 3, long)
		mustBool(t, false, ok, err, "the cap again")
	})

	t.Run("SlotLeasesExpire", func(t *testing.T) {
		s, c := newStore(t), ctx(t)
		ok, err := s.AcquireSlot(c, "p", "dead", 1, short)
		mustBool(t, true, ok, err, "slot")
		ok, err = s.AcquireSlot(c, "p", "alive", 1, long)
		mustBool(t, false, ok, err, "slot past the cap")
		expire()
		ok, err = s.AcquireSlot(c, "p", "alive", 1, long)
		mustBool(t, true, ok, err, "slot after the holder's lease expired")
	})

	// A renewal finds a lease the store lost, reports it, and adds it
	// again, past the limit: its session is still open, and the count
	// must see it, or a new session would take its slot and the fleet
	// would run over the cap for as long as it lives.
	t.Run("SlotRenewRegistersALostLease", func(t *testing.T) {
		s, c := newStore(t), ctx(t)
		ok, err := s.AcquireSlot(c, "p", "lost", 1, short)
		mustBool(t, true, ok, err, "slot")
		expire() // as if the store had forgotten it
		ok, err = s.AcquireSlot(c, "p", "new", 1, long)
		mustBool(t, true, ok, err, "slot after the lease was lost")
		ok, err = s.RenewSlot(c, "p", "lost", long)
		mustBool(t, false, ok, err, "renewing a lost lease reports it lost")
		ok, err = s.RenewSlot(c, "p", "lost", long)
		mustBool(t, true, ok, err, "the renewal registered it again")
		must(t, s.ReleaseSlot(c, "p", "new"))
		ok, err = s.AcquireSlot(c, "p", "next", 1, long)
		mustBool(t, false, ok, err, "the registered lease holds the cap")
		ok, err = s.AcquireSlot(c, "p", "next", 2, long)
		mustBool(t, true, ok, err, "one lease counted, not two")
	})

	// A probe claim holds for the ttl of the caller that finds it at
	// most: one with more left (or none, in a store that allows that) is
	// cut, so that no claim keeps the probe from everyone for ever.
	t.Run("ProbeClaimBounded", func(t *testing.T) {
		s, c := newStore(t), ctx(t)
		ok, err := s.TryProbe(c, "p", time.Hour)
		mustBool(t, true, ok, err, "claim")
		ok, err = s.TryProbe(c, "p", short)
		mustBool(t, false, ok, err, "the claim holds")
		expire()
		ok, err = s.TryProbe(c, "p", long)
		mustBool(t, true, ok, err, "a claim past the finder's ttl was cut to it")
	})

	// A slot lease holds for the ttl of the caller that finds it at most.
	t.Run("SlotLeaseBounded", func(t *testing.T) {
		s, c := newStore(t), ctx(t)
		ok, err := s.AcquireSlot(c, "p", "far", 1, time.Hour)
		mustBool(t, true, ok, err, "slot")
		ok, err = s.AcquireSlot(c, "p", "near", 1, short)
		mustBool(t, false, ok, err, "the lease holds")
		expire()
		ok, err = s.AcquireSlot(c, "p", "near", 1, long)
		mustBool(t, true, ok, err, "a lease past the finder's ttl was cut to it")
	})

	t.Run("SlotRenew", func(t *testing.T) {
		s, c := newStore(t), ctx(t)
		ok, err := s.AcquireSlot(c, "p", "h", 1, short)
		mustBool(t, true, ok, err, "slot")
		ok, err = s.RenewSlot(c, "p", "h", long)
		mustBool(t, true, ok, err, "renewal")
		expire() // past the first ttl, within the renewed one
		ok, err = s.AcquireSlot(c, "p", "other", 1, long)
		mustBool(t, false, ok, err, "the renewed lease still holds the slot")
		ok, err = s.RenewSlot(c, "p", "unknown", long)
		mustBool(t, false, ok, err, "renewing a lease the store does not have")
	})

	// The epoch is set once, by the first caller, and stays: a caller that
	// reads another one knows the store forgot its leases.
	t.Run("Epoch", func(t *testing.T) {
		s, c := newStore(t), ctx(t)
		e, err := s.Epoch(c, "p", "first")
		must(t, err)
		if e != "first" {
			t.Fatalf("the epoch of an empty store: got %q, want the proposed %q", e, "first")
		}
		e, err = s.Epoch(c, "p", "second")
		must(t, err)
		if e != "first" {
			t.Fatalf("the epoch changed to %q with nothing forgotten, want %q", e, "first")
		}
		e, err = s.Epoch(c, "other", "third")
		must(t, err)
		if e != "third" {
			t.Fatalf("another provider's epoch: got %q, want %q", e, "third")
		}
	})

	t.Run("SlotCapUnderContention", func(t *testing.T) {
		s, c := newStore(t), ctx(t)
		var got atomic.Int32
		var wg sync.WaitGroup
		for i := range 50 {
			wg.Go(func() {
				ok, err := s.AcquireSlot(c, "p", fmt.Sprint("h", i), 5, long)
				if err != nil {
					t.Error(err)
				} else if ok {
					got.Add(1)
				}
			})
		}
		wg.Wait()
		if got.Load() != 5 {
			t.Fatalf("%d of 50 concurrent acquisitions got a slot, want 5", got.Load())
		}
	})
}
