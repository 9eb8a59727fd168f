package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hybroute/hybroute/hybroutetest/storetest"
	"github.com/hybroute/hybroute/internal/redistest"
	"github.com/hybroute/hybroute/redisstore"
	"github.com/hybroute/hybroute/store"
)

var _ store.Store = (*redisstore.Store)(nil)

func client(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestConformance(t *testing.T) {
	srv := redistest.Start(t)
	c := client(t, srv.Addr)
	n := 0
	storetest.Run(t, func(t *testing.T) storetest.Store {
		n++ // a prefix of its own: each subtest starts empty
		return redisstore.New(c, redisstore.WithPrefix(fmt.Sprintf("t%d:", n)))
	})
}

// The prefix keeps fleets apart on one Redis; the keys are the prefix's.
func TestPrefix(t *testing.T) {
	srv := redistest.Start(t)
	c := client(t, srv.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, b := redisstore.New(c, redisstore.WithPrefix("a:")), redisstore.New(c, redisstore.WithPrefix("b:"))
	if ok, err := a.AcquireSlot(ctx, "p", "h", 1, time.Minute); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if ok, err := b.AcquireSlot(ctx, "p", "h2", 1, time.Minute); err != nil || !ok {
		t.Fatalf("fleet b shares fleet a's cap: %v %v", ok, err)
	}
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k != "a:{p}:slots" && k != "b:{p}:slots" {
			t.Errorf("unexpected key %q", k)
		}
	}
	if len(keys) != 2 {
		t.Errorf("keys %q, want a:{p}:slots and b:{p}:slots", keys)
	}
}

// Two replicas whose clocks are two hours apart share one Redis: the
// window one opens for 10 s has 10 s left for the other too (on the
// other's clock), a shorter one from the other does not shorten it, a
// longer one extends it for both, and it ends for both when the server
// says so. With the window's end written as an instant of the clock
// that opened it, the slow replica would wait two hours more and the
// fast one not at all.
func TestWindowOnTheServersClock(t *testing.T) {
	srv := redistest.Start(t)
	c := client(t, srv.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clock := func(skew time.Duration) func() time.Time {
		return func() time.Time { return time.Now().Add(skew) }
	}
	fast, slow := clock(time.Hour), clock(-time.Hour)
	a := redisstore.New(c, redisstore.WithClock(fast))
	b := redisstore.New(c, redisstore.WithClock(slow))
	// left is how long the window has left for s, on s's clock.
	left := func(s *redisstore.Store, now func() time.Time) time.Duration {
		t.Helper()
		until, reason, err := s.Window(ctx, "p")
		if err != nil {
			t.Fatal(err)
		}
		if !until.IsZero() && reason != "rate_limited" {
			t.Fatalf("reason %q", reason)
		}
		if until.IsZero() {
			return 0
		}
		return until.Sub(now())
	}
	near := func(got, want time.Duration, what string) {
		t.Helper()
		// The margin is the round trips of a loaded machine; the skew
		// is hours.
		if got <= 0 || got > want || got < want-2*time.Second {
			t.Fatalf("%s: %v left, want %v (less the round trips)", what, got, want)
		}
	}
	if err := a.OpenWindow(ctx, "p", fast().Add(10*time.Second), "rate_limited"); err != nil {
		t.Fatal(err)
	}
	near(left(a, fast), 10*time.Second, "the replica that opened it")
	near(left(b, slow), 10*time.Second, "a replica whose clock is two hours behind")
	if err := b.OpenWindow(ctx, "p", slow().Add(3*time.Second), "unavailable"); err != nil {
		t.Fatal(err)
	}
	near(left(a, fast), 10*time.Second, "a shorter window on a slow clock shortened it")
	if err := a.CloseWindow(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if err := b.OpenWindow(ctx, "p", slow().Add(600*time.Millisecond), "rate_limited"); err != nil {
		t.Fatal(err)
	}
	near(left(a, fast), 600*time.Millisecond, "a window the slow replica opened, on the fast clock")
	time.Sleep(time.Second)
	if got := left(a, fast); got > 0 {
		t.Fatalf("the window ended on the server and the fast replica still sees %v", got)
	}
	if got := left(b, slow); got > 0 {
		t.Fatalf("the window ended on the server and the slow replica still sees %v", got)
	}
}

// BenchmarkStore is the cost of one store call on loopback Redis, beside
// the in-process store.
func BenchmarkStore(b *testing.B) {
	srv := redistest.Start(b)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	ctx := context.Background()
	for _, s := range []struct {
		name string
		s    store.Store
	}{{"Memory", &store.Memory{}}, {"Redis", redisstore.New(c)}} {
		b.Run(s.name+"/Window", func(b *testing.B) {
			for b.Loop() {
				if _, _, err := s.s.Window(ctx, "p"); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(s.name+"/AcquireRelease", func(b *testing.B) {
			for b.Loop() {
				if _, err := s.s.AcquireSlot(ctx, "p", "h", 10, time.Minute); err != nil {
					b.Fatal(err)
				}
				if err := s.s.ReleaseSlot(ctx, "p", "h"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
