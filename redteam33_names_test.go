package hybroute

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/route"
)

// Red team of issue 33, item 2: spellings of blocked hosts, loopback and
// metadata on the cloud browser's WebSocket rules, beyond wsSpellings:
// IPv4 forms, IPv6 forms, full-width and halfwidth dots, userinfo, ports,
// wss. The hosts are written so that the stand-in browser reaches a decoy
// of the namespace (port 80, 443 or 8080) when a rule misses one, and each
// decoy records the path, so each spelling is counted on its own.

// redWSHosts are the hosts tried, each as it would be written in a URL.
var redWSHosts = []string{
	// loopback by name
	"localhost", "LOCALHOST.", "localhost..", "LocalHost%2E%2E", "l%6Fcalhost", "ｌｏｃａｌｈｏｓｔ",
	"localhost\u3002", "localhost\uFF0E", "localhost\uFF61", "x.localhost", "X.LOCALHOST%2E", "a.b.localhost.",
	"u:p@localhost", "u@LOCALHOST.", "localhost6", "ip6-localhost.", "ip6-loopback", "localhost6.localdomain6.",
	// loopback literals
	"127.0.0.1", "127.1", "127.0.1", "2130706433", "0x7f000001", "0x7f.1", "0177.0.0.1", "0177.1", "127.0.0.1.",
	"127.000.000.001", "%31%32%37.0.0.1", "１２７．０．０．１", "0X7F.0X0.0X0.0X1", "127.0.0.1%2e", "u:p@127.1",
	"0", "0.0.0.0", "0x0", "0.0",
	"[::1]", "[0:0:0:0:0:0:0:1]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[0::1]", "[::FFFF:127.1.0.0]",
	// metadata
	"169.254.169.254", "2852039166", "0xa9fea9fe", "0251.0376.0251.0376", "169.254.43518", "169.16689662",
	"[::ffff:169.254.169.254]", "169.254.169.254.", "１６９．２５４．１６９．２５４", "u:p@169.254.169.254",
	"169.254.170.2", "2852039170", "100.100.100.200", "1684301000", "0x64.0x64.0x64.0xc8",
	"[fd00:ec2::254]", "[FD00:EC2:0:0:0:0:0:254]",
	"METADATA.GOOGLE.INTERNAL", "metadata.google.internal.", "metadata.google.internal%2E", "metadata.google.internal\u3002",
	"metadata.google.internal\uFF0E", "u:p@metadata.google.internal",
	// blocked by the operator: widgets.test, *.wild.test, 10.0.0.5
	"widgets.test", "WIDGETS.TEST.", "widgets.test%2E", "widgets.test\uFF0E", "widgets.test\uFF61", "widgets.test..",
	"u:p@widgets.test", "a.wild.test", "A.WILD.TEST.", "a.b.wild.test", "a.wild.test%2e", "a.wild.test\u3002",
	"10.0.0.5", "167772165", "0xa000005", "012.0.0.5", "10.5", "10.0.5", "10.0.0.5.", "[::ffff:10.0.0.5]",
}

// TestRedTeam33CloudWebSocketSpellings: no WebSocket in any spelling of
// redWSHosts, as ws:// on the default port, ws:// on :8080 and wss:// on
// the default port, reaches a decoy from a public page on the cloud
// browser. Spellings of addresses the docs admit as a limit are not
// among them.
func TestRedTeam33CloudWebSocketSpellings(t *testing.T) {
	requireCloudGuard(t)
	d := inNetns(t)
	if d == nil {
		return
	}
	requireChromium(t)
	w := newWorldServing(t, cloudtest.Browserbase, func(*http.ServeMux, *site) {}, WithResolver(guardResolver()),
		WithBlockedHosts(widgetsHost, "*."+wildDomain, "10.0.0.5"))
	ctx := testCtx(t)
	res, err := w.r.Navigate(ctx, "s", w.site.url(publicHost, "/start"), nil)
	require.NoError(t, err)
	require.Equal(t, route.Cloud, res.Route)

	var urls []string
	for i, h := range redWSHosts {
		urls = append(urls, fmt.Sprintf("ws://%s/ws-red/%d/a", h, i), fmt.Sprintf("ws://%s:8080/ws-red/%d/b", h, i),
			fmt.Sprintf("wss://%s/ws-red/%d/c", h, i))
	}
	var said []string
	_, err = w.r.Exec(ctx, "s", "", func(ctx context.Context, call *Call) error {
		var err error
		said, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](webSocketsJS(urls), chromedp.EvalAwaitPromise))
		return err
	})
	require.NoError(t, err)
	// The control: a private IPv4 literal the docs admit no rule can
	// name reaches its decoy, which shows the decoys hear a WebSocket.
	var control string
	_, err = w.r.Exec(ctx, "s", "", func(ctx context.Context, call *Call) error {
		var err error
		control, err = chromedp.Run(ctx, chromedp.Evaluate[string](`new Promise(r => { const s = new WebSocket("ws://192.168.1.10/ws-control"); s.onerror = () => r("network error"); s.onopen = () => r("open"); })`, chromedp.EvalAwaitPromise))
		return err
	})
	require.NoError(t, err)
	require.NoError(t, w.r.Close())
	var reached []string
	sawControl := false
	for _, e := range d.escapes() {
		if strings.Contains(e.line, "/ws-control") {
			sawControl = true
			continue
		}
		reached = append(reached, e.String())
	}
	require.True(t, sawControl, "the control WebSocket (%s) never reached its decoy", control)
	// A wss:// connection carries a ClientHello, not its path: count it
	// by the address, as a connection.
	t.Logf("%d WebSockets tried, %d connections reached a decoy", len(urls), len(reached))
	for i, u := range urls {
		if said[i] != "network error" {
			t.Logf("%s: %s", u, said[i])
		}
	}
	for _, r := range reached {
		line := r
		if i := strings.Index(line, "/ws-red/"); i >= 0 {
			var n int
			var leg string
			fmt.Sscanf(strings.ReplaceAll(line[i+len("/ws-red/"):], "/", " "), "%d %s", &n, &leg)
			line = fmt.Sprintf("%s (%q leg %s)", r, redWSHosts[n], leg)
		} else if len(line) > 60 {
			line = fmt.Sprintf("%q", line[:60])
		}
		t.Logf("reached: %s", line)
	}
	b, _ := json.Marshal(reached)
	assert.Empty(t, reached, "WebSockets that reached a decoy: %s", b)
}

// TestRedTeam33CloudWebSocketIDNA: operator rules written in Unicode
// (bücher.test) and in punycode (*.xn--n-nga1b.test, which is *.ünï.test)
// hold for WebSockets in every spelling of those names: Unicode, upper
// case, punycode, NFD, percent-encoded UTF-8, trailing and full-width dots.
func TestRedTeam33CloudWebSocketIDNA(t *testing.T) {
	requireCloudGuard(t)
	d := inNetns(t)
	if d == nil {
		return
	}
	requireChromium(t)
	var rules []string
	for _, h := range []string{"xn--bcher-kva.test", "*.xn--n-nga1b.test", "xn--fre-joa.test"} {
		for _, dots := range []string{"", ".", ".."} {
			rules = append(rules, "MAP "+h+dots+" 127.0.0.1")
		}
	}
	s := newSite(t)
	w := &world{t: t, site: s}
	w.cloud = cloudtest.LaunchChromium(t, "--user-agent="+cloudUA, "--host-resolver-rules="+hostRules+", "+strings.Join(rules, ", "))
	w.api = cloudtest.NewServer(t, cloudtest.Browserbase, w.cloud.WSURL, cloudtest.WithAPIKey(w.key()),
		cloudtest.WithProjectID("proj-1"), cloudtest.WithRealShapes())
	w.r = newRouter(t, w.provider(cloudtest.Browserbase), nil, WithResolver(guardResolver()),
		WithBlockedHosts("bücher.test", "*.xn--n-nga1b.test"))
	ctx := testCtx(t)
	res, err := w.r.Navigate(ctx, "s", s.url(publicHost, "/start"), nil)
	require.NoError(t, err)
	require.Equal(t, route.Cloud, res.Route)
	hosts := []string{"bücher.test", "BÜCHER.TEST", "xn--bcher-kva.test", "XN--BCHER-KVA.TEST.", "bu\u0308cher.test",
		"b%C3%BCcher.test", "bücher.test\u3002", "bücher.test..", "ｂüｃｈｅｒ.test",
		"a.ünï.test", "A.ÜNÏ.TEST.", "a.xn--n-nga1b.test", "a.b.XN--N-NGA1B.TEST%2E", "a.u\u0308ni\u0308.test"}
	var urls []string
	for i, h := range hosts {
		urls = append(urls, fmt.Sprintf("ws://%s/ws-idna/%d", h, i))
	}
	// The controls: a private literal no rule names, and an IDNA name the
	// operator did not block (freü.test), mapped as the others are.
	urls = append(urls, "ws://192.168.1.10/ws-control", "ws://FREÜ.test./ws-control-idna")
	var said []string
	_, err = w.r.Exec(ctx, "s", "", func(ctx context.Context, call *Call) error {
		var err error
		said, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](webSocketsJS(urls), chromedp.EvalAwaitPromise))
		return err
	})
	require.NoError(t, err)
	require.NoError(t, w.r.Close())
	var reached []string
	sawControl, sawIDNA := false, false
	for _, e := range d.escapes() {
		if strings.Contains(e.line, "/ws-control-idna") {
			sawIDNA = true
			continue
		}
		if strings.Contains(e.line, "/ws-control") {
			sawControl = true
			continue
		}
		var n int
		if _, err := fmt.Sscanf(strings.TrimPrefix(e.line, "GET /ws-idna/"), "%d", &n); err == nil && n < len(hosts) {
			reached = append(reached, fmt.Sprintf("%q: %s", hosts[n], e))
		} else {
			reached = append(reached, e.String())
		}
	}
	require.True(t, sawControl, "the control WebSocket never reached its decoy: %v", said)
	require.True(t, sawIDNA, "the IDNA control never reached its decoy: %v", said)
	t.Logf("%d spellings, reached: %v", len(hosts), reached)
	assert.Empty(t, reached, "WebSockets to a blocked IDNA host that reached a decoy")
}
