package guard

import (
	"github.com/hybroute/hybroute/route"
)

// WebRTC on a remote browser. A peer connection reaches the addresses a
// page names in its ICE configuration and its remote candidates, over
// UDP (STUN, ICE checks, TURN) and TCP (TURN, ICE-TCP), through no request
// Fetch pauses and no URL an offline rule can match; a provider's browser
// takes no flag or policy, so the local browser's
// disable_non_proxied_udp is not to be had there. Off is the only state
// the guard can hold (docs/decisions/2026-12-06-webrtc-is-off-on-cloud-pages.md):
//
//   - every page and frame target gets noWebRTC as a script on each new
//     document, run at once on the documents it has, before the target
//     runs: the constructors are gone from every realm of the target,
//     frames made a moment ago included (Chromium runs the script when a
//     realm is made, before the page can touch it);
//   - window.open (and document.open with three arguments, which is
//     window.open) returns no window (null, as for a popup opened with
//     noopener; the popup still opens, and its window.opener still
//     works). A popup is a target of its own, set up only after
//     window.open has returned, while its first document is the opener's
//     to script at once: a frame the opener made in it there, in the same
//     task, had RTCPeerConnection and connected over TCP (measured: TURN
//     to 10.0.0.5:443 and ICE-TCP to 169.254.169.254:8080). No script can
//     reach every path into that document (an index on its window is
//     one), so the opener gets no handle;
//   - every target's offline rules end with a rule for everything that has
//     no URL (cdpcompat.OfflineParams' p2pOffline): the p2p sockets of a
//     realm the script missed send no datagram. Chromium applies those
//     rules to UDP only: a TCP connect still goes out, which is why the
//     script is the measure and this the second layer.
//
// Workers have no RTCPeerConnection.

// webRTCOff reports whether the guard turns WebRTC off in the pages of
// its browser.
func (g *Guard) webRTCOff() bool { return g.w != route.Local && !g.cfg.WebRTC }

// noWebRTC removes the WebRTC constructors from a realm, and makes its
// window.open, and document.open in its three-argument form (the same
// thing), return null; the window they opened loses the constructors too,
// for a caller that gets at it another way. A page that looks for
// RTCPeerConnection finds none, as on a browser built without WebRTC.
const noWebRTC = `(() => {
  const names = ["RTCPeerConnection", "webkitRTCPeerConnection", "RTCIceTransport"];
  const noHandle = (obj, opens, off) => {
    const open = obj && obj.open;
    if (typeof open !== "function" || open.hybrouteNoWebRTC) return;
    const wrapped = { open(...args) {
      const x = Reflect.apply(open, this, args);
      if (!opens(args)) return x;
      if (x) { try { off(x); } catch (_) {} }
      return null;
    } }.open;
    Object.defineProperty(wrapped, "hybrouteNoWebRTC", { value: true });
    Object.defineProperty(obj, "open", { value: wrapped, writable: true, configurable: true, enumerable: true });
  };
  const off = w => {
    for (const n of names) { try { delete w[n]; } catch (_) {} }
    try { noHandle(w, () => true, off); } catch (_) {}
    try { noHandle(w.Document.prototype, args => args.length > 2, off); } catch (_) {}
  };
  off(globalThis);
})();`
