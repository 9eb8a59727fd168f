package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/agenttest"
	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/redistest"
	"github.com/hybroute/hybroute/internal/testenv"
	"github.com/hybroute/hybroute/internal/testlog"
	"github.com/hybroute/hybroute/mcpserver"
	"github.com/hybroute/hybroute/mcpserver/mcptest"
)

// where is the MetaWhere of a tool result.
func where(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	w, ok := res.Meta[mcpserver.MetaWhere].(map[string]any)
	require.True(t, ok, "the result says where the call ran")
	return w
}

// Two server processes on one redis-server share one back-off window: the
// provider answers the first replica's create with 429 and Retry-After,
// and the second replica, which never heard that answer, keeps away from
// the provider too: one create in all.
func TestMCPReplicasShareOneBackoffWindow(t *testing.T) {
	srv := redistest.Start(t)
	site := agenttest.NewSite(t)
	api := cloudtest.NewServer(t, cloudtest.Browserbase, "ws://127.0.0.1:9/devtools/browser/none",
		cloudtest.WithAPIKey("bb_fleet_test_key_0123456789"), cloudtest.WithProjectID("proj-fleet"))
	api.OnCreate(cloudtest.RateLimited("60"))
	env := []string{"BROWSERBASE_API_KEY=bb_fleet_test_key_0123456789", "BROWSERBASE_PROJECT_ID=proj-fleet"}
	args := []string{"--provider", "browserbase", "--provider-url", api.URL, "--store", "redis://" + srv.Addr}
	a, _ := startBinary(t, env, args...)
	b, stderrB := startBinary(t, env, args...)

	res, text := a.OK("browser_navigate", map[string]any{"url": site.URL(agenttest.PublicHost, "/")})
	assert.Contains(t, text, "fallback from cloud")
	assert.Equal(t, true, where(t, res)["fallback_from_cloud"])
	require.EqualValues(t, 1, api.Creates())

	res, _ = b.OK("browser_navigate", map[string]any{"url": site.URL(agenttest.PublicHost, "/")})
	assert.Equal(t, true, where(t, res)["fallback_from_cloud"], "the other replica keeps to the window")
	assert.Contains(t, where(t, res)["fallback_reason"], "429", "and says why")
	assert.EqualValues(t, 1, api.Creates(), "the other replica did not ask the provider")
	assert.NotContains(t, stderrB.String(), "store unreachable")
}

// Two server processes on one redis-server share one provider limit: with
// --provider-concurrency 1, the first replica's session holds the fleet's
// one cloud slot, and the second replica's new session runs locally
// without asking the provider; once the first session ends, the slot is
// the second replica's.
func TestMCPReplicasShareOneProviderLimit(t *testing.T) {
	srv := redistest.Start(t)
	site := agenttest.NewSite(t)
	cloud := agenttest.NewCloud(t)
	env := []string{"BROWSERBASE_API_KEY=" + cloud.API.APIKey, "BROWSERBASE_PROJECT_ID=" + cloud.API.ProjectID}
	args := []string{"--provider", "browserbase", "--provider-url", cloud.API.URL, "--store", "redis://" + srv.Addr,
		"--provider-concurrency", "1"}
	a, _ := startBinary(t, env, args...)
	b, _ := startBinary(t, env, args...)
	public := site.URL(agenttest.PublicHost, "/")

	res, _ := a.OK("browser_navigate", map[string]any{"url": public})
	require.Equal(t, "cloud", where(t, res)["route"])
	require.EqualValues(t, 1, cloud.API.Creates())

	res, _ = b.OK("browser_navigate", map[string]any{"url": public})
	assert.Equal(t, true, where(t, res)["fallback_from_cloud"], "the fleet's one slot is taken")
	assert.Contains(t, where(t, res)["fallback_reason"], "concurrency")
	assert.EqualValues(t, 1, cloud.API.Creates(), "the other replica did not ask the provider")

	// The first session ends: its slot is free for the other replica.
	a.OK("browser_close", nil)
	b.OK("browser_close", nil)
	res, _ = b.OK("browser_navigate", map[string]any{"url": public})
	assert.Equal(t, "cloud", where(t, res)["route"])
	assert.EqualValues(t, 2, cloud.API.Creates())
}

// servingAt matches the line a server started with --http writes.
var servingAt = regexp.MustCompile(`serving MCP on (http://[0-9.:]+)/`)

// startHTTPBinary runs "hybroute mcp --http 127.0.0.1:0 args..." and
// returns its base URL.
func startHTTPBinary(t *testing.T, args ...string) *url.URL {
	t.Helper()
	testenv.RequireChromium(t)
	bin, err := buildBinary()
	require.NoError(t, err)
	cmd := exec.Command(bin, append([]string{"mcp", "--http", "127.0.0.1:0"}, args...)...)
	stderr := &testlog.Buffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		assert.NotContains(t, stderr.String(), "TEST EGRESS VIOLATION", "the local browser reached beyond loopback")
	})
	var base string
	require.Eventually(t, func() bool {
		m := servingAt.FindStringSubmatch(stderr.String())
		if m != nil {
			base = m[1]
		}
		return m != nil
	}, 60*time.Second, 10*time.Millisecond, "the server says where it serves: %s", stderr)
	u, err := url.Parse(base)
	require.NoError(t, err)
	return u
}

// affinityProxy is a load balancer in front of replicas, as docs/server.md
// sets one up: a request with no Mcp-Session-Id (a client's initialize)
// goes to the replica with the fewest sessions, and the session id the replica
// answers with sends every later request of that session to it.
type affinityProxy struct {
	replicas []*url.URL

	mu   sync.Mutex
	by   map[string]int          // Mcp-Session-Id -> replica
	seen map[string]map[int]bool // Mcp-Session-Id -> the replicas its requests went to
}

// leastSessions is the replica with the fewest sessions, the first of
// those tied. Called with p.mu held.
func (p *affinityProxy) leastSessions() int {
	n := make([]int, len(p.replicas))
	for _, i := range p.by {
		n[i]++
	}
	best := 0
	for i := range n {
		if n[i] < n[best] {
			best = i
		}
	}
	return best
}

func (p *affinityProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("Mcp-Session-Id")
	p.mu.Lock()
	i, known := p.by[id]
	if !known {
		i = p.leastSessions()
	}
	if id != "" {
		if p.seen[id] == nil {
			p.seen[id] = map[int]bool{}
		}
		p.seen[id][i] = true
	}
	p.mu.Unlock()
	rp := &httputil.ReverseProxy{
		// SetURL sends the replica's own host: the replica answers only
		// to its own name (HostGuard) unless --allow-host names the
		// balancer's.
		Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(p.replicas[i]) },
		ModifyResponse: func(resp *http.Response) error {
			if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
				p.mu.Lock()
				p.by[sid] = i
				p.mu.Unlock()
			}
			return nil
		},
		FlushInterval: -1, // server-sent events pass at once
	}
	rp.ServeHTTP(w, r)
}

// Two replicas behind a load balancer with affinity on Mcp-Session-Id: two
// MCP client sessions through it, one on each replica, each runs its calls
// on its own replica's browser from start to end.
func TestMCPReplicasBehindALoadBalancer(t *testing.T) {
	site := agenttest.NewSite(t)
	proxy := &affinityProxy{by: map[string]int{}, seen: map[string]map[int]bool{}}
	for range 2 {
		proxy.replicas = append(proxy.replicas, startHTTPBinary(t, "--provider", "none"))
	}
	lb := httptest.NewServer(proxy)
	t.Cleanup(lb.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var clients []*mcptest.Client
	for i := range 2 {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "lb-client", Version: "v0"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: lb.URL}, nil)
		require.NoError(t, err, "client %d", i)
		t.Cleanup(func() { _ = cs.Close() })
		clients = append(clients, &mcptest.Client{T: t, CS: cs})
	}
	for i, c := range clients {
		page := "/page2"
		if i == 1 {
			page = "/"
		}
		_, text := c.OK("browser_navigate", map[string]any{"url": site.URL("127.0.0.1", page)})
		assert.Contains(t, text, "Page:")
	}
	// Each session still sees its own page: its calls stayed on the
	// replica whose browser holds it.
	_, text := clients[0].OK("browser_snapshot", nil)
	assert.Contains(t, text, "/page2")
	_, text = clients[1].OK("browser_snapshot", nil)
	assert.Contains(t, text, `"Corner Shop"`)

	proxy.mu.Lock()
	defer proxy.mu.Unlock()
	require.Len(t, proxy.seen, 2, "two sessions")
	replicas := map[int]bool{}
	for id, on := range proxy.seen {
		assert.Len(t, on, 1, "session %s stayed on one replica", id)
		for i := range on {
			replicas[i] = true
		}
	}
	assert.Len(t, replicas, 2, "one session on each replica")
}

// The store's flags: the password from the URL, else the environment; a
// private CA only for TLS; and what is refused.
func TestMCPStoreFlags(t *testing.T) {
	env := func(k string) string {
		if k == storePasswordEnv {
			return "from-env"
		}
		return ""
	}
	f := fleetFlags{store: "redis://:in-url@127.0.0.1:6379/2"}
	ro, err := f.redisOptions(env)
	require.NoError(t, err)
	assert.Equal(t, "in-url", ro.Password)
	assert.Equal(t, 2, ro.DB)
	assert.Nil(t, ro.TLSConfig)

	f = fleetFlags{store: "rediss://user@127.0.0.1:6380"}
	ro, err = f.redisOptions(env)
	require.NoError(t, err)
	assert.Equal(t, "from-env", ro.Password)
	assert.Equal(t, "user", ro.Username)
	require.NotNil(t, ro.TLSConfig, "rediss is TLS")

	for _, bad := range []fleetFlags{
		{store: "http://127.0.0.1:6379"},
		{store: "redis://127.0.0.1:6379", ca: "ca.pem"},
		{store: "rediss://127.0.0.1:6379", ca: filepath.Join(t.TempDir(), "none.pem")},
	} {
		_, err := bad.redisOptions(env)
		require.ErrorIs(t, err, errConfig, bad)
	}
	_, _, err = (&fleetFlags{concurrency: -1}).options(context.Background(), env, io.Discard)
	require.ErrorIs(t, err, errConfig)

	// The config file sets them as it sets every flag; the password in a
	// URL is masked when the configuration is printed.
	cfgFile := filepath.Join(t.TempDir(), "hybroute.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte("store: redis://:s3cret@127.0.0.1:6379\nprovider-concurrency: 25\n"), 0o600))
	code, stdout, stderr := runCmd(t, nil, "", "mcp", "--config", cfgFile, "--print-config")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, `provider-concurrency: "25"`)
	assert.Contains(t, stdout, "store: ")
	assert.NotContains(t, stdout, "s3cret")
}
