package guard

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cdpcompat"
	"github.com/hybroute/hybroute/internal/cdpconn"
	"github.com/hybroute/hybroute/internal/cdpmux"
	"github.com/hybroute/hybroute/internal/cloudtest"
)

// TestOfflineRulePatterns records which URL patterns Chromium's offline
// rule matcher (Network.emulateNetworkConditionsByRule) honours for IPv4
// literal hosts: a WebSocket to 127.0.0.2 is tried under each pattern and
// a recorder on 127.0.0.2 counts the handshakes that got through. Only the
// exact host is expected to hold; partly-fixed patterns such as
// 127.:b.:c.:d are logged, and the guard uses only what holds here.
func TestOfflineRulePatterns(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 on this machine: %v", err)
	}
	var hits atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "no", http.StatusBadRequest)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	cloud := cloudtest.LaunchChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	actx, cancelA := chromedpRemote(ctx, cloud.WSURL)
	defer cancelA()
	tab, cancelT := chromedp.NewContext(actx)
	defer cancelT()
	_, err = chromedp.Call(tab, network.Enable, network.EnableParams{})
	require.NoError(t, err)
	shape := cdpcompat.RulesPerCondition
	try := func(pattern string) bool {
		var pats []string
		if pattern != "" {
			pats = []string{pattern}
		}
		for {
			err := chromedp.Do(tab, chromedp.Func(func(ctx context.Context, tt *chromedp.Target) error {
				return tt.Call(ctx, network.CommandEmulateNetworkConditionsByRule, cdpcompat.OfflineParams(shape, pats, false), nil)
			}))
			if err == nil || !cdpcompat.IsShapeError(err) {
				require.NoError(t, err, pattern)
				break
			}
			if shape = shape.Older(); shape == cdpcompat.RulesNone {
				t.Skipf("this browser has no offline rules: %v", err)
			}
		}
		before := hits.Load()
		_, err = chromedp.Run(tab, chromedp.Evaluate[string](fmt.Sprintf(`new Promise(r => {
			const ws = new WebSocket("ws://127.0.0.2:%d/ws");
			ws.onerror = () => r("error"); ws.onclose = () => r("closed"); setTimeout(() => r("timeout"), 5000);
		})`, port), chromedp.EvalAwaitPromise))
		require.NoError(t, err)
		time.Sleep(100 * time.Millisecond)
		return hits.Load() == before
	}
	require.False(t, try(""), "with no rule the WebSocket reaches the recorder")
	require.True(t, try("*://127.0.0.2:*/*"), "the exact host holds")
	for _, p := range []string{"*://127.:b.:c.:d:*/*", "*://127.0.:c.:d:*/*", "*://127.0.0.:d:*/*", "ws{s}?://127.0.0.2:*/*"} {
		t.Logf("offline rule %-24s holds a WebSocket to 127.0.0.2: %v", p, try(p))
	}
}

// chromedpRemote is chromedp's allocator on a remote browser, no guard.
func chromedpRemote(ctx context.Context, wsURL string) (context.Context, context.CancelFunc) {
	return chromedp.NewAllocatorContext(ctx, &cdpmux.Allocator{Dial: func(ctx context.Context) (chromedp.Transport, error) {
		return cdpconn.Dial(ctx, wsURL, nil)
	}})
}

func TestV4PrefixText(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"169.254.0.0/16": "169.254.", "100.100.100.200/32": "100.100.100.200",
		"172.16.0.0/12": "172.", "10.0.0.0/8": "10.", "0.0.0.0/0": "",
	} {
		assert.Equal(t, want, v4PrefixText(netip.MustParsePrefix(in)), in)
	}
}
