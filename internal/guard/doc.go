// Package guard is the in-browser half of the security rules. URL literals
// are decided before a call; the guard decides what the pages of a browser
// do during it, in every target: tabs, popups, frames in or out of process,
// dedicated, shared and service workers. There is one [Guard] per browser
// connection (one per cloud session, one for the local Chromium, whose
// sessions it tells apart by browser context). It sits in a Mux under
// chromedp (internal/cdpmux) and has three layers:
//
//  1. Fetch on the browser session pauses the HTTP(S) requests of every
//     target of the browser from each target's first request, each hop of
//     a redirect chain on its own ([FetchPatterns]). On a remote browser
//     that is every request: fetches, images, beacons, workers' loads, as
//     much as documents, since nothing else on the browser's side checks
//     where they go. On the local browser it is every document request
//     (popups and frames included) and any request whose canonical URL
//     could name a metadata endpoint; the egress check sees the rest at
//     connect time. Config.Decide decides each one; a pattern is only a
//     filter.
//  2. What Fetch cannot pause (WebSocket handshakes) is stopped per target
//     by offline rules for hosts ([OfflineRules]). They exist only on
//     target sessions, so every target is auto-attached paused
//     (Target.setAutoAttach waitForDebuggerOnStart, flat), gets its rules,
//     and only then runs. On a remote browser WebRTC, which no rule can
//     see, is taken out of every page and frame the same way, unless the
//     config keeps it (webrtc.go). A target whose setup fails is closed
//     and its session's call fails.
//  3. Navigation commands chromedp sends (the caller's run code included)
//     to a scheme a literal would refuse are answered with an error and
//     never reach the browser: Fetch never sees chrome:// or devtools://,
//     and chrome://settings crashes headless Chromium.
//
// Names that resolve to private addresses are beyond what a WebSocket rule
// can see: on the local browser the connect-time check of the egress proxy
// covers them; on a cloud browser they are a known limit
// (docs/security.md).
//
// # What it asks of its user
//
// The guard holds no rule about where a URL may go. Its [Config]'s
// functions decide each URL (the same verdict and policy as the plan's), builds the errors
// it refuses with, and says which browser it covers. The guard knows its
// user's sessions only as [Session] values: the targets of a session's
// browser context, and those its pages open, are that session's. A call
// on a session makes a [Scope] (the names its plan resolved, and what the
// guard refused that fails the call), hands it to the session when it
// starts and takes it back when it ends. A request that comes while no
// call runs (a page's timer between calls) is decided as any other, on a
// lookup of its own rather than on answers a past call got, and fails no
// call; the session's refusal log keeps it. The guard holds nothing of its
// user's but its Config and the sessions, so nothing it does reaches back
// into the router.
package guard
