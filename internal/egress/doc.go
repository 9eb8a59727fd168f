// Package egress is the connect-time check of the local browser: an HTTP
// proxy on 127.0.0.1 that every connection of the local Chromium goes
// through, decided on the addresses it will actually dial.
//
// # Why at connect time
//
// URL literals are decided before a call and the guard watches the tab's
// documents, but a page can build a URL at run time, open a popup, run an
// out-of-process iframe or a worker, or use a name that resolves to
// metadata only when it is dialled. So the browser is started with
// --proxy-server pointing here (with --proxy-bypass-list=<-loopback>, so
// that even localhost is proxied, and QUIC off, so nothing leaves over
// UDP), and the proxy decides each connection when it is made.
//
// # What it decides
//
// The proxy has no rules of its own: its [Config].Decide decides each host:port,
// with the same classifier and policy as every other check of its user,
// resolving a name once. The proxy then dials only the addresses that were
// decided ([Decision].Addrs): there is no second lookup, so DNS rebinding
// cannot swap them. A refusal ([Refusal]) is a 403 with a short text body
// for a CONNECT tunnel (Chromium turns it into a network error), a
// connection closed without an answer for a plain-HTTP request, one
// warning per host and minute in the log, and a call of [Config].Refused.
//
// The proxy bounds what it holds ([Limits]): a cap on the connections
// from the browser, past which new ones are closed at once, a timeout on
// each decision, and idle timeouts on tunnels, kept-alive proxy
// connections and pooled upstream connections.
//
// # Grants
//
// Private addresses may be allowed on the local browser, but a public page
// that runs there must not get the user's loopback and LAN with it. So
// each browser context has a [Door] of its own: a listener on a loopback
// port, named as the context's proxyServer (Chromium takes no proxy
// credentials there; a port it does). A connection is the session's whose
// door it came through; one through the browser-wide door (--proxy-server:
// the default context, Chromium's own traffic) belongs to no session and
// reaches public addresses only.
//
// A session reaches a private address only by its door's [Grant]: the
// private hosts its call named, on any port, and the addresses those names
// had (so the page on localhost:3000 reaches its API on 127.0.0.1:8080). A
// host it does not name is refused ([Config].Ungranted): a session granted
// 192.168.1.9 does not reach 10.0.0.5. The grant ends when a page of the
// session starts loading a document from a host the grant does not cover
// and the running call did not name ([Proxy.Leave], [Door.NameCall]); the
// upstream connections dialled under it are closed then. A grant reaches
// whatever runs in the context, so each door also keeps the hosts of every
// document its context loaded ([Proxy.Loaded]); its user gives a grant
// only to a context that is clean for it ([Door.Clean]) and moves the
// session to a fresh context otherwise. What earns a grant, and
// metadata's refusal whatever a grant says, are its user's.
package egress
