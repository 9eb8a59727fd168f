package netpolicy_test

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/dnstest"
	"github.com/hybroute/hybroute/netpolicy"
)

// hostURLs are n URLs: on one host with different paths, or one on each
// of n hosts.
func hostURLs(n int, oneHost bool) []string {
	out := make([]string, n)
	for i := range out {
		if oneHost {
			out[i] = fmt.Sprintf("https://shop.example/item/%d", i)
		} else {
			out[i] = fmt.Sprintf("https://h%d.example/", i)
		}
	}
	return out
}

func classifyAll(t *testing.T, res netpolicy.Resolver, urls []string, maxHosts, concurrency int) ([]netpolicy.Verdict, *netpolicy.Lookups, error) {
	t.Helper()
	vs := make([]netpolicy.Verdict, len(urls))
	look, err := netpolicy.NewClassifier(res).ClassifyAll(context.Background(), urls, vs, maxHosts, concurrency)
	return vs, look, err
}

// TestClassifyAllResolvesEachNameOnce: a thousand URLs on one host make
// one lookup, a trailing dot names the same host, and the answers are
// kept for the rest of the call by the name the resolver was asked.
func TestClassifyAllResolvesEachNameOnce(t *testing.T) {
	t.Parallel()
	res := dnstest.NewSlow(time.Millisecond)
	urls := append(hostURLs(1000, true), "https://shop.example./x", "http://127.0.0.1/", "about:blank")
	vs, look, err := classifyAll(t, res, urls, 10, 16)
	require.NoError(t, err)
	total, _, ofHost := res.Counts("shop.example")
	assert.Equal(t, 1, total, "one host, one lookup")
	assert.Equal(t, 1, ofHost)
	for _, v := range vs[:1001] {
		require.Equal(t, dnstest.Addrs("93.184.215.14"), v.Addrs, v.URL)
		require.Equal(t, netpolicy.ClassPublic, v.Class, v.URL)
	}
	assert.Equal(t, netpolicy.ClassPrivate, vs[1001].Class, "an IP literal is decided without DNS")
	assert.Equal(t, netpolicy.ClassNoRoute, vs[1002].Class)
	assert.Equal(t, 1, look.Len())
	a, ok := look.Get("shop.example")
	require.True(t, ok)
	assert.Equal(t, dnstest.Addrs("93.184.215.14"), a.Addrs)
	_, ok = look.Get("other.example")
	assert.False(t, ok, "a name the call did not name")

	// A later classification of the call takes the answer: no lookup.
	v := netpolicy.NewClassifier(res).Classify(context.Background(), "https://shop.example/again", look)
	assert.Equal(t, netpolicy.ClassPublic, v.Class)
	total, _, _ = res.Counts("")
	assert.Equal(t, 1, total, "the call's answer, not another lookup")

	// A call with no name to resolve has no lookups.
	_, look, err = classifyAll(t, res, []string{"http://10.0.0.1/", "http://localhost/"}, 10, 16)
	require.NoError(t, err)
	assert.Nil(t, look)
	assert.Zero(t, look.Len())
	_, ok = look.Get("localhost")
	assert.False(t, ok, "nil lookups hold nothing")
}

func TestClassifyAllIsConcurrentAndBounded(t *testing.T) {
	t.Parallel()
	res := dnstest.NewSlow(2 * time.Millisecond)
	vs, look, err := classifyAll(t, res, hostURLs(200, false), 1000, 4)
	require.NoError(t, err)
	total, maxIn, _ := res.Counts("")
	assert.Equal(t, 200, total, "200 hosts make 200 lookups")
	assert.LessOrEqual(t, maxIn, 4, "at most the bound in flight")
	assert.Greater(t, maxIn, 1, "lookups run concurrently")
	assert.Equal(t, 200, look.Len())
	for i, v := range vs {
		require.Equal(t, fmt.Sprintf("h%d.example", i), v.Host)
		a, ok := look.Get(v.Host)
		require.True(t, ok, v.Host)
		require.Equal(t, a.Addrs, v.Addrs)
	}
}

// TestClassifyAllRebindingNameGetsOneVerdict: a name that answers private
// first and public later is private for every literal of the call.
func TestClassifyAllRebindingNameGetsOneVerdict(t *testing.T) {
	t.Parallel()
	res := dnstest.NewSlow(time.Millisecond)
	res.Answer = func(host string, nth int) []netip.Addr {
		if nth == 1 {
			return dnstest.Addrs("10.0.0.7")
		}
		return dnstest.Addrs("93.184.215.14")
	}
	vs, _, err := classifyAll(t, res, []string{"http://rebind.example/a", "http://rebind.example/b", "http://rebind.example./c"}, 10, 16)
	require.NoError(t, err)
	for _, v := range vs {
		assert.Equal(t, netpolicy.ClassPrivate, v.Class, v.URL)
	}
}

func TestClassifyAllTooManyHostsFailsClosed(t *testing.T) {
	t.Parallel()
	extra := []string{"http://127.0.0.1/", "http://localhost/", "http://[::1]/"} // decided without DNS: not counted
	res := dnstest.NewSlow(0)
	_, _, err := classifyAll(t, res, append(hostURLs(10, false), extra...), 10, 16)
	require.NoError(t, err)

	res = dnstest.NewSlow(0)
	_, look, err := classifyAll(t, res, append(hostURLs(11, false), extra...), 10, 16)
	require.ErrorIs(t, err, netpolicy.ErrTooManyHosts)
	assert.Contains(t, err.Error(), "names 11 hosts")
	assert.Contains(t, err.Error(), "the limit is 10")
	assert.Nil(t, look)
	total, _, _ := res.Counts("")
	assert.Zero(t, total, "no name is resolved")
}

func TestClassifyAllEndsWithItsContext(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 100} { // one name: on the caller's goroutine; many: shared out
		t.Run(fmt.Sprint(n, " hosts"), func(t *testing.T) {
			t.Parallel()
			res := dnstest.NewSlow(time.Hour)
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			urls := append([]string{"http://169.254.169.254/"}, hostURLs(n, false)...)
			vs := make([]netpolicy.Verdict, len(urls))
			done := make(chan error, 1)
			var look *netpolicy.Lookups
			go func() {
				var err error
				look, err = netpolicy.NewClassifier(res).ClassifyAll(ctx, urls, vs, 1000, 16)
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the lookups outlived their deadline by far")
			}
			require.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Nil(t, look)
			assert.Equal(t, netpolicy.ClassMetadata, vs[0].Class, "what needs no DNS is still decided")
			for _, v := range vs[1:] {
				require.ErrorIs(t, v.ResolveErr, context.DeadlineExceeded, v.URL)
			}
			_, inFlight, _ := res.Counts("")
			assert.LessOrEqual(t, inFlight, 16)
		})
	}
}
