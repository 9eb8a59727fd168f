// Package hybroute decides, for every browser call an agent makes, which
// browser runs it: a cloud browser, or a local headless Chromium on this
// machine. Cloud first, local as the floor, and sensitive addresses never
// leave the machine.
//
// # Ten concepts
//
// A newcomer needs these, and nothing else, to use the package:
//
//  1. A [Router] routes calls. [New] takes a cloud [provider.Provider]
//     (nil: everything runs locally) and options ([Option]); Close ends
//     every session and the local Chromium.
//  2. A provider is a cloud browser service: package provider has a
//     client for each (Browserbase, Browser Use, Steel, browserless, any
//     CDP endpoint…).
//  3. A session key names one browser session of the caller's ("the
//     morning job"). Its calls share a page. The local browser's session
//     of a key is cached as key+[LocalSuffix] ("::local"), apart from the
//     cloud's, so the two never share a browser.
//  4. A call is [Router.Exec] (code, whose URL literals decide the route)
//     or [Router.Navigate] (a URL, which picks the browser). It hands its
//     run a chromedp context bound to the session's tab and a [Call]
//     handle: the page check before a read, the route, the guard's
//     refusals, a second tab.
//  5. A route is where a call runs: [route.Cloud] or [route.Local]
//     ([route.None], the zero value, for a call no browser ran).
//  6. A verdict is the one decision on one URL ([netpolicy.Verdict]): its
//     class (public, private, metadata…) decides both the safety check and
//     the route, through one predicate, [Router.HybridRoutesLocally].
//  7. A plan is a call's route and cache key from its verdicts
//     ([Router.Plan], a dry run that starts nothing).
//  8. The floor is the rules no option loosens (package netpolicy):
//     metadata is blocked everywhere, a public page is refused a private
//     one, the landed URL is re-checked; a guard inside every browser and
//     an egress check on the local one hold them for every request.
//  9. A fallback is a call that ran on the local Chromium because the
//     provider failed ([Result.FallbackFromCloud] and its reason); one
//     failure keeps new sessions local for the provider's Retry-After.
//  10. A [Result] says what a call did: where it ran, its cache key, the
//     fallback, the URL it landed on, the dialogs the page opened.
//
// The options that matter first are [WithLogger], [WithAllowPrivateURLs]
// and [WithAutoLocalForPrivateURLs]; a fleet of routers shares a
// [store.Store] ([WithStore]). Where a person must act in a session's page
// (a login with a second factor), [Router.LiveViews] serves its live view
// and hands the page over: what the person does there are calls of the
// session's key, under the same floor.
//
// # Layers
//
// docs/layers_test.go is the map: it gives every package of the module a
// rank and refuses an import that points up. From the top:
//
//	agent, mcpserver, cmd/hybroute   the toolset a model calls, and its MCP server
//	hybroute (this package)          call.go (the handle), router.go (plan and
//	                                 run), session.go, cloud.go (the
//	                                 provider's sessions, health and fleet),
//	                                 floor.go (the policy, the guard, grants),
//	                                 options.go, errors.go, status.go
//	internal/cloud                   a cloud session, or the floor in its place
//	internal/floor                   the options as one policy, and the
//	                                 decisions the guard and egress carry out
//	internal/sessions, internal/config, internal/statesync, internal/admission
//	                                 the session cache; the options' values; a
//	                                 session's state in its browsers; the queue
//	internal/guard, internal/egress  the enforcement points inside the browsers
//	internal/sidecar, internal/remotetab, internal/browsertab
//	                                 the local Chromium; a remote browser's tab;
//	                                 a tab on any browser
//	internal/fleet, internal/health, internal/outage
//	                                 the provider's back-off, the leases, how a failure reads
//	provider, store, state           public: the cloud clients, the fleet's
//	                                 store, a session's storage state
//	netpolicy, route                 public: the verdict, the rule, the location
//
// The README has the routing table and an example; docs/security.md the
// rules and known limits; docs/library.md and docs/server.md how to run
// the library and the server; docs/decisions the reasons for each choice.
package hybroute
