// Package netpolicy is hybroute's network policy: what a URL or an
// address is, and whether a browser may open it.
//
// It owns the facts every check of the library decides with, so that the
// plan of a call, the in-browser guard, the landed-URL check and the
// egress check of the local browser cannot disagree about a URL:
//
//   - [Class] and [ClassifyAddr]: what an address is (public, private,
//     cloud metadata), IPv6 forms that embed IPv4 judged by the IPv4 inside;
//   - [Classifier]: the [Verdict] on a URL, its host read as Chromium reads
//     it, names resolved with a [Resolver], each name once per call
//     ([Lookups]);
//   - [Policy]: the one allow/refuse rule, with the operator's
//     [HostRules], and the [Reason] and sentinel error of every refusal
//     ([BlockedError]);
//   - [Metadata]: the one table of cloud metadata endpoints, read-only.
//
// It is public because this is where users plug in and read back: a
// [Resolver] of their own (a cache, a split-horizon DNS), the verdicts a
// plan returns, the reasons in errors and logs, and the same rule for a
// check of their own (a proxy in front of a browser, a URL a tool is about
// to fetch). It knows nothing of routes, sessions or browsers beyond
// the [route.Route] a URL would be opened on: the hybroute package turns
// verdicts into routes.
package netpolicy
