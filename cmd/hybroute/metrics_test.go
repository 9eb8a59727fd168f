package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/hybroute/hybroute/hybroutetest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/netpolicy"
)

// The metrics page shows what a router counted, in Prometheus's format,
// on loopback.
func TestMetricsServesRouterCounts(t *testing.T) {
	hybroutetest.Parallel(t)
	var stderr bytes.Buffer
	ms, err := startMetrics(":0", nil, &stderr)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ms.close()) })
	assert.Contains(t, ms.addr.String(), "127.0.0.1:")
	assert.NotContains(t, stderr.String(), "WARNING")

	r, err := hybroute.New(nil, hybroute.WithMeterProvider(ms.provider))
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = r.Plan(ctx, "s", `fetch("http://169.254.169.254/latest/meta-data/")`)
	require.ErrorIs(t, err, netpolicy.ErrMetadata)
	_, err = r.Plan(ctx, "s", `fetch("http://127.0.0.1:3000/")`)
	require.NoError(t, err)

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+ms.addr.String()+"/metrics", nil)
	require.NoError(t, err)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	page := string(body)
	assert.Contains(t, page, `hybroute_blocked_total{otel_scope_name="github.com/hybroute/hybroute"`)
	assert.Regexp(t, `hybroute_blocked_total\{[^}]*reason="metadata"[^}]*\} 1`, page)
	assert.Regexp(t, `hybroute_plans_total\{[^}]*class="private"[^}]*route="local"[^}]*\} 1`, page)
	assert.NotContains(t, page, "169.254.169.254")
}

// The metrics page answers only its own host, as the MCP endpoint does: a
// request naming another host (a DNS-rebinding page's own name) or coming
// from another site's page is refused.
func TestMetricsAnswersOnlyItsOwnHost(t *testing.T) {
	hybroutetest.Parallel(t)
	ms, err := startMetrics(":0", []string{"metrics.internal.example"}, io.Discard)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ms.close()) })
	port := fmt.Sprint(ms.addr.(*net.TCPAddr).Port)
	for _, tc := range []struct {
		host, origin string
		want         int
	}{
		{"127.0.0.1:" + port, "", http.StatusOK},
		{"localhost:" + port, "", http.StatusOK},
		{"metrics.internal.example:" + port, "", http.StatusOK},
		{"rebound.example:" + port, "", http.StatusForbidden},
		{"127.0.0.1:" + port, "http://rebound.example", http.StatusForbidden},
		{"127.0.0.1:" + port, "null", http.StatusForbidden},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+ms.addr.String()+"/metrics", nil)
		require.NoError(t, err)
		req.Host = tc.host
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		cancel()
		assert.Equal(t, tc.want, res.StatusCode, "Host %s Origin %q", tc.host, tc.origin)
		if tc.want == http.StatusForbidden {
			assert.NotContains(t, string(body), "hybroute_", "a refused request reads no metric")
		}
	}
}
