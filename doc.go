// Package hybroute decides, for every browser call an agent makes, which
// browser runs it: a cloud browser, or a local headless Chromium on this
// machine. Cloud first, local as the floor, and sensitive addresses never
// leave the machine.
//
// A [Router] scans the call's code for URL literals ([ScanURLs]), computes
// one [netpolicy.Verdict] per URL, and turns the verdicts into a [Plan]: the route
// (cloud or local) and the session cache key. The same predicate,
// [Router.HybridRoutesLocally], decides both navigate and exec calls, so the
// two can never drift apart. [Router.Exec] and [Router.Navigate] then run the
// caller's chromedp code on that session's tab; [Router.Plan] is the
// decision alone.
//
// # Layers
//
// A call goes down these layers, and the files named under each own it. One
// rule lives in one layer, so that the plan, the guard, the landed-URL check
// and the egress check cannot disagree about a URL:
//
//	scan     URL literals of the call's code, read as a browser would
//	  │        urlscan.go, internal/urlscan
//	verdict  the class of one URL: metadata, private, public, no route, invalid
//	  │        package netpolicy (classes, verdicts, operator host rules, one
//	  │        lookup per host per call, the metadata table), internal/whatwg
//	  │        (hosts as Chromium parses them), internal/metadata
//	policy   the one allow/refuse rule and the routing table, from the options
//	  │        netpolicy.Policy (the rule), package route (the one location
//	  │        type: cloud or local), policy.go (the options turned into
//	  │        it, routes, cache keys), options.go
//	plan     the route and cache key of a call, from its verdicts
//	  │        router.go (Plan, PlanNavigate), routes.go (a session's last route)
//	session  one browser session per cache key, created once, released once
//	  │        session.go, cloud.go (remote browsers), fallback.go (the local
//	  │        floor), internal/health, internal/fleet and package store
//	  │        (provider back-off, probe and leases; fallback.go hands
//	  │        them the options), package provider (the sessions of the
//	  │        cloud providers), internal/admission and bounds.go (caps)
//	tab      the session's pages: its front tab, wedged tabs, dialogs, state
//	  │        internal/sidecar and sidecar_owner.go (the local Chromium),
//	  │        internal/browsertab, tablist.go, tabs.go, dialog.go,
//	  │        state_session.go and internal/statesync (storage state),
//	  │        restpage.go and internal/remotetab (browsers without CDP)
//	  ├─ guard   every target of the browser, each request paused until
//	  │            it is decided; navigation to the browser's own pages refused
//	  │            internal/guard (it asks guard_owner.go about each URL;
//	  │            a call hands it a scope of its answers and refusals),
//	  │            internal/cdpmux (the mux under chromedp),
//	  │            internal/cdpcompat (the protocol of each major)
//	  └─ egress  every connection the local Chromium makes, decided on the
//	               address it dials, private ones by grant per session
//	               internal/egress (the proxy, its doors and grants),
//	               egress_owner.go (the policy's decisions, a call's grant),
//	               internal/sidecar (a page leaving its grant)
//
// The guard, the landed-URL check and the egress check decide a request
// with the same verdict and the same policy as the plan, so a URL the plan
// refuses is refused wherever it turns up: in a redirect, a popup, a worker
// or a connection.
//
// # Where to read more
//
// The README has the routing table and an example; docs/security.md the
// security rules and known limits; docs/operations.md providers, the MCP
// server, the fleet, metrics and the proof suite; docs/figures.md the
// measured figures; docs/decisions the reasons for each choice.
package hybroute
