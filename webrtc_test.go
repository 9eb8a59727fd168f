package hybroute

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/testlog"
	"github.com/hybroute/hybroute/route"
)

// udpSink records every datagram that reaches a loopback address. "Nothing
// arrived" is read without a sleep: flush sends a sentinel datagram, and a
// socket's receive queue on loopback is FIFO, so once the sentinel is read
// everything sent before it has been read too.
type udpSink struct {
	c    net.PacketConn
	mu   sync.Mutex
	got  []string
	seen chan struct{} // the sentinel arrived
}

const sinkSentinel = "hybroute-flush"

func newUDPSink(t testing.TB, addr string) *udpSink {
	t.Helper()
	c, err := net.ListenPacket("udp", addr)
	require.NoError(t, err)
	s := &udpSink{c: c, seen: make(chan struct{}, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			n, from, err := c.ReadFrom(buf)
			if err != nil {
				return
			}
			if string(buf[:n]) == sinkSentinel {
				s.seen <- struct{}{}
				continue
			}
			s.mu.Lock()
			s.got = append(s.got, describeSTUN(buf[:n])+" from "+from.String())
			s.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = c.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the UDP sink's reader did not end")
		}
	})
	return s
}

func (s *udpSink) addr() string { return s.c.LocalAddr().String() }

// flush returns what arrived before now.
func (s *udpSink) flush(t testing.TB) []string {
	t.Helper()
	c, err := net.Dial("udp", s.addr())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte(sinkSentinel))
	require.NoError(t, err)
	select {
	case <-s.seen:
	case <-time.After(10 * time.Second):
		t.Fatal("the sink's sentinel never arrived")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

// describeSTUN names a STUN message by its type (RFC 5389: two zero bits,
// then the magic cookie at bytes 4..8).
func describeSTUN(b []byte) string {
	if len(b) >= 20 && b[0]&0xC0 == 0 && binary.BigEndian.Uint32(b[4:8]) == 0x2112A442 {
		return fmt.Sprintf("STUN 0x%04x", binary.BigEndian.Uint16(b[0:2]))
	}
	return fmt.Sprintf("%d bytes, not STUN", len(b))
}

// turnTCPSink is a TCP listener that reads the first STUN message of each
// connection (a TURN Allocate is 0x0003) and never answers.
type turnTCPSink struct {
	ln    net.Listener
	first chan string
}

func newTURNTCPSink(t testing.TB) *turnTCPSink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &turnTCPSink{ln: ln, first: make(chan string, 16)}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				b := make([]byte, 20)
				if _, err := io.ReadFull(c, b); err == nil {
					select {
					case s.first <- describeSTUN(b):
					default:
					}
				}
			})
		}
	})
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	return s
}

func (s *turnTCPSink) addr() string { return s.ln.Addr().String() }

// iceJS gathers candidates with cfg (an RTCConfiguration in JSON). When peer
// is set ("ip:port"), it also answers itself and lets ICE check peer as a
// remote UDP host candidate for 1.5 s. It settles to the gathering state and
// the candidates, one per line.
func iceJS(cfg, peer string) string {
	return fmt.Sprintf(`(async () => {
  const pc = new RTCPeerConnection(%s);
  pc.createDataChannel("x");
  const cands = [];
  pc.onicecandidate = e => { if (e.candidate && e.candidate.candidate) cands.push(e.candidate.candidate); };
  const offer = await pc.createOffer();
  await pc.setLocalDescription(offer);
  await new Promise(r => {
    pc.onicegatheringstatechange = () => { if (pc.iceGatheringState === "complete") r(); };
    if (pc.iceGatheringState === "complete") r();
    setTimeout(r, 5000);
  });
  const state = pc.iceGatheringState;
  const peer = %q;
  if (peer) {
    const sdp = offer.sdp.replace(/a=ice-ufrag:.*\r\n/g, "a=ice-ufrag:hybr\r\n")
      .replace(/a=ice-pwd:.*\r\n/g, "a=ice-pwd:hybroutehybroutehybroute\r\n")
      .replace(/a=setup:actpass/g, "a=setup:active");
    await pc.setRemoteDescription({type: "answer", sdp});
    const [h, p] = peer.split(":");
    await pc.addIceCandidate({candidate: "candidate:1 1 udp 2122260223 " + h + " " + p + " typ host", sdpMid: "0"});
    await new Promise(r => setTimeout(r, 1500));
  }
  pc.close();
  return [state, ...cands].join("\n");
})()`, cfg, peer)
}

const turnCred = `"username":"u","credential":"p"`

// TestLocalWebRTCSendsNoUDP: on the local browser, RTCPeerConnection sends
// no datagram around the egress check: not to STUN or TURN/UDP servers on
// loopback, nor on 127.0.0.2 (the stand-in for the metadata address: all of
// 127/8 is on lo), nor to a remote UDP candidate there; and no host
// candidate shows a local address. TURN over TCP still works, as a CONNECT
// through the egress check. With only --force-webrtc-ip-handling-policy
// (which Chromium 156 never reads) each STUN and TURN server got 1-5
// Binding or Allocate requests and the remote candidate about 16 checks a
// second.
func TestLocalWebRTCSendsNoUDP(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	lo := newUDPSink(t, "127.0.0.1:0")
	meta := newUDPSink(t, "127.0.0.2:0")
	turn := newTURNTCPSink(t)
	logs := &testlog.Buffer{}
	s := newTestSidecar(t, WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	ctx := testCtx(t)
	tab, err := s.Open(ctx, "k")
	require.NoError(t, err)
	navigate(t, ctx, tab, newSite(t).url("127.0.0.1", "/webrtc"))

	for _, c := range []struct{ cfg, peer string }{
		{`{"iceServers":[{"urls":"stun:` + lo.addr() + `"}]}`, ""},
		{`{"iceServers":[{"urls":"stun:` + meta.addr() + `"}]}`, ""},
		{`{"iceServers":[{"urls":"turn:` + meta.addr() + `",` + turnCred + `}]}`, ""},
		{`{}`, meta.addr()},
	} {
		got, err := run(ctx, tab, chromedp.Evaluate[string](iceJS(c.cfg, c.peer), chromedp.EvalAwaitPromise))
		require.NoError(t, err)
		state, cands, _ := strings.Cut(got, "\n")
		assert.Equal(t, "complete", state, "%s %s: the page ran", c.cfg, c.peer)
		assert.NotContains(t, cands, "typ host", "no host candidate: no local address, no mDNS name")
		assert.NotContains(t, cands, "typ srflx")
	}
	assert.Empty(t, lo.flush(t), "datagrams to loopback around the egress check")
	assert.Empty(t, meta.flush(t), "datagrams to the metadata stand-in around the egress check")

	// TURN over TCP still works, through the proxy.
	_, err = run(ctx, tab, chromedp.Evaluate[string](
		iceJS(`{"iceServers":[{"urls":"turn:`+turn.addr()+`?transport=tcp",`+turnCred+`}]}`, ""), chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	select {
	case m := <-turn.first:
		assert.Equal(t, "STUN 0x0003", m, "a TURN Allocate over TCP")
	case <-time.After(10 * time.Second):
		t.Fatal("TURN over TCP never connected")
	}
	assert.Contains(t, logs.String(), `msg="hybroute: egress allowed" host=`+turn.addr())
}

// TestLocalWebRTCStrictRefusesTURNOverTCP: the TCP WebRTC that is left is
// under the egress check. A strict router (auto-local off) falls back to
// the local browser after a 429; there, TURN over TCP to loopback is
// refused when it connects, and no UDP goes anywhere either.
func TestLocalWebRTCStrictRefusesTURNOverTCP(t *testing.T) {
	t.Parallel()
	lo := newUDPSink(t, "127.0.0.1:0")
	meta := newUDPSink(t, "127.0.0.2:0")
	turn := newTURNTCPSink(t)
	w := newWorld(t, cloudtest.Browserbase, WithAutoLocalForPrivateURLs(false))
	w.api.OnCreate(cloudtest.RateLimited("17"))
	page := w.site.url(publicHost, "/strict-webrtc")
	cfg := `{"iceServers":[{"urls":"turn:` + turn.addr() + `?transport=tcp",` + turnCred + `},` +
		`{"urls":"stun:` + lo.addr() + `"},{"urls":"stun:` + meta.addr() + `"}]}`
	var got string
	res, err := w.r.Exec(testCtx(t), "s", `await page.goto("`+page+`")`, func(ctx2 context.Context, call *Call) error {
		if err := chromedp.Do(ctx2, chromedp.Navigate(page)); err != nil {
			return err
		}
		var err error
		got, err = chromedp.Run(ctx2, chromedp.Evaluate[string](iceJS(cfg, meta.addr()), chromedp.EvalAwaitPromise))
		return err
	})
	require.NoError(t, err)
	assert.True(t, res.FallbackFromCloud)
	assert.Equal(t, localUA, w.site.uaOf("/strict-webrtc"), "the page ran on the local fallback")
	assert.NotContains(t, got, "typ relay", "no relay through a refused TURN server")
	select {
	case m := <-turn.first:
		t.Fatalf("the TURN server on loopback was reached: %s", m)
	default:
	}
	assert.Contains(t, w.logs.String(), `msg="hybroute: egress refused" host=127.0.0.1 class=private`)
	assert.Empty(t, lo.flush(t))
	assert.Empty(t, meta.flush(t))
}

// TestLocalWebRTCPolicyIsManaged: the WebRTC switches cannot be set by
// WithChromiumFlags, the running Chromium has both, and the temp profile
// holds the same policy as a preference. (It also checks, while it has the
// command line, that the secure-time query is off.)
func TestLocalWebRTCPolicyIsManaged(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	for _, f := range []map[string]any{
		{"webrtc-ip-handling-policy": "default"},
		{"webrtc-ip-handling-policy": false},
		{"force-webrtc-ip-handling-policy": "default"},
	} {
		s := newTestSidecar(t, WithChromiumFlags(f))
		_, err := s.Open(testCtx(t), "k")
		require.Error(t, err, "%v", f)
		assert.Contains(t, err.Error(), "managed by the sidecar", "%v", f)
		assert.False(t, s.Alive())
	}

	s := newTestSidecar(t)
	_, err := s.Open(testCtx(t), "k")
	require.NoError(t, err)
	p := currentProc(t, s)
	args := cmdline(p.PID())
	assert.Contains(t, args, "--webrtc-ip-handling-policy=disable_non_proxied_udp", "the switch Chrome reads")
	assert.Contains(t, args, "--force-webrtc-ip-handling-policy=disable_non_proxied_udp", "the switch headless shells read")
	var features string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--disable-features="); ok {
			features = v
		}
	}
	assert.Contains(t, strings.Split(features, ","), "NetworkTimeServiceQuerying", "no secure-time query of Chromium's own at start")
	b, err := os.ReadFile(filepath.Join(p.DataDir(), "Default", "Preferences"))
	require.NoError(t, err)
	var prefs struct {
		WebRTC struct {
			Policy string `json:"ip_handling_policy"`
			URLs   []any  `json:"ip_handling_url"`
		} `json:"webrtc"`
	}
	require.NoError(t, json.Unmarshal(b, &prefs))
	assert.Equal(t, "disable_non_proxied_udp", prefs.WebRTC.Policy)
	assert.Empty(t, prefs.WebRTC.URLs, "no per-URL entry overrides the policy")
}

// webRTCWays are the realms TestCloudWebRTCReachesNoDecoy makes peer
// connections from (testdata/pages/webrtc.html): the page's own, a frame
// it just made, a popup it just opened, a frame it just made in that
// popup (both before the popup's target is set up; the popup opened by
// window.open or by document.open), a srcdoc frame and a data: frame
// that run their own script, and a frame of another site (out of process:
// a target of its own).
var webRTCWays = []string{"page", "frame", "popup", "popup-frame", "document-open", "srcdoc", "data-frame", "other-site"}

// TestCloudWebRTCReachesNoDecoy: a public page on the cloud browser points
// peer connections at the metadata address and at a private address that
// is also a blocked host: STUN and TURN over UDP, TURN over TCP, and
// remote candidates over UDP and TCP (ICE checks, ICE-TCP), from every
// realm it can reach. By default none of it reaches a decoy: no datagram,
// no connection. With WithCloudWebRTC on (the control), the same page
// reaches both decoys over both, which shows the sinks hear what gets
// through.
func TestCloudWebRTCReachesNoDecoy(t *testing.T) {
	requireCloudGuard(t)
	d := inNetns(t)
	if d == nil {
		return
	}
	requireChromium(t)
	// WebRTC gathers on no interface but loopback, and the namespace has
	// only lo: a veth pair (both ends in the namespace) gives it one.
	for _, args := range [][]string{
		{"link", "add", "hyb0", "type", "veth", "peer", "name", "hyb1"},
		{"addr", "add", "192.0.2.1/24", "dev", "hyb0"},
		{"link", "set", "hyb0", "up"}, {"link", "set", "hyb1", "up"},
	} {
		out, err := exec.Command("ip", args...).CombinedOutput()
		require.NoError(t, err, "ip %v: %s", args, out)
	}
	const metaAddr, privAddr = "169.254.169.254", "10.0.0.5"
	meta := newUDPSink(t, metaAddr+":3478")
	priv := newUDPSink(t, privAddr+":3478")
	cfg, err := json.Marshal(map[string]any{"iceServers": []map[string]any{
		{"urls": []string{"stun:" + metaAddr + ":3478", "stun:" + privAddr + ":3478"}},
		{"urls": []string{"turn:" + metaAddr + ":3478", "turn:" + metaAddr + ":80?transport=tcp", "turn:" + privAddr + ":443?transport=tcp"},
			"username": "u", "credential": "p"},
	}})
	require.NoError(t, err)
	cands, err := json.Marshal([]string{
		"candidate:1 1 udp 2122260223 " + privAddr + " 3478 typ host",
		"candidate:2 1 tcp 1518280447 " + metaAddr + " 8080 typ host tcptype passive",
	})
	require.NoError(t, err)
	pages := func(mux *http.ServeMux, s *site) {
		mux.HandleFunc("/webrtc", func(w http.ResponseWriter, r *http.Request) {
			servePage(w, "webrtc", struct{ Cfg, Cands, Frame string }{string(cfg), string(cands), widgetsHost + ":" + s.port})
		})
	}
	// attack runs ways on a router of its own and returns what each page
	// said, with the datagrams and connections the decoys got.
	attack := func(t *testing.T, ways []string, opts ...Option) (said map[string]string, datagrams []string, conns []escape) {
		m0, p0 := len(meta.flush(t)), len(priv.flush(t))
		d.reset()
		w := newWorldServing(t, cloudtest.Browserbase, pages,
			append([]Option{WithResolver(guardResolver()), WithBlockedHosts(privAddr)}, opts...)...)
		ctx := testCtx(t)
		res, err := w.r.Navigate(ctx, "s", w.site.url(publicHost, "/webrtc"), nil)
		require.NoError(t, err)
		require.Equal(t, route.Cloud, res.Route)
		said = map[string]string{}
		for _, way := range ways {
			_, err := w.r.Exec(ctx, "s", "", func(ctx context.Context, call *Call) error {
				got, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf("attack(%q)", way), chromedp.EvalAwaitPromise, asUserGesture))
				said[way] = got
				return err
			})
			require.NoError(t, err, way)
		}
		// Closing the router ends every connection it made: what the
		// decoys got by then is all they get.
		require.NoError(t, w.r.Close())
		return said, append(meta.flush(t)[m0:], priv.flush(t)[p0:]...), d.escapes()
	}

	t.Run("off", func(t *testing.T) {
		said, datagrams, conns := attack(t, webRTCWays)
		for _, way := range webRTCWays {
			want := "none"
			if way == "popup-frame" || way == "document-open" {
				want = "no popup" // window.open gives no handle to script the popup with
			}
			assert.Equal(t, want, said[way], "%s: the realm still has RTCPeerConnection", way)
		}
		t.Logf("the page said %v", said)
		assert.Empty(t, datagrams, "datagrams that reached a decoy")
		assert.Empty(t, conns, "connections that reached a decoy")
	})
	t.Run("on, the control", func(t *testing.T) {
		// The page's own realm shows what the sinks hear; a frame in a
		// popup document.open opened, and a data: frame, show that those
		// ways are ways.
		said, datagrams, conns := attack(t, []string{"page", "document-open", "data-frame"}, WithCloudWebRTC(true))
		assert.Equal(t, "ran", said["page"])
		assert.Equal(t, "ran", said["document-open"])
		assert.Equal(t, "ran", said["data-frame"])
		t.Logf("with WebRTC on: %d datagrams, %d connections reached a decoy", len(datagrams), len(conns))
		assert.NotEmpty(t, datagrams, "no datagram reached a decoy: the sinks would not see an escape")
		assert.NotEmpty(t, conns, "no connection reached a decoy: the decoys would not see an escape")
	})
}
