// Package hybroutetest is a test kit for the agents and harnesses that
// embed hybroute: their tests can meet the failures hybroute exists for (a
// provider that rate-limits, hangs, wants payment or answers garbage, a
// session that dies mid-call, a page the guard refuses) without a real
// service, a key, or the network.
//
//   - [NewCloud] starts a stand-in for a cloud browser service (Browserbase,
//     Browser Use, Steel, browserless, and the others of [Kinds]): a fake of
//     its API, answering as the service documents, in front of a real
//     headless Chromium. A test scripts its answers ([Cloud.Answer]:
//     [Healthy], [RateLimited], [PaymentRequired], [LimitForbidden],
//     [Hang], [Malformed]), kills its sessions ([Cloud.KillSessions]), and
//     counts its creates and releases.
//   - [NewRouter] gives a Router wired to that Cloud and to a local
//     Chromium, with a fixed resolver, closed when the test ends, and
//     checked for leftovers: processes, profile directories, goroutines.
//   - [NewSite] serves pages that the Router and both browsers take for a
//     public host's ([PublicHost], any name under .test), a private one's
//     ([PrivateHost]), while every byte stays on loopback.
//   - Package storetest is the conformance suite of a store.Store, for a
//     Router's shared state kept somewhere of the user's own.
//
// Everything listens on, and connects to, loopback only. The Chromium is
// found as hybroute finds its own ($CHROMIUM, or the usual names on PATH);
// without one, or under -short, the tests that need it are skipped.
package hybroutetest
