package hybroute

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/dnstest"
	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/route"
)

// slowResolver answers every name after a delay and counts the lookups.
type slowResolver = dnstest.Slow

func newSlowResolver(delay time.Duration) *slowResolver { return dnstest.NewSlow(delay) }

// manyURLsCode is a call that fetches n pages: on one host with different
// paths, or one page on each of n hosts.
func manyURLsCode(n int, oneHost bool) string {
	var b strings.Builder
	b.WriteString("for (const u of [\n")
	for i := range n {
		if oneHost {
			fmt.Fprintf(&b, "  \"https://shop.example/item/%d\",\n", i)
		} else {
			fmt.Fprintf(&b, "  \"https://h%d.example/\",\n", i)
		}
	}
	b.WriteString("]) { await page.goto(u) }\n")
	return b.String()
}

// BenchmarkPlanSlowDNS plans calls of many URLs with a resolver that
// answers in 5 ms, as an uncached DNS would (real ones take 20–50 ms).
func BenchmarkPlanSlowDNS(b *testing.B) {
	for _, bc := range []struct {
		name    string
		n       int
		oneHost bool
	}{
		{"100Hosts", 100, false},
		{"1000URLsOneHost", 1000, true},
		{"1000Hosts", 1000, false},
		{"4000Hosts", 4000, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			code := manyURLsCode(bc.n, bc.oneHost)
			r := newRouter(b, &stubProvider{name: "Cloud"}, nil, WithResolver(newSlowResolver(5*time.Millisecond)))
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Plan(ctx, "s", code); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPlan is the plan of a two-URL call whose names the resolver
// answers at once: the hot path in front of every call.
func BenchmarkPlan(b *testing.B) {
	r := newRouter(b, &stubProvider{name: "Cloud"}, nil)
	ctx := context.Background()
	for _, bc := range []struct{ name, code string }{
		{"TwoIPLiterals", `await page.goto("http://127.0.0.1:3000/"); fetch("http://10.0.0.1/api")`},
		{"OneName", `await page.goto("https://example.com/")`},
		{"TwoNames", `await page.goto("https://example.com/"); fetch("http://lan.example/api")`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Plan(ctx, "s", bc.code); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestPlanResolvesEachHostOnce(t *testing.T) {
	t.Parallel()
	res := newSlowResolver(time.Millisecond)
	r := newRouter(t, &stubProvider{name: "Cloud"}, nil, WithResolver(res))
	p, err := r.Plan(context.Background(), "s", manyURLsCode(1000, true))
	require.NoError(t, err)
	require.Len(t, p.Verdicts, 1000)
	total, _, ofHost := res.Counts("shop.example")
	assert.Equal(t, 1, total, "1,000 URLs on one host make one lookup")
	assert.Equal(t, 1, ofHost)
	for _, v := range p.Verdicts {
		require.Equal(t, addrs("93.184.215.14"), v.Addrs, v.URL)
	}
	assert.Equal(t, route.Cloud, p.Route)
}

func TestPlanLookupsAreConcurrentAndBounded(t *testing.T) {
	t.Parallel()
	for _, bound := range []int{0, 4} { // 0: the default
		t.Run(fmt.Sprint("bound ", bound), func(t *testing.T) {
			t.Parallel()
			want := bound
			if want == 0 {
				want = DefaultLookupConcurrency
			}
			res := newSlowResolver(2 * time.Millisecond)
			r := newRouter(t, &stubProvider{name: "Cloud"}, nil, WithResolver(res), WithLookupConcurrency(bound))
			p, err := r.Plan(context.Background(), "s", manyURLsCode(1000, false))
			require.NoError(t, err)
			require.Len(t, p.Verdicts, 1000)
			total, maxIn, _ := res.Counts("")
			assert.Equal(t, 1000, total, "1,000 hosts make 1,000 lookups")
			assert.LessOrEqual(t, maxIn, want, "at most the bound in flight")
			assert.Greater(t, maxIn, 1, "lookups run concurrently")
			for i, v := range p.Verdicts {
				require.Equal(t, fmt.Sprintf("h%d.example", i), v.Host)
				require.Equal(t, netpolicy.ClassPublic, v.Class)
				require.NoError(t, v.ResolveErr)
			}
		})
	}
}

func TestPlanEndsWithItsContext(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 100} { // one name: on the caller's goroutine; many: shared out
		t.Run(fmt.Sprint(n, " hosts"), func(t *testing.T) {
			t.Parallel()
			res := newSlowResolver(time.Hour)
			r := newRouter(t, &stubProvider{name: "Cloud"}, nil, WithResolver(res))
			// The session went local last: a failed plan must not move it.
			_, err := r.Plan(context.Background(), "s", `goto("http://localhost:3000/")`)
			require.NoError(t, err)
			r.remember("s", route.Local) // as the call that ran would: Plan is a dry run

			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			done := make(chan error, 1)
			var p Plan
			go func() {
				var err error
				p, err = r.Plan(ctx, "s", `fetch("http://169.254.169.254/");`+manyURLsCode(n, false))
				done <- err
			}()
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the plan outlived its deadline by far")
			}
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.NotEmpty(t, p.Verdicts)
			assert.ErrorIs(t, p.Verdicts[0].Err, netpolicy.ErrMetadata, "a cancelled plan's verdicts still say what is refused")
			_, inFlight, _ := res.Counts("")
			assert.LessOrEqual(t, inFlight, DefaultLookupConcurrency)

			p, err = r.Plan(context.Background(), "s", `document.title`)
			require.NoError(t, err)
			assert.Equal(t, route.Local, p.Route, "the failed call routed nothing")
		})
	}
}

func TestPlanRebindingHostGetsOneVerdict(t *testing.T) {
	t.Parallel()
	// Public for the first query, private for every later one; other
	// names are looked up alongside.
	res := newSlowResolver(time.Millisecond)
	res.Answer = func(host string, nth int) []netip.Addr {
		if host == "rebind.example" && nth > 1 {
			return addrs("10.0.0.7")
		}
		return addrs("93.184.215.14")
	}
	r := newRouter(t, &stubProvider{name: "Cloud"}, nil, WithResolver(res))
	var code strings.Builder
	for i := range 50 {
		fmt.Fprintf(&code, "fetch(\"https://rebind.example/%d\"); fetch(\"https://other%d.example/\");\n", i, i)
	}
	p, err := r.Plan(context.Background(), "s", code.String())
	require.NoError(t, err)
	_, _, ofHost := res.Counts("rebind.example")
	assert.Equal(t, 1, ofHost)
	n := 0
	for _, v := range p.Verdicts {
		if v.Host == "rebind.example" {
			n++
			require.Equal(t, netpolicy.ClassPublic, v.Class, v.URL)
			require.Equal(t, addrs("93.184.215.14"), v.Addrs, v.URL)
		}
	}
	assert.Equal(t, 50, n)
	assert.Equal(t, route.Cloud, p.Route)

	// The other way round: private first, so the whole call is local and
	// no later public answer can pull it to the cloud.
	res = newSlowResolver(time.Millisecond)
	res.Answer = func(host string, nth int) []netip.Addr {
		if nth == 1 {
			return addrs("10.0.0.7")
		}
		return addrs("93.184.215.14")
	}
	r = newRouter(t, &stubProvider{name: "Cloud"}, nil, WithResolver(res))
	p, err = r.Plan(context.Background(), "s", `goto("http://rebind.example/a"); fetch("http://rebind.example/b"); fetch("http://rebind.example./c")`)
	require.NoError(t, err)
	require.Len(t, p.Verdicts, 3)
	for _, v := range p.Verdicts {
		assert.Equal(t, netpolicy.ClassPrivate, v.Class, v.URL)
	}
	assert.Equal(t, route.Local, p.Route)
	total, _, _ := res.Counts("")
	assert.Equal(t, 1, total, "a trailing dot names the same host")
}

func TestPlanTooManyHostsFailsClosed(t *testing.T) {
	t.Parallel()
	res := newSlowResolver(0)
	r := newRouter(t, &stubProvider{name: "Cloud"}, nil, WithResolver(res), WithMaxHostsPerCall(10))
	// IP literals and names decided without DNS do not count.
	extra := ` fetch("http://127.0.0.1/"); fetch("http://localhost/"); fetch("http://[::1]/")`
	p, err := r.Plan(context.Background(), "s", manyURLsCode(10, false)+extra)
	require.NoError(t, err)
	assert.Len(t, p.Verdicts, 13)

	res = newSlowResolver(0)
	r = newRouter(t, &stubProvider{name: "Cloud"}, nil, WithResolver(res), WithMaxHostsPerCall(10))
	p, err = r.Plan(context.Background(), "s", manyURLsCode(11, false)+extra)
	require.ErrorIs(t, err, netpolicy.ErrTooManyHosts)
	assert.Contains(t, err.Error(), "names 11 hosts")
	assert.Contains(t, err.Error(), "the limit is 10")
	assert.Empty(t, p.Verdicts, "nothing is decided")
	total, _, _ := res.Counts("")
	assert.Zero(t, total, "no name is resolved")

	// The default is generous: a 4,000-host call, the largest scraping
	// call measured, plans.
	r = newRouter(t, &stubProvider{name: "Cloud"}, nil, WithResolver(newSlowResolver(0)))
	_, err = r.Plan(context.Background(), "s", manyURLsCode(4000, false))
	require.NoError(t, err)
}

func TestGuardReusesTheCallsLookups(t *testing.T) {
	requireCloudGuard(t)
	t.Parallel()
	// On the cloud route nothing but the plan, the guard and the landed-URL
	// check ask our resolver (the cloud browser does its own DNS), so the
	// count is theirs alone.
	cr := &countingResolver{n: map[string]int{}, staticResolver: testResolverWith(publicHost, "93.184.215.14")}
	w := newWorld(t, cloudtest.Browserbase, WithResolver(cr))
	ctx := testCtx(t)
	first, second := w.site.url(publicHost, "/first"), w.site.url(publicHost, "/second")
	lookups := func() int {
		cr.mu.Lock()
		defer cr.mu.Unlock()
		return cr.n[publicHost]
	}

	// The call's page loads a host the plan resolved, twice (each load is
	// a document request the guard pauses), and lands on it.
	res, err := w.r.Exec(ctx, "s", `await page.goto("`+first+`"); await page.goto("`+second+`")`,
		func(ctx context.Context, call *Call) error {
			if err := chromedp.Do(ctx, chromedp.Navigate(first)); err != nil {
				return err
			}
			return chromedp.Do(ctx, chromedp.Navigate(second))
		})
	require.NoError(t, err)
	assert.Equal(t, route.Cloud, res.Route)
	assert.Equal(t, second, res.LandedURL)
	assert.Equal(t, cloudUA, w.site.uaOf("/second"), "the guard let the page load")
	assert.Equal(t, 1, lookups(), "the guard and the landed-URL check asked DNS nothing the plan had not")

	// The answers live as long as the call: a call that names no URL
	// asks again for the page it loads.
	_, err = w.r.Exec(ctx, "s", ``, func(ctx context.Context, call *Call) error {
		return chromedp.Do(ctx, chromedp.Navigate(first))
	})
	require.NoError(t, err)
	assert.Greater(t, lookups(), 1, "a later call does not reuse an earlier call's answers")
}
