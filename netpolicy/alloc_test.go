package netpolicy_test

import (
	"context"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hybroute/hybroute/internal/dnstest"
	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/route"
)

// TestDecisionAllocations: the decision in front of every call stays
// allocation-light. Allocation counts are deterministic, unlike timings:
// an address is classified with none, an IP literal with one (the pinned
// address), a name the resolver answers from a table with none, a URL the
// rule lets through is let through with none, and a call of one name gets
// its lookups in one.
func TestDecisionAllocations(t *testing.T) {
	// Not parallel: AllocsPerRun counts the allocations of every goroutine.
	ctx := context.Background()
	cls := netpolicy.NewClassifier(dnstest.Examples)
	pol := netpolicy.Policy{PrivateOnLocal: true}
	a := netip.MustParseAddr("2001:0:4136:e378:8000:63bf:5601:5601")
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = netpolicy.ClassifyAddr(a) }))
	for u, want := range map[string]float64{
		"http://127.0.0.1:8080/api":      1,
		"http://[::1]:3000/":             1,
		"http://localhost:3000/":         0,
		"https://example.com/path?q=1":   0,
		"https://shop.example/?token=ab": 0,
	} {
		assert.Equal(t, want, testing.AllocsPerRun(100, func() { _ = cls.Classify(ctx, u, nil) }), u)
	}
	v := cls.Classify(ctx, "http://192.168.1.9/", nil)
	netpolicy.MarkLiteral(&v)
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = pol.RefuseLiteral(v, route.Local) }))

	urls := []string{"https://example.com/", "http://10.0.0.1/api"}
	vs := make([]netpolicy.Verdict, len(urls))
	assert.Equal(t, 2.0, testing.AllocsPerRun(100, func() {
		_, _ = cls.ClassifyAll(ctx, urls, vs, 10, 16)
	}), "the call's lookups and the IP literal's pinned address")
}
