package hybroute

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/route"
)

// Red team of issue 33, item 3: realms TestCloudWebRTCReachesNoDecoy does
// not make. Each way tries to get a working RTCPeerConnection into a cloud
// page's hands, and drives it at the metadata decoy and a blocked private
// decoy (STUN and TURN over UDP and TCP, remote candidates over UDP and
// TCP). The namespace's decoys count what arrives.

// redRTCWays are the realms tried: a sandboxed frame with scripts off
// (the inspector's script may not run there) with and without srcdoc, a
// frame written by document.write, a javascript: frame, an <object>, a
// popup opened with noopener that runs its own script, a popup opened to
// a javascript: URL, a dedicated worker, and the prototype of a surviving
// WebRTC interface.
var redRTCWays = []string{"sandbox-frame", "sandbox-srcdoc", "docwrite-frame", "js-url-frame", "object",
	"js-popup", "worker", "proto"}

// redRTCPopupWays are popups that load a page of the public site which
// runs its own peer connection: window.open with noopener, with no
// feature, with noreferrer, a link and a form with target=_blank, of
// another site with and without noopener; and a noopener popup whose page
// fetches the decoys over HTTP (the guard's).
var redRTCPopupWays = []string{"noopener-popup", "url-popup", "link-blank", "form-blank", "noreferrer-popup", "noopener-fetch",
	"cross-popup", "cross-noopener"}

const redRTCPage = `<!doctype html><title>redrtc</title><body><script>
const cfg = %s;
const cands = %s;
function start(w) {
  const PC = w && (w.RTCPeerConnection || w.webkitRTCPeerConnection);
  return PC ? new PC(cfg) : null;
}
async function drive(pc) {
  if (!pc) return "none";
  pc.createDataChannel("x");
  const offer = await pc.createOffer();
  await pc.setLocalDescription(offer);
  await new Promise(r => {
    pc.onicegatheringstatechange = () => { if (pc.iceGatheringState === "complete") r(); };
    setTimeout(r, 2000);
  });
  const sdp = offer.sdp.replace(/a=ice-ufrag:.*\r\n/g, "a=ice-ufrag:hybr\r\n")
    .replace(/a=ice-pwd:.*\r\n/g, "a=ice-pwd:hybroutehybroutehybroute\r\n")
    .replace(/a=setup:actpass/g, "a=setup:active");
  await pc.setRemoteDescription({type: "answer", sdp});
  for (const c of cands) await pc.addIceCandidate({candidate: c, sdpMid: "0"}).catch(() => {});
  await new Promise(r => setTimeout(r, 1000));
  pc.close();
  return "ran";
}
const selfCode = "const cfg = " + JSON.stringify(cfg) + "; const cands = " + JSON.stringify(cands) + ";\n" + start + "\n" + drive + "\n";
function viaChannel(name, open) {
  return new Promise(r => {
    const bc = new BroadcastChannel(name);
    bc.onmessage = e => { bc.close(); r(e.data); };
    addEventListener("message", e => { if (e.data && e.data.ch === name) r(e.data.said); });
    open();
    setTimeout(() => r("no answer"), 8000);
  });
}
function frameLoaded(f) { return new Promise(r => { f.onload = r; setTimeout(r, 2000); }); }
async function attack(way) {
  switch (way) {
  case "sandbox-frame":
  case "sandbox-srcdoc": {
    const f = document.createElement("iframe");
    f.setAttribute("sandbox", "allow-same-origin");
    if (way === "sandbox-srcdoc") f.srcdoc = "<p>x</p>"; else f.src = "/redrtc-blank";
    document.body.appendChild(f);
    await frameLoaded(f);
    return drive(start(f.contentWindow));
  }
  case "docwrite-frame": {
    document.write('<iframe name="dw"></iframe>');
    return drive(start(window.frames.dw));
  }
  case "js-url-frame": {
    const f = document.createElement("iframe");
    f.src = "javascript:'<p>js</p>'";
    document.body.appendChild(f);
    await frameLoaded(f);
    return drive(start(f.contentWindow));
  }
  case "object": {
    const o = document.createElement("object");
    o.type = "text/html";
    o.data = "/redrtc-blank";
    document.body.appendChild(o);
    await frameLoaded(o);
    return drive(start(o.contentWindow));
  }
  case "noopener-popup":
    return viaChannel("noopener", () => window.open("/redrtc-self?ch=noopener", "_blank", "noopener"));
  case "url-popup":
    return viaChannel("urlpopup", () => window.open("/redrtc-self?ch=urlpopup"));
  case "link-blank":
    return viaChannel("linkblank", () => { const a = document.createElement("a"); a.href = "/redrtc-self?ch=linkblank"; a.target = "_blank"; document.body.appendChild(a); a.click(); });
  case "form-blank":
    return viaChannel("formblank", () => { const f = document.createElement("form"); f.action = "/redrtc-self"; f.target = "_blank";
      const i = document.createElement("input"); i.name = "ch"; i.value = "formblank"; f.appendChild(i); document.body.appendChild(f); f.submit(); });
  case "cross-popup":
    return viaChannel("cross", () => window.open("http://{{FRAME}}/redrtc-self?ch=cross"));
  case "cross-noopener":
    return viaChannel("crossno", () => window.open("http://{{FRAME}}/redrtc-self?ch=crossno", "_blank", "noopener"));
  case "noopener-fetch":
    return viaChannel("nofetch", () => window.open("/redrtc-fetch", "_blank", "noopener"));
  case "noreferrer-popup":
    return viaChannel("noreferrer", () => window.open("/redrtc-self?ch=noreferrer", "_blank", "noreferrer"));
  case "js-popup":
    return viaChannel("jspopup", () => window.open("javascript:" + encodeURIComponent(selfCode +
      "drive(start(window)).then(x => new BroadcastChannel('jspopup').postMessage(x), e => new BroadcastChannel('jspopup').postMessage('error ' + e));'<p>'")));
  case "worker":
    return new Promise(r => {
      const w = new Worker(URL.createObjectURL(new Blob([
        "postMessage([typeof RTCPeerConnection, typeof webkitRTCPeerConnection, typeof RTCIceTransport].join(','))"], {type: "text/javascript"})));
      w.onmessage = e => r(e.data === "undefined,undefined,undefined" ? "none" : "worker has " + e.data);
    });
  case "proto": {
    const found = [];
    for (const n of Object.getOwnPropertyNames(window)) {
      if (!/^RTC/.test(n)) continue;
      try {
        let p = window[n].prototype;
        for (let i = 0; p && i < 5; i++, p = Object.getPrototypeOf(p)) {
          const c = p.constructor;
          if (c && /^(RTCPeerConnection|webkitRTCPeerConnection|RTCIceTransport)$/.test(c.name)) found.push(n + "->" + c.name);
        }
      } catch (e) {}
    }
    return found.length ? "found " + found.join(" ") : "none";
  }
  }
  return "no such way";
}
</script>`

// TestRedTeam33CloudWebRTCOtherRealms: no realm of redRTCWays hands a
// cloud page a peer connection, and no datagram or connection reaches a
// decoy. Held.
func TestRedTeam33CloudWebRTCOtherRealms(t *testing.T) {
	redRTC(t, redRTCWays)
}

// TestRedTeam33CloudWebRTCPopups: a popup that loads a page which runs its
// own peer connection (redRTCPopupWays) has none, and reaches no decoy.
// Held. It broke while the guard enabled the Page domain only after it
// resumed a new page: a popup opened with noopener or noreferrer, one
// from a target=_blank link or form, and one of another site each ran a
// peer connection, and TURN over TCP reached 169.254.169.254:80 and
// 10.0.0.5:443 and ICE-TCP 169.254.169.254:8080.
func TestRedTeam33CloudWebRTCPopups(t *testing.T) {
	redRTC(t, redRTCPopupWays)
}

// redRTC runs ways on the cloud stand-in in a namespace with decoys and
// asserts no way ran a peer connection or reached a decoy.
func redRTC(t *testing.T, ways []string) {
	requireCloudGuard(t)
	d := inNetns(t)
	if d == nil {
		return
	}
	requireChromium(t)
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
	routes := func(mux *http.ServeMux, s *site) {
		html := func(w http.ResponseWriter, body string) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, body)
		}
		mux.HandleFunc("/redrtc", func(w http.ResponseWriter, r *http.Request) {
			html(w, strings.ReplaceAll(fmt.Sprintf(redRTCPage, cfg, cands), "{{FRAME}}", widgetsHost+":"+s.port))
		})
		mux.HandleFunc("/redrtc-blank", func(w http.ResponseWriter, r *http.Request) { html(w, "<!doctype html><p>blank</p>") })
		mux.HandleFunc("/redrtc-fetch", func(w http.ResponseWriter, r *http.Request) {
			html(w, `<!doctype html><script>Promise.all(["http://169.254.169.254/redrtc-fetch", "http://10.0.0.5/redrtc-fetch"].map(u => fetch(u, {mode: "no-cors"}).then(() => "reached", () => "refused"))).then(x => new BroadcastChannel("nofetch").postMessage(x.includes("reached") ? "fetched " + x : "none"));</script>`)
		})
		mux.HandleFunc("/redrtc-self", func(w http.ResponseWriter, r *http.Request) {
			ch := r.URL.Query().Get("ch")
			html(w, fmt.Sprintf(redRTCPage, cfg, cands)+fmt.Sprintf(`<script>const tell = x => { new BroadcastChannel(%[1]q).postMessage(x); if (opener) opener.postMessage({ch: %[1]q, said: x}, "*"); };
drive(start(window)).then(tell, e => tell("error " + e));</script>`, ch))
		})
	}
	w := newWorldServing(t, cloudtest.Browserbase, routes, WithResolver(guardResolver()), WithBlockedHosts(privAddr))
	ctx := testCtx(t)
	said := map[string]string{}
	escaped := map[string]string{}
	for _, way := range ways {
		m0, p0 := len(meta.flush(t)), len(priv.flush(t))
		d.reset()
		// A page of its own for each way: document.write replaces the page.
		res, err := w.r.Navigate(ctx, "s", w.site.url(publicHost, "/redrtc"), nil)
		require.NoError(t, err)
		require.Equal(t, route.Cloud, res.Route)
		_, err = w.r.Exec(ctx, "s", "", func(ctx context.Context, call *Call) error {
			got, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf("attack(%q)", way), chromedp.EvalAwaitPromise, asUserGesture))
			said[way] = got
			if err != nil {
				said[way] = "error: " + err.Error()
			}
			return nil
		})
		require.NoError(t, err, way)
		var addrs []string
		for _, e := range d.escapes() {
			addrs = append(addrs, e.addr)
		}
		escaped[way] = fmt.Sprintf("%d datagrams, %d connections %v", len(meta.flush(t))-m0+len(priv.flush(t))-p0, len(addrs), addrs)
	}
	t.Logf("per way, while it ran: %v", escaped)
	d.reset()
	require.NoError(t, w.r.Close())
	datagrams := append(meta.flush(t), priv.flush(t)...)
	conns := d.escapes()
	for _, e := range escaped {
		if e != "0 datagrams, 0 connections []" {
			conns = append(conns, escape{line: e})
		}
	}
	for i := range conns {
		if len(conns[i].line) > 40 {
			conns[i].line = fmt.Sprintf("%q", conns[i].line[:40])
		}
	}
	t.Logf("the page said %v", said)
	t.Logf("%d datagrams, %d connections reached a decoy: %v %v", len(datagrams), len(conns), datagrams, conns)
	for _, way := range ways {
		assert.Contains(t, []string{"none", "no answer"}, said[way], "%s handed the page a peer connection", way)
		assert.False(t, strings.HasPrefix(said[way], "found"), way)
	}
	assert.Empty(t, datagrams, "datagrams that reached a decoy")
	assert.Empty(t, conns, "connections that reached a decoy")
}
