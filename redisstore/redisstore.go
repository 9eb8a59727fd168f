// Package redisstore is a hybroute.Store on Redis, so that every router of
// a fleet shares one provider back-off window, one probe and one
// concurrency cap:
//
//	client := redis.NewClient(&redis.Options{Addr: "redis:6379"})
//	r, err := hybroute.New(provider,
//		hybroute.WithStore(redisstore.New(client)),
//		hybroute.WithProviderConcurrency(25))
//
// It takes any redis.UniversalClient: a single node, Sentinel or Cluster.
// Each operation is one command or one Lua script on one key, so it is
// atomic, and a provider's keys share a hash tag, so they sit on one
// Cluster slot. Time is the Redis server's: a lease's expiry is read from
// its clock (TIME), and a back-off window is a key that expires when the
// window ends (its length, not its end, is what a replica writes and
// reads), so replicas whose clocks disagree still agree on both.
//
// The router bounds every call and falls back to its in-process state when
// Redis is unreachable or slow (see hybroute.WithStore); this package only
// reports the errors.
package redisstore

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// Store is the Redis store. It satisfies hybroute.Store.
type Store struct {
	c      redis.UniversalClient
	prefix string
	now    func() time.Time // the callers' clock: windows are converted to and from lengths on it
}

// Option configures a [Store].
type Option func(*Store)

// WithPrefix sets the prefix of every key (default "hybroute:"), so that
// several fleets, or other applications, can share one Redis.
func WithPrefix(p string) Option { return func(s *Store) { s.prefix = p } }

// New returns a store on client. The client stays the caller's: close it
// after the routers that use the store.
func New(client redis.UniversalClient, opts ...Option) *Store {
	s := &Store{c: client, prefix: "hybroute:", now: time.Now}
	for _, o := range opts {
		if o != nil {
			o(s)
		}
	}
	return s
}

// key is the key of one of provider's records. The provider's name is a
// hash tag, so its keys share a Cluster slot.
func (s *Store) key(provider, what string) string {
	return s.prefix + "{" + provider + "}:" + what
}

// The back-off window is one key, <prefix>{provider}:backoff, holding the
// reason and expiring when the window ends, on the server's clock. A
// replica writes the window's length and reads the time left (PTTL), each
// converted on its own clock: the instants it sees are its own clock's,
// whatever the others' say. (An absolute end written by one replica would
// be read shifted by the drift between their clocks.)

// openWindow sets the window if it ends later than the one stored.
// KEYS[1] the window; ARGV length (ms), reason.
var openWindow = redis.NewScript(`
if tonumber(ARGV[1]) > redis.call('PTTL', KEYS[1]) then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[1])
end
return 1
`)

// window reads the window: {ms left, reason}, or 0 and no reason when
// none is open. Only the reason's first maxReason bytes cross the wire:
// the router cuts it shorter still, and a key written by something else
// may hold megabytes.
// KEYS[1] the window; ARGV maxReason.
var window = redis.NewScript(`
local left = redis.call('PTTL', KEYS[1])
if left <= 0 then return {0, ''} end
return {left, redis.call('GETRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)}
`)

// maxReason bounds the reason Window reads back.
const maxReason = 1024

// Window implements hybroute.Store. The end is the caller's clock's now
// plus the time the server says is left.
func (s *Store) Window(ctx context.Context, provider string) (time.Time, string, error) {
	v, err := window.Run(ctx, s.c, []string{s.key(provider, "backoff")}, maxReason).Slice()
	if err != nil {
		return time.Time{}, "", err
	}
	if len(v) != 2 {
		return time.Time{}, "", errors.New("redisstore: malformed window record")
	}
	left, _ := v[0].(int64)
	reason, _ := v[1].(string)
	if left <= 0 {
		return time.Time{}, "", nil
	}
	return s.now().Add(time.Duration(left) * time.Millisecond), reason, nil
}

// OpenWindow implements hybroute.Store. until is on the caller's clock;
// the server keeps the window's length from now, rounded up to a
// millisecond. An end already past opens nothing.
func (s *Store) OpenWindow(ctx context.Context, provider string, until time.Time, reason string) error {
	d := until.Sub(s.now())
	if d <= 0 {
		return nil
	}
	ms := (d + time.Millisecond - 1) / time.Millisecond
	return openWindow.Run(ctx, s.c, []string{s.key(provider, "backoff")}, int64(ms), reason).Err()
}

// CloseWindow implements hybroute.Store.
func (s *Store) CloseWindow(ctx context.Context, provider string) error {
	return s.c.Del(ctx, s.key(provider, "backoff")).Err()
}

// tryProbe claims the probe for ttl, or cuts a claim with no expiry, or
// with more than ttl left, to ttl: a claim written without one (by hand,
// by another program, or by a client that lost the PX) would keep every
// router from the provider for ever.
// KEYS[1] the claim; ARGV ttl (ms).
var tryProbe = redis.NewScript(`
if redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1]) then return 1 end
local left = redis.call('PTTL', KEYS[1])
if left == -1 or left > tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return 0
`)

// TryProbe implements hybroute.Store.
func (s *Store) TryProbe(ctx context.Context, provider string, ttl time.Duration) (bool, error) {
	n, err := tryProbe.Run(ctx, s.c, []string{s.key(provider, "probe")}, ttlMS(ttl)).Int()
	return n == 1, err
}

// DoneProbe implements hybroute.Store.
func (s *Store) DoneProbe(ctx context.Context, provider string) error {
	return s.c.Del(ctx, s.key(provider, "probe")).Err()
}

// The leases are a sorted set: holder -> expiry in the server's unix ms.
// Every script first drops the expired ones. The set itself expires with
// its longest lease. An acquisition also cuts every lease that ends more
// than its ttl from now to end then: a holder written with a far-future
// expiry counts for one lease at most, not for ever.
const nowMS = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
`

const keepSet = `
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
`

// acquireSlot: KEYS[1] the set; ARGV holder, limit, ttl (ms).
var acquireSlot = redis.NewScript(nowMS + `
local ttl = tonumber(ARGV[3])
local bound = now + ttl
for _, h in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. bound, '+inf')) do
  redis.call('ZADD', KEYS[1], bound, h)
end
if redis.call('ZSCORE', KEYS[1], ARGV[1]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
` + keepSet + `
  return 1
end
return 0
`)

// renewSlot: KEYS[1] the set; ARGV holder, ttl (ms). A lease the set no
// longer has (expired, or the server forgot it) is added again, past the
// limit if need be, and the answer is 0: its session is still open.
var renewSlot = redis.NewScript(nowMS + `
local ttl = tonumber(ARGV[2])
local had = redis.call('ZSCORE', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
` + keepSet + `
if had then return 1 end
return 0
`)

// AcquireSlot implements hybroute.Store.
func (s *Store) AcquireSlot(ctx context.Context, provider, holder string, limit int, ttl time.Duration) (bool, error) {
	n, err := acquireSlot.Run(ctx, s.c, []string{s.key(provider, "slots")}, holder, limit, ttlMS(ttl)).Int()
	return n == 1, err
}

// RenewSlot implements hybroute.Store.
func (s *Store) RenewSlot(ctx context.Context, provider, holder string, ttl time.Duration) (bool, error) {
	n, err := renewSlot.Run(ctx, s.c, []string{s.key(provider, "slots")}, holder, ttlMS(ttl)).Int()
	return n == 1, err
}

// ReleaseSlot implements hybroute.Store.
func (s *Store) ReleaseSlot(ctx context.Context, provider, holder string) error {
	return s.c.ZRem(ctx, s.key(provider, "slots"), holder).Err()
}

// The epoch is one key, <prefix>{provider}:epoch, with no expiry: the
// first router to find none writes the name it proposes. A restart with
// nothing on disk or a flush drops it with the leases, and the next
// router to ask writes a new one. Only its first maxEpoch bytes cross the
// wire, whatever wrote the key.
// KEYS[1] the epoch; ARGV fresh, maxEpoch.
var epoch = redis.NewScript(`
redis.call('SET', KEYS[1], ARGV[1], 'NX')
return redis.call('GETRANGE', KEYS[1], 0, tonumber(ARGV[2]) - 1)
`)

// maxEpoch bounds the epoch Epoch reads back.
const maxEpoch = 64

// Epoch implements hybroute.Store.
func (s *Store) Epoch(ctx context.Context, provider, fresh string) (string, error) {
	return epoch.Run(ctx, s.c, []string{s.key(provider, "epoch")}, fresh, maxEpoch).Text()
}

// ttlMS is a ttl in whole milliseconds, at least one.
func ttlMS(ttl time.Duration) int64 { return max(ttl.Milliseconds(), 1) }
