package hybroute

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/template"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/testlog"
	"github.com/hybroute/hybroute/provider"
)

// The browsers of these tests are real: a headless Chromium stands in for
// the cloud (behind a server that speaks the provider's API), and the
// sidecar starts Debian's Chromium. They tell themselves apart by their
// user agent, which the site records for every request.
const (
	cloudUA = "hybroute-test-cloud"
	localUA = "hybroute-test-local"
	// publicHost is a name the test resolver calls public, while both
	// browsers map it to the loopback site: a public page we can serve.
	publicHost = "dashboard.test"
	// metadataHost is a metadata name both browsers map to the site, so a
	// page can really land on it.
	metadataHost = "metadata.google.internal"
	// widgetsHost is a second public site, so a frame of it in a page of
	// publicHost runs out of process.
	widgetsHost = "widgets.test"
	// slowPrivateHost and slowMetadataHost are names whose lookup is
	// slower than the guard's limit (delayResolver), answering a private
	// and a metadata address.
	slowPrivateHost  = "slow-private.test"
	slowMetadataHost = "slow-metadata.test"
	// unresolvableHost is a name no resolver of the tests answers, and
	// both browsers resolve to nothing (no lookup leaves the machine).
	unresolvableHost = "unresolvable.test"
)

// site serves the pages and records who fetched them.
type site struct {
	*httptest.Server
	port string
	mu   sync.Mutex
	hits []hit
}

type hit struct{ host, path, ua string }

// newSite serves the test pages: any path is a page titled with its path,
// /redirect-to/<host:port/path> redirects there (with the query), and routes may add more.
func newSite(t testing.TB, routes ...func(mux *http.ServeMux, s *site)) *site {
	s := &site{}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/redirect-to/"):
			to := "http://" + strings.TrimPrefix(r.URL.Path, "/redirect-to/")
			if r.URL.RawQuery != "" {
				to += "?" + r.URL.RawQuery
			}
			http.Redirect(w, r, to, http.StatusFound)
			return
		case r.URL.Path == "/favicon.ico":
			http.NotFound(w, r)
			return
		}
		if r.URL.RawQuery == "close" {
			w.Header().Set("Connection", "close")
		}
		servePage(w, "revenue", r.URL.Path)
	})
	for _, add := range routes {
		add(mux, s)
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits = append(s.hits, hit{host: r.Host, path: r.URL.Path, ua: r.UserAgent()})
		s.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	_, s.port, _ = net.SplitHostPort(s.Listener.Addr().String())
	t.Cleanup(s.Close)
	return s
}

// pages are the tests' HTML pages, testdata/pages/NAME.html. Each is a
// text/template, so that a page that needs a port, a host or a value of the
// request has it filled in; most have nothing to fill.
var pages = sync.OnceValue(func() *template.Template {
	return template.Must(template.ParseGlob(filepath.Join("testdata", "pages", "*.html")))
})

// servePage writes the page name (testdata/pages/name.html) filled with data.
func servePage(w http.ResponseWriter, name string, data any) {
	w.Header().Set("Content-Type", "text/html")
	if err := pages().ExecuteTemplate(w, name+".html", data); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// staticPage is a handler of the page name, which has nothing to fill.
func staticPage(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { servePage(w, name, nil) }
}

// reached reports whether any request for path reached the site.
func (s *site) reached(path string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.hits {
		if h.path == path {
			return true
		}
	}
	return false
}

// hitsFor returns the requests that came under the name host.
func (s *site) hitsFor(host string) []hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []hit
	for _, h := range s.hits {
		if hn, _, _ := net.SplitHostPort(h.host); hn == host {
			out = append(out, h)
		}
	}
	return out
}

// url builds a URL of the site under host (a name the browsers map to it).
func (s *site) url(host, path string) string {
	return "http://" + net.JoinHostPort(host, s.port) + path
}

// uaOf returns the user agent that fetched path last ("" if none did).
func (s *site) uaOf(path string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.hits) - 1; i >= 0; i-- {
		if s.hits[i].path == path {
			return s.hits[i].ua
		}
	}
	return ""
}

var hostRules = "MAP " + publicHost + " 127.0.0.1, MAP " + metadataHost + " 127.0.0.1, MAP " + widgetsHost +
	" 127.0.0.1, MAP " + slowPrivateHost + " 127.0.0.1, MAP " + slowMetadataHost + " 127.0.0.1" +
	// the trailing-dot spellings and the wildcard of TestOperatorRulesHoldOnBothRoutes
	", MAP " + widgetsHost + ". 127.0.0.1, MAP " + widgetsHost + ".. 127.0.0.1, MAP " + metadataHost + ". 127.0.0.1, MAP " +
	metadataHost + ".. 127.0.0.1, MAP *." + wildDomain + " 127.0.0.1, MAP *." + wildDomain + ". 127.0.0.1, MAP *." + wildDomain + ".. 127.0.0.1" +
	", MAP " + unresolvableHost + " ~NOTFOUND"

// world is one router wired to a fake provider with a real cloud Chromium
// behind it, a real sidecar, and a site.
type world struct {
	t     testing.TB
	site  *site
	cloud *cloudtest.Chromium
	api   *cloudtest.Server
	logs  *testlog.Buffer
	r     *Router
	// sess is the session key of a test on the shared world ("" on a
	// world of the test's own, whose keys are all the test's).
	sess string
}

// testAPIKey is the worlds' API key. Its "+", "/" and "=" make its raw,
// query-escaped and path-escaped spellings all differ, so a test that greps
// logs and errors for each spelling tells them apart.
const testAPIKey = "bb_live+test/key=do_not_log_0123456789=="

// newWorld is a world whose provider hands out its real URL shape (TLS
// through a cloudtest.Front, no port, the key in the query), dialled with
// the fake's HTTP client, which trusts the front and stays on loopback.
func newWorld(t testing.TB, kind cloudtest.Kind, opts ...Option) *world {
	t.Helper()
	return buildWorld(t, kind, true, nil, opts...)
}

// newWorldServing is newWorld whose site also serves routes.
func newWorldServing(t testing.TB, kind cloudtest.Kind, routes func(*http.ServeMux, *site), opts ...Option) *world {
	t.Helper()
	return buildWorld(t, kind, true, routes, opts...)
}

// newWorldOldShape is a world whose provider hands out the Chromium's own
// ws://127.0.0.1:PORT/devtools/browser/ID (plus the kind's query), the
// shape self-hosted browsers give.
func newWorldOldShape(t testing.TB, kind cloudtest.Kind, opts ...Option) *world {
	t.Helper()
	return buildWorld(t, kind, false, nil, opts...)
}

func buildWorld(t testing.TB, kind cloudtest.Kind, realShapes bool, routes func(*http.ServeMux, *site), opts ...Option) *world {
	t.Helper()
	requireChromium(t)
	var add []func(*http.ServeMux, *site)
	if routes != nil {
		add = append(add, routes)
	}
	w := &world{t: t, site: newSite(t, add...), logs: &testlog.Buffer{}}
	w.cloud = cloudtest.LaunchChromium(t, "--user-agent="+cloudUA, "--host-resolver-rules="+hostRules)
	sopts := []cloudtest.ServerOption{cloudtest.WithAPIKey(w.key()), cloudtest.WithProjectID("proj-1")}
	if realShapes {
		sopts = append(sopts, cloudtest.WithRealShapes())
	}
	w.api = cloudtest.NewServer(t, kind, w.cloud.WSURL, sopts...)
	w.r = newRouter(t, w.provider(kind), w.logs, opts...)
	return w
}

// key is the API key of the world's provider.
func (w *world) key() string { return testAPIKey }

// provider is the client of the world's fake, with its HTTP client.
func (w *world) provider(kind cloudtest.Kind) provider.Provider {
	popts := []provider.Option{provider.WithBaseURL(w.api.URL), provider.WithHTTPClient(w.api.HTTPClient())}
	switch kind {
	case cloudtest.Browserbase:
		return provider.NewBrowserbase(w.key(), "proj-1", popts...)
	case cloudtest.BrowserUse:
		return provider.NewBrowserUse(w.key(), popts...)
	case cloudtest.Steel:
		return provider.NewSteel(w.key(), popts...)
	case cloudtest.CDP:
		return provider.CDPEndpoint(w.api.EndpointURL(), popts[1:]...)
	}
	return clientForKey(w.api, w.key(), popts...)
}

// newRouter is the tests' one router constructor. p is its provider (nil:
// every session is local); logs, when not nil, gets its log lines at INFO
// (nil keeps the library's default logger). The harness gives it the test
// resolver (testResolver, plus publicHost), the loopback egress dialer and
// the sidecar's test flags (user agent and host rules); opts come after
// these, so a test's own WithResolver or WithEgressDialer replaces the
// harness's.
func newRouter(t testing.TB, p provider.Provider, logs *testlog.Buffer, opts ...Option) *Router {
	t.Helper()
	base := []Option{
		WithResolver(testResolverWith(publicHost, "93.184.215.14")),
		// Before any traffic flows: the local Chromium's connections go
		// through the egress proxy, which dials what the test resolver
		// says, and that says public addresses. This dialer sends them
		// to loopback and fails the test on anything else.
		WithEgressDialer(loopbackDialer(t)),
		WithChromiumFlags(map[string]any{"user-agent": localUA, "host-resolver-rules": hostRules}),
	}
	if logs != nil {
		base = append(base, WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))))
	}
	r, err := New(p, append(base, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	return r
}

func testResolverWith(host, addr string) staticResolver {
	res := staticResolver{}
	for k, v := range testResolver {
		res[k] = v
	}
	res[host] = addrs(addr)
	return res
}

// cachedEntry is the cached session of key: the one of that cache key, or,
// for a session key whose only session is on the local route (always so
// with no provider), its key+LocalSuffix one. nil when there is none.
func cachedEntry(r *Router, key string) *entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.sess.M[key]; e != nil {
		return e
	}
	return r.sess.M[key+LocalSuffix]
}

// pageTitle reads the page title of the session's tab.
func pageTitle(ctx context.Context) (string, error) {
	return chromedp.Run(ctx, chromedp.Title())
}

// publicStandIns are the public addresses the test resolvers give names
// that the tests serve on loopback. No test may send traffic anywhere else
// than loopback: the egress dialers below send these to 127.0.0.1.
var publicStandIns = addrs("93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c")

// loopbackDialer is the egress dialer of the test routers: a public
// stand-in goes to 127.0.0.1 on the same port, loopback stays loopback, and
// any other address fails the test and is not dialled.
func loopbackDialer(t testing.TB) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		to, err := loopbackFor(addr)
		if err != nil {
			t.Errorf("the egress proxy was asked to dial %s: %v", addr, err)
			return nil, err
		}
		var d net.Dialer
		return d.DialContext(ctx, network, to)
	}
}

// loopbackFor maps addr (ip:port) to the loopback address a test may dial.
func loopbackFor(addr string) (string, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return "", fmt.Errorf("not an ip:port: %w", err)
	}
	a := ap.Addr().Unmap()
	switch {
	case a.IsLoopback():
		return addr, nil
	case slices.Contains(publicStandIns, a):
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), ap.Port()).String(), nil
	}
	return "", fmt.Errorf("%s is neither loopback nor a test stand-in: tests send traffic to loopback only", a)
}

// The shared world: one Router per test binary, with its sidecar Chromium
// and its cloud stand-in (a Chromium behind a fake Browserbase), built on
// the first test that asks for it and closed in TestMain after every test
// has run. Each test on it has a session key of its own, which is a browser
// context of its own on both routes, and a site of its own (both browsers
// map the test names to loopback on any port, so the site's hits are the
// test's alone).
//
// Browsers cannot be shared between Routers: each Router's guard
// intercepts requests browser-wide (keepalive beacons after a tab closes,
// favicons and other requests the browser makes on its own are only caught
// there), so two Routers on one browser would pause and decide each
// other's requests. Sharing therefore means sharing the Router, and only a
// test whose assertions are about its own session can use it: its routes,
// verdicts, landed URLs, the pages its browsers fetched, and the refusals
// returned to its calls. A test keeps a world of its own when it needs
// options of its own, counts log lines, provider creates and releases or
// processes, reads the Router's session table, or closes or kills a
// browser or the Router: on the shared world those would be other tests'
// too. So does a test that waits for the guard to refuse a request of its
// cloud session (a popup, a redirect hop, a page's channel): the cloud
// stand-in is one Chromium, each session a connection of its own with a
// guard of its own, and a request another session's guard pauses first is
// refused without reaching this session's call (real providers give each
// session a browser). The shared world's resolver is guardResolver, which answers every
// name of the default worlds the same way and adds the guard tests' names.
var shared struct {
	once sync.Once
	tb   *binaryTB
	w    *world
	err  error
}

// sharedWorld is the shared world for t with a site of t's own (serving
// routes), and w.sess, a session key of t's own that t releases when it
// ends. w.logs, w.api and w.cloud are nil: the log, the provider's counts
// and the cloud browser are every test's. t must not close w.r.
func sharedWorld(t *testing.T, routes ...func(*http.ServeMux, *site)) *world {
	t.Helper()
	requireChromium(t)
	shared.once.Do(buildShared)
	if shared.err != nil {
		t.Fatalf("building the shared world: %v", shared.err)
	}
	w := &world{t: t, site: newSite(t, routes...), r: shared.w.r}
	w.sess = w.sessNamed("")
	return w
}

// sessNamed is another session key of the test on the shared world (name
// tells it from w.sess), released when the test ends.
func (w *world) sessNamed(name string) string {
	key := "t:" + w.t.Name()
	if name != "" {
		key += "#" + name
	}
	w.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		assert.NoError(w.t, w.r.Release(ctx, key), "releasing the test's sessions")
	})
	return key
}

// buildShared builds the shared world on a binaryTB: what it starts lives
// until closeShared.
func buildShared() {
	shared.tb = &binaryTB{}
	defer func() {
		if p := recover(); p != nil {
			if p != errBinaryTBFailed {
				panic(p)
			}
			shared.err = fmt.Errorf("%s", strings.Join(shared.tb.errors(), "; "))
		}
	}()
	shared.w = buildWorld(shared.tb, cloudtest.Browserbase, true, nil, WithResolver(guardResolver()))
}

// closeShared closes the shared world if it was built, and returns what
// went wrong while it lived (a stray dial of its egress proxy, a failed
// close).
func closeShared() []string {
	if shared.tb == nil {
		return nil
	}
	return shared.tb.close()
}

// binaryTB is the testing.TB of what lives as long as the test binary. It
// implements what the world's builders call; any other method panics (the
// embedded TB is nil). Fatal errors panic with errBinaryTBFailed, which
// buildShared recovers; other errors are kept and fail the run in TestMain.
type binaryTB struct {
	testing.TB

	mu       sync.Mutex
	cleanups []func()
	errs     []string
}

var errBinaryTBFailed = errors.New("shared world failed")

func (b *binaryTB) Helper()      {}
func (b *binaryTB) Name() string { return "shared world" }
func (b *binaryTB) Cleanup(f func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cleanups = append(b.cleanups, f)
}

func (b *binaryTB) TempDir() string {
	dir, err := os.MkdirTemp("", "hybroute-shared-")
	if err != nil {
		b.Fatalf("temporary directory: %v", err)
	}
	b.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func (b *binaryTB) Errorf(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.errs = append(b.errs, fmt.Sprintf(format, args...))
}
func (b *binaryTB) Error(args ...any)                 { b.Errorf("%s", fmt.Sprint(args...)) }
func (b *binaryTB) Fatalf(format string, args ...any) { b.Errorf(format, args...); b.FailNow() }
func (b *binaryTB) Fatal(args ...any)                 { b.Error(args...); b.FailNow() }
func (b *binaryTB) FailNow()                          { panic(errBinaryTBFailed) }
func (b *binaryTB) Skipf(format string, args ...any)  { b.Fatalf("skipped: "+format, args...) }
func (b *binaryTB) Skip(args ...any)                  { b.Fatal(append([]any{"skipped: "}, args...)...) }
func (b *binaryTB) SkipNow()                          { b.Fatal("skipped") }
func (b *binaryTB) Logf(string, ...any)               {}
func (b *binaryTB) Log(...any)                        {}
func (b *binaryTB) Failed() bool                      { return len(b.errors()) > 0 }

func (b *binaryTB) errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.errs)
}

// close runs the cleanups, last first, as testing does, and returns the
// errors of the binary's life.
func (b *binaryTB) close() []string {
	b.mu.Lock()
	fs := b.cleanups
	b.cleanups = nil
	b.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		func() {
			defer func() {
				if p := recover(); p != nil && p != errBinaryTBFailed {
					panic(p)
				}
			}()
			fs[i]()
		}()
	}
	return b.errors()
}
