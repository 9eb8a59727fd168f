package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/internal/redistest"
	"github.com/hybroute/hybroute/internal/storetest"
	"github.com/hybroute/hybroute/redisstore"
)

var _ hybroute.Store = (*redisstore.Store)(nil)

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

// BenchmarkStore is the cost of one store call on loopback Redis, beside
// the in-process store.
func BenchmarkStore(b *testing.B) {
	srv := redistest.Start(b)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	ctx := context.Background()
	for _, s := range []struct {
		name string
		s    hybroute.Store
	}{{"Memory", &hybroute.MemoryStore{}}, {"Redis", redisstore.New(c)}} {
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
