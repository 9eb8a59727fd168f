package guard

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingResolver answers from a table, counting the lookups of each
// name; a name it does not hold has no answers.
type countingResolver struct {
	mu      sync.Mutex
	n       map[string]int
	answers map[string][]netip.Addr
}

func (c *countingResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[host]++
	return c.answers[host], nil
}

// count is how many lookups of name were made.
func (c *countingResolver) count(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

// addrs parses addresses.
func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

// gatedResolver answers once gate is closed, counting the lookups.
type gatedResolver struct {
	countingResolver
	gate chan struct{}
}

func (g *gatedResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.countingResolver.LookupNetIP(ctx, network, host)
}

// TestHostAnswersOneLookupPerName: a hundred requests of one name at once
// make one lookup, and all get its answer; after the TTL the name is asked
// again.
func TestHostAnswersOneLookupPerName(t *testing.T) {
	res := &gatedResolver{countingResolver: countingResolver{n: map[string]int{},
		answers: map[string][]netip.Addr{"a.test": addrs("10.0.0.5")}}, gate: make(chan struct{})}
	var h hostAnswers
	now := time.Now()
	var wg sync.WaitGroup
	got := make([][]netip.Addr, 100)
	for i := range got {
		wg.Go(func() {
			got[i], _ = h.answer(context.Background(), context.Background(), time.Minute, res, "a.test", now)
		})
	}
	time.Sleep(50 * time.Millisecond) // let them queue on the one lookup
	close(res.gate)
	wg.Wait()
	for _, a := range got {
		require.Equal(t, addrs("10.0.0.5"), a)
	}
	assert.Equal(t, 1, res.count("a.test"))

	_, _ = h.answer(context.Background(), context.Background(), time.Minute, res, "a.test", now.Add(hostAnswerTTL/2))
	assert.Equal(t, 1, res.count("a.test"), "answered within its TTL")
	_, _ = h.answer(context.Background(), context.Background(), time.Minute, res, "a.test", now.Add(hostAnswerTTL+time.Second))
	assert.Equal(t, 2, res.count("a.test"), "asked again past its TTL")
}

// TestHostAnswersTimeoutIsNotKept: a lookup that ran out of time fails its
// waiters with the deadline (the guard refuses them: lookup_timeout), and
// the next request asks again instead of reading the failure.
func TestHostAnswersTimeoutIsNotKept(t *testing.T) {
	res := &gatedResolver{countingResolver: countingResolver{n: map[string]int{},
		answers: map[string][]netip.Addr{"slow.test": addrs("93.184.215.14")}}, gate: make(chan struct{})}
	var h hostAnswers
	_, err := h.answer(context.Background(), context.Background(), 20*time.Millisecond, res, "slow.test", time.Now())
	require.ErrorIs(t, err, context.DeadlineExceeded)
	close(res.gate)
	a, err := h.answer(context.Background(), context.Background(), time.Minute, res, "slow.test", time.Now())
	require.NoError(t, err)
	assert.Equal(t, addrs("93.184.215.14"), a)
}

// TestHostAnswersBounded: a session that names more hosts than the bound
// starts a fresh table rather than growing.
func TestHostAnswersBounded(t *testing.T) {
	res := &countingResolver{n: map[string]int{}}
	var h hostAnswers
	for i := range maxHostAnswers + 10 {
		_, _ = h.answer(context.Background(), context.Background(), time.Minute, res, netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}).String()+".test", time.Now())
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	assert.LessOrEqual(t, len(h.m), maxHostAnswers)
}
