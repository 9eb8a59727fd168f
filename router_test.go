package hybroute

import (
	"bytes"
	"context"
	"log/slog"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/routememory"
	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/provider"
	"github.com/hybroute/hybroute/route"
)

// stubProvider stands in for a cloud in tests of the routing decision,
// which never creates a session. Tests that run calls use the real clients
// against servers that speak the providers' APIs.
type stubProvider struct{ name string }

func (s *stubProvider) Name() string { return s.name }
func (s *stubProvider) CreateSession(ctx context.Context, key string) (*provider.Session, error) {
	panic("the routing decision must not create sessions")
}
func (s *stubProvider) ReleaseSession(ctx context.Context, sess *provider.Session) error { return nil }

func TestPlan(t *testing.T) {
	t.Parallel()
	cloud := &stubProvider{name: "Cloud"}
	type setup struct {
		name string
		p    provider.Provider
		opts []Option
	}
	hybrid := setup{"hybrid", cloud, nil}
	strict := setup{"auto-local off", cloud, []Option{WithAutoLocalForPrivateURLs(false)}}
	strictAllow := setup{"auto-local off, allow-private", cloud, []Option{WithAutoLocalForPrivateURLs(false), WithAllowPrivateURLs(true)}}
	override := setup{"CDP override", cloud, []Option{WithCDPURL("ws://127.0.0.1:9222/devtools/browser/x")}}
	overrideAllow := setup{"CDP override, allow-private", nil, []Option{WithCDPURL("http://127.0.0.1:9222"), WithAllowPrivateURLs(true)}}
	noCloud := setup{"no provider", nil, nil}

	rows := []struct {
		rule    string
		setup   setup
		key     string
		code    string
		route   route.Route
		cache   string
		wantErr error
		nVerd   int
	}{
		{"public URL goes to the cloud", hybrid, "s", `await page.goto("https://example.com")`, route.Cloud, "s", nil, 1},
		{"localhost goes to the sidecar ::local", hybrid, "s", `await page.goto("http://localhost:3000")`, route.Local, "s::local", nil, 1},
		{"LAN goes to the sidecar", hybrid, "s", `fetch('http://192.168.1.9/api')`, route.Local, "s::local", nil, 1},
		{"name resolving private goes to the sidecar", hybrid, "s", `goto("http://lan.example/")`, route.Local, "s::local", nil, 1},
		{"mixed call runs wholly local", hybrid, "s", `goto("https://example.com"); goto("http://localhost:3000")`, route.Local, "s::local", nil, 2},
		{"metadata blocks the whole call", hybrid, "s", `goto("https://example.com"); fetch("http://169.254.169.254/latest")`, route.Cloud, "s", netpolicy.ErrMetadata, 2},
		{"metadata blocks even a local call", hybrid, "s", `fetch("http://localhost/"); fetch("http://metadata.google.internal/")`, route.Local, "s::local", netpolicy.ErrMetadata, 2},
		{"metadata blocked with no provider", noCloud, "s", `fetch("http://169.254.169.254/")`, route.Local, "s", netpolicy.ErrMetadata, 1},
		{"metadata blocked with allow-private", strictAllow, "s", `fetch("http://[fd00:ec2::254]/")`, route.Cloud, "s", netpolicy.ErrMetadata, 1},
		{"Akamai metadata blocked with no provider", noCloud, "s", `fetch("http://[fd00:a9fe:a9fe::1]/v1/token")`, route.Local, "s", netpolicy.ErrMetadata, 1},
		{"auto-local off rejects private", strict, "s", `goto("http://localhost:3000")`, route.Cloud, "s", netpolicy.ErrPrivate, 1},
		{"auto-local off keeps public on the cloud", strict, "s", `goto("https://example.com")`, route.Cloud, "s", nil, 1},
		{"allow-private lets the cloud try", strictAllow, "s", `goto("http://localhost:3000")`, route.Cloud, "s", nil, 1},
		{"CDP override is not local: private rejected", override, "s", `goto("http://localhost:3000")`, route.Cloud, "s", netpolicy.ErrPrivate, 1},
		{"CDP override with allow-private", overrideAllow, "s", `goto("http://localhost:3000")`, route.Cloud, "s", nil, 1},
		{"no provider: everything local, under the local key", noCloud, "s", `goto("https://example.com"); goto("http://localhost")`, route.Local, "s::local", nil, 2},
		{"empty session key means default", hybrid, "", `goto("http://localhost:3000")`, route.Local, "default::local", nil, 1},
		{"empty session key, cloud", hybrid, "", `goto("https://example.com")`, route.Cloud, "default", nil, 1},
		{"brand-new session with no URL starts on the cloud", hybrid, "fresh", `document.title`, route.Cloud, "fresh", nil, 0},
		{"about:blank needs no route", hybrid, "fresh2", `goto("about:blank")`, route.Cloud, "fresh2", nil, 0},
		{"invalid URL rejected", hybrid, "s", `goto("http://1.2.3.256/")`, route.Cloud, "s", netpolicy.ErrInvalidURL, 1},
		{"refused scheme rejected", hybrid, "s", `goto("file:///etc/passwd")`, route.Cloud, "s", netpolicy.ErrInvalidURL, 1},
	}
	for _, row := range rows {
		t.Run(row.setup.name+": "+row.rule, func(t *testing.T) {
			r := newRouter(t, row.setup.p, nil, row.setup.opts...)
			p, err := r.Plan(context.Background(), row.key, row.code)
			if row.wantErr != nil {
				require.ErrorIs(t, err, row.wantErr)
				require.Len(t, p.Verdicts, row.nVerd, "the verdicts are returned with the error")
			} else {
				require.NoError(t, err)
				assert.Equal(t, row.route.String(), p.Route.String())
				assert.Equal(t, row.cache, p.CacheKey)
			}
			assert.Len(t, p.Verdicts, row.nVerd)
		})
	}
}

func TestPlanErrorMessages(t *testing.T) {
	t.Parallel()
	r := newRouter(t, &stubProvider{name: "Cloud"}, nil, WithAutoLocalForPrivateURLs(false))
	_, err := r.Plan(context.Background(), "s", `goto("http://localhost:3000/x")`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "URL targets a private or internal address")
	assert.Contains(t, err.Error(), "http://localhost:3000/x")

	_, err = r.Plan(context.Background(), "s", `a("http://localhost:1"); b("http://169.254.169.254/")`)
	require.ErrorIs(t, err, netpolicy.ErrMetadata)
	require.ErrorIs(t, err, netpolicy.ErrPrivate, "every blocked literal is reported")
	assert.Regexp(t, `^hybroute: blocked \(metadata\): URL targets a cloud metadata endpoint`, err.Error(), "the most serious reason leads")
}

func TestStickyRoute(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRouter(t, &stubProvider{name: "Cloud"}, nil)
	// plan plans a call and, as Exec does once the call runs, remembers
	// its route.
	plan := func(key, code string) (Plan, error) {
		p, err := r.Plan(ctx, key, code)
		if err == nil {
			r.remember(key, p.Route)
		}
		return p, err
	}

	p, err := plan("s", `page.goto("http://localhost:3000")`)
	require.NoError(t, err)
	require.Equal(t, route.Local, p.Route)

	p, err = plan("s", `return document.title`)
	require.NoError(t, err)
	assert.Equal(t, route.Local, p.Route, "a URL-less follow-up stays on the route the session took")
	assert.Equal(t, "s::local", p.CacheKey)

	p, err = plan("other", `return document.title`)
	require.NoError(t, err)
	assert.Equal(t, route.Cloud, p.Route, "another session is not affected")

	p, err = plan("s", `// see https://example.com/docs
return document.title`)
	require.NoError(t, err)
	assert.Equal(t, route.Local, p.Route, "a public URL in code (here a comment) does not move the session off its page")

	p, err = r.plan(ctx, "s", []string{"https://example.com"}, true)
	require.NoError(t, err)
	assert.Equal(t, route.Cloud, p.Route, "navigation picks the browser")
	r.remember("s", p.Route)
	p, err = plan("s", `return document.title`)
	require.NoError(t, err)
	assert.Equal(t, route.Cloud, p.Route, "the last route wins")

	_, err = plan("s", `goto("http://localhost"); goto("http://169.254.169.254")`)
	require.ErrorIs(t, err, netpolicy.ErrMetadata)
	p, err = plan("s", `return 1`)
	require.NoError(t, err)
	assert.Equal(t, route.Cloud, p.Route, "a blocked call does not move the session")
}

// Plan is a dry run: planning a private URL does not move the session's
// next URL-less call, and planning many keys holds no memory.
func TestPlanIsADryRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRouter(t, &stubProvider{name: "Cloud"}, nil)
	_, err := r.Plan(ctx, "s", `page.goto("http://localhost:3000")`)
	require.NoError(t, err)
	p, err := r.Plan(ctx, "s", `return document.title`)
	require.NoError(t, err)
	assert.Equal(t, route.Cloud, p.Route, "a planned route is not remembered")

	for i := range 200_000 {
		_, err := r.Plan(ctx, "k"+strconv.Itoa(i), `return 1`)
		require.NoError(t, err)
	}
	r.mu.Lock()
	assert.Zero(t, r.routes.Len(), "planned keys leave the route memory empty")
	r.mu.Unlock()
}

// The route memory of calls that ran is bounded (the oldest key goes) and
// reaped when idle.
func TestRouteMemoryIsBoundedAndReaped(t *testing.T) {
	t.Parallel()
	r := newRouter(t, &stubProvider{name: "Cloud"}, nil)
	for i := range 200_000 {
		r.remember("k"+strconv.Itoa(i), route.Local)
	}
	r.mu.Lock()
	assert.Equal(t, routememory.Max, r.routes.Len(), "the memory is capped")
	_, newest := r.routes.Get("k199999")
	_, oldest := r.routes.Get("k0")
	r.mu.Unlock()
	assert.True(t, newest, "the newest key is kept")
	assert.False(t, oldest, "the oldest key was evicted")

	r.remember("k199999", route.Cloud) // a known key is updated in place
	got, _ := r.lastRoute("k199999")
	assert.Equal(t, route.Cloud, got)

	r.reapIdle(time.Now().Add(r.cfg.IdleTimeout + time.Second))
	r.mu.Lock()
	assert.Zero(t, r.routes.Len(), "idle keys are reaped")
	r.mu.Unlock()
}

func TestHybridRoutesLocally(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cloud := &stubProvider{name: "Cloud"}
	hybrid := newRouter(t, cloud, nil)
	assert.True(t, hybrid.HybridRoutesLocally(ctx, "http://localhost:3000"))
	assert.True(t, hybrid.HybridRoutesLocally(ctx, "http://0x7f.1/"))
	assert.True(t, hybrid.HybridRoutesLocally(ctx, "http://192.168.1.9"))
	assert.False(t, hybrid.HybridRoutesLocally(ctx, "https://example.com"))
	assert.False(t, hybrid.HybridRoutesLocally(ctx, "http://169.254.169.254/"), "metadata is never routed, not even locally")
	assert.False(t, hybrid.HybridRoutesLocally(ctx, "http://1.2.3.256/"))

	for name, r := range map[string]*Router{
		"CDP override":   newRouter(t, cloud, nil, WithCDPURL("ws://127.0.0.1:1/devtools/browser/x")),
		"auto-local off": newRouter(t, cloud, nil, WithAutoLocalForPrivateURLs(false), WithAllowPrivateURLs(true)),
		"no provider":    newRouter(t, nil, nil),
	} {
		assert.False(t, r.HybridRoutesLocally(ctx, "http://localhost:3000"), name)
	}
}

func TestNavigateAndExecShareTheVerdict(t *testing.T) {
	t.Parallel()
	// The predicate answers exactly what Plan does for a call whose only
	// literal is the URL, for every URL of the verdict table.
	ctx := context.Background()
	r := newRouter(t, &stubProvider{name: "Cloud"}, nil)
	for _, u := range []string{"http://localhost:3000", "https://example.com", "http://lan.example/",
		"http://mixed.example/", "http://[::1]/", "http://0x7f.1/", "http://169.254.169.254/", "wss://example.com/"} {
		p, err := r.Plan(ctx, "k "+u, `goto("`+u+`")`) // a new session each: no page to stay with
		if err != nil {
			assert.False(t, r.HybridRoutesLocally(ctx, u), u)
			continue
		}
		assert.Equal(t, r.HybridRoutesLocally(ctx, u), p.Route == route.Local, u)
	}
}

// countingResolver counts lookups: one verdict per URL means one lookup.
type countingResolver struct {
	mu sync.Mutex
	n  map[string]int
	staticResolver
}

func (c *countingResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	c.mu.Lock()
	c.n[host]++
	c.mu.Unlock()
	return c.staticResolver.LookupNetIP(ctx, network, host)
}

// rebindingResolver answers private first and public after: a DNS
// rebinding attacker.
type rebindingResolver struct {
	mu    sync.Mutex
	calls int
}

func (r *rebindingResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.calls == 1 {
		return addrs("10.0.0.7"), nil
	}
	return addrs("93.184.215.14"), nil
}

func TestOneVerdictPerURL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cr := &countingResolver{n: map[string]int{}, staticResolver: testResolver}
	r := newRouter(t, &stubProvider{name: "Cloud"}, nil, WithResolver(cr))
	p, err := r.Plan(ctx, "s", `goto("https://example.com/a"); goto("http://lan.example/"); goto("https://example.com/a")`)
	require.NoError(t, err)
	require.Len(t, p.Verdicts, 2, "duplicate literals are one URL")
	assert.Equal(t, 1, cr.n["example.com"])
	assert.Equal(t, 1, cr.n["lan.example"])

	// A rebinding name is decided once: private, so the call is local and
	// the later public answer cannot pull it to the cloud.
	rb := &rebindingResolver{}
	r = newRouter(t, &stubProvider{name: "Cloud"}, nil, WithResolver(rb))
	p, err = r.Plan(ctx, "s", `goto("http://rebind.example/"); fetch("http://rebind.example/")`)
	require.NoError(t, err)
	assert.Equal(t, route.Local, p.Route)
	assert.Equal(t, 1, rb.calls)
	assert.Equal(t, addrs("10.0.0.7"), p.Verdicts[0].Addrs, "the private answer is pinned")
}

func TestPlanBadInput(t *testing.T) {
	t.Parallel()
	r := newRouter(t, &stubProvider{name: "Cloud"}, nil)
	_, err := r.Plan(context.Background(), "x::local", `goto("https://example.com")`)
	assert.ErrorIs(t, err, ErrInvalidSessionKey, "a key must not collide with a sidecar key")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = r.Plan(ctx, "s", `goto("https://example.com")`)
	assert.ErrorIs(t, err, context.Canceled)

	_, err = New(nil, WithCDPURL("not a url"))
	assert.ErrorIs(t, err, netpolicy.ErrInvalidURL)
	_, err = New(nil, WithCDPURL("file:///tmp/x"))
	assert.ErrorIs(t, err, netpolicy.ErrInvalidURL)

	require.NoError(t, r.Close())
	_, err = r.Plan(context.Background(), "s", `goto("https://example.com")`)
	assert.ErrorIs(t, err, ErrClosed)
}

func TestPlanLogsDecisionNames(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r := newRouter(t, &stubProvider{name: "Cloud"}, nil, WithLogger(log))
	_, err := r.Plan(context.Background(), "s", `goto("http://localhost:3000")`)
	require.NoError(t, err)
	assert.Contains(t, buf.String(), "route=local")
	assert.Contains(t, buf.String(), "cache_key=s::local")
}

// TestNavigateLeavesTheCallersOptionsAlone: Navigate adds options of its
// own (DrivesREST for a nil run, Navigation) to a new slice, not into the
// spare room of the caller's.
func TestNavigateLeavesTheCallersOptionsAlone(t *testing.T) {
	t.Parallel()
	r, err := New(nil)
	require.NoError(t, err)
	defer r.Close()
	mark := RunTimeout(time.Second)
	backing := []CallOption{WaitForTurn(), mark, mark}
	opts := backing[:1] // room for two more
	_, err = r.Navigate(context.Background(), "s", "http://169.254.169.254/", nil, opts...)
	require.ErrorIs(t, err, netpolicy.ErrMetadata, "refused in the plan: no browser starts")
	for i, o := range backing[1:] {
		var got callSettings
		o(&got)
		assert.Equal(t, time.Second, got.run, "slot %d of the caller's array was written", i+1)
	}
}
