package hybroute

import (
	"context"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/hybroute/hybroute/internal/browsertab"
	"github.com/hybroute/hybroute/internal/config"
	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/store"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Option configures a [Router].
type Option func(*config.Config)

// WithAutoLocalForPrivateURLs sets whether, with a cloud provider, calls that
// target a private address run on the local sidecar (default true). Off,
// private URLs are rejected unless [WithAllowPrivateURLs] is also on.
func WithAutoLocalForPrivateURLs(on bool) Option { return func(c *config.Config) { c.AutoLocal = on } }

// WithAllowPrivateURLs lets private URLs go to the remote browser when they
// would otherwise be rejected (auto-local off, or a CDP override). The
// remote browser usually cannot reach your LAN. Metadata stays blocked.
func WithAllowPrivateURLs(on bool) Option { return func(c *config.Config) { c.AllowPrivate = on } }

// WithAllowSecretsInURLs lets URL literals that carry a credential (a
// credential-named query parameter such as token=, api_key= or
// X-Amz-Signature= with a value, or a userinfo password) go to a remote
// browser. Off (the default), with hybrid routing such a call runs on the
// local browser, and elsewhere (auto-local off, a CDP override) it is
// refused with [netpolicy.ErrSecretInURL]: the system hybroute replaces keeps such
// URLs off cloud browsers, whose providers record the URLs they load.
func WithAllowSecretsInURLs(on bool) Option { return func(c *config.Config) { c.AllowSecrets = on } }

// WithCloudWebRTC keeps WebRTC in the pages of remote browsers (a
// provider's, or the [WithCDPURL] browser). Off (the default), those pages
// have no RTCPeerConnection, in every frame and popup, their window.open
// returns null (the popup opens, but the opener gets no handle to script
// it with: docs/security.md says why), and their peer-to-peer sockets send
// no datagram.
//
// On, a page's peer connections reach whatever address it names in its
// ICE servers and remote candidates, over UDP (STUN, ICE checks, TURN) and
// TCP (TURN, ICE-TCP), from the provider's network: the metadata service
// (169.254.169.254), private addresses, hosts [WithBlockedHosts] names,
// loopback of the browser's machine. No rule of hybroute's sees those
// connections (they are no request the guard can pause), so metadata is
// then blocked for HTTP and WebSockets only. Turn it on only for a
// provider whose network keeps its browsers from metadata and private
// addresses. The local browser's WebRTC is not affected: the egress check
// holds it either way.
func WithCloudWebRTC(on bool) Option { return func(c *config.Config) { c.CloudWebRTC = on } }

// WithCDPURL sends every call to an existing browser at url. Such a browser
// is not local: hybrid routing is off and private URLs are rejected unless
// [WithAllowPrivateURLs] is on.
//
// It is not the same as a [provider.CDPEndpoint] provider, which makes a browser at
// a URL the cloud route of a hybrid router: there, private URLs still run
// on the local Chromium and a browser that cannot be reached falls back to
// it. WithCDPURL overrides routing instead: nothing runs locally, and a
// browser that cannot be reached fails the call.
func WithCDPURL(url string) Option { return func(c *config.Config) { c.CDPURL = url } }

// WithCDPHTTPClient sets the HTTP client the CDP override ([WithCDPURL]) is
// dialled with: its transport, proxy and trusted roots (a private CA, a
// self-signed test front). Default http.DefaultClient. A provider's
// sessions are dialled with the provider's own client
// ([provider.WithHTTPClient]).
func WithCDPHTTPClient(hc *http.Client) Option { return func(c *config.Config) { c.CDPClient = hc } }

// WithResolver sets the resolver names are classified with
// (default net.DefaultResolver).
func WithResolver(r netpolicy.Resolver) Option { return func(c *config.Config) { c.Resolver = r } }

// WithLookupConcurrency sets how many host names one call's plan resolves at
// the same time (default [DefaultLookupConcurrency], 16). Each distinct name
// of a call is resolved once, whatever the number of its literals. n < 1
// keeps the default.
func WithLookupConcurrency(n int) Option {
	return func(c *config.Config) {
		if n > 0 {
			c.LookupConcurrency = n
		}
	}
}

// WithMaxHostsPerCall sets how many distinct host names one call may name
// (default [DefaultMaxHostsPerCall], 4,096). IP literals and names decided
// without DNS (localhost, the metadata names) do not count. A call with
// more fails with [netpolicy.ErrTooManyHosts] before any lookup: closed, because on
// the cloud route no connect-time check would stand behind a literal left
// unchecked. n < 1 keeps the default.
func WithMaxHostsPerCall(n int) Option {
	return func(c *config.Config) {
		if n > 0 {
			c.MaxHostsPerCall = n
		}
	}
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config.Config) { c.Logger = l } }

// WithAllowedSchemes lets URLs of these extra schemes (for example "file")
// through. Such URLs read this machine, so they are private: they only ever
// run on the local browser, and are rejected where private URLs are.
func WithAllowedSchemes(schemes ...string) Option {
	return func(c *config.Config) {
		for _, s := range schemes {
			c.AllowedSchemes = append(c.AllowedSchemes, strings.ToLower(strings.TrimSuffix(s, ":")))
		}
	}
}

// WithEgressDialer sets the dialer the egress check hands an allowed
// connection to; default a net.Dialer. It is called with an IP address and
// port that the check has classified (never a name), so a custom dialer
// must not resolve or rewrite the address unless it means to: tests use it
// to send the public stand-in addresses of their fake DNS to loopback.
func WithEgressDialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) Option {
	return func(c *config.Config) { c.EgressDialer = dial }
}

// WithChromiumPath makes the local sidecar run this Chromium binary (an
// absolute path, or a name looked up on PATH) instead of searching for one.
func WithChromiumPath(path string) Option {
	return func(c *config.Config) { c.ChromiumPath = path }
}

// WithChromiumFlags adds command-line flags to the local Chromium. A string
// value passes --name=value, true passes --name, false removes a flag the
// sidecar would otherwise set. They apply after the sidecar's own flags, so
// they win (including no-sandbox, headless and the network-quiet ones). The
// flags the sidecar manages (remote-debugging-port, remote-debugging-address,
// remote-debugging-pipe, user-data-dir, and the proxy flags that send every
// connection through the egress check: proxy-server, proxy-bypass-list,
// no-proxy-server, proxy-pac-url, proxy-auto-detect, the QUIC switches,
// force-webrtc-ip-handling-policy, and the extension switches, since an
// extension's proxy outranks the command line's; and the site-isolation
// ones: site-per-process, disable-site-isolation-trials, single-process)
// make the start fail.
func WithChromiumFlags(flags map[string]any) Option {
	return func(c *config.Config) {
		if c.ChromiumFlags == nil {
			c.ChromiumFlags = make(map[string]any, len(flags))
		}
		maps.Copy(c.ChromiumFlags, flags)
	}
}

// WithLocalViewport sets the viewport of every tab of the local browser, in
// CSS pixels at a device scale factor of 1 (default 1280x720), so a
// screenshot of the page as shown is width x height pixels. 0, 0 leaves
// headless Chromium's own (780x437 from its 800x600 window). Cloud
// sessions keep the viewport their provider gives them.
func WithLocalViewport(width, height int) Option {
	return func(c *config.Config) {
		if width <= 0 || height <= 0 {
			width, height = 0, 0
		}
		c.ViewportW, c.ViewportH = width, height
	}
}

// WithDialogPolicy sets how JavaScript dialogs (alert, confirm, prompt,
// beforeunload) are answered on every route; the default dismisses alert,
// confirm and prompt, and lets a page that asks before it is left go.
// Every dialog is answered as it opens and reported in [Result.Dialogs].
func WithDialogPolicy(p DialogPolicy) Option {
	return func(c *config.Config) { c.Dialogs = browsertab.DialogPolicy(p) }
}

// WithIdleTimeout sets how long a session may sit unused before the reaper
// releases it (default 120 s), and how often the reaper sweeps (default 30 s).
func WithIdleTimeout(idle, sweep time.Duration) Option {
	return func(c *config.Config) {
		if idle > 0 {
			c.IdleTimeout = idle
		}
		if sweep > 0 {
			c.ReapInterval = sweep
		}
	}
}

// WithCreateTimeout bounds the cloud part of one session creation: the
// provider's API call and the CDP connect (default 60 s). The local floor
// that takes over when the provider fails has its own budget
// ([WithLocalTimeout]), so a hanging provider never eats it. A caller's own
// deadline still applies: the provider then gets at most half of what is
// left (but at least 5 s).
func WithCreateTimeout(d time.Duration) Option {
	return func(c *config.Config) {
		if d > 0 {
			c.CreateTimeout = d
		}
	}
}

// WithLocalTimeout bounds the creation of a local session, a fallback
// included: waiting for the local Chromium to start and opening its tab
// (default 60 s). A start a creation gave up on goes on for the next one. A
// caller's own deadline still applies.
func WithLocalTimeout(d time.Duration) Option {
	return func(c *config.Config) {
		if d > 0 {
			c.LocalTimeout = d
		}
	}
}

// WithFallback sets whether a cloud session the provider cannot give falls
// back to local Chromium (default true). Off, for users who must never
// leave the cloud, the call fails with the provider's error, wrapped (so
// errors.Is(err, [provider.ErrRateLimited]) and the like work); during a back-off
// window it fails without asking the provider.
func WithFallback(on bool) Option { return func(c *config.Config) { c.Fallback = on } }

// WithProviderBackoffCap caps the back-off window a provider failure opens
// (default 5 minutes): an advertised Retry-After, the growing window of
// failures that advertise none (5 s, doubling), and the window of a
// configuration error (401, 402, 403), which stays at the cap until a
// probe succeeds.
func WithProviderBackoffCap(d time.Duration) Option {
	return func(c *config.Config) {
		if d > 0 {
			c.MaxBackoff = d
		}
	}
}

// WithMeterProvider sets the OpenTelemetry meter provider the router's
// metrics are made on (default: the global one, otel.GetMeterProvider(),
// a no-op unless the application sets it). docs/library.md
// (Observability) lists the instruments.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config.Config) { c.MeterProvider = mp }
}

// WithTracerProvider sets the OpenTelemetry tracer provider of the router's
// spans (default: the global one, otel.GetTracerProvider()).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config.Config) { c.TracerProvider = tp }
}

// WithStore sets the store of the provider's shared state (its back-off
// window and probe, and the concurrency leases): the default is a
// [store.Memory] of the router's own. Routers that share a store, in one
// process or across a fleet (github.com/hybroute/hybroute/redisstore),
// act as one client of the provider. A store that fails or is slow never
// fails a call: the router uses its in-process state until it answers.
func WithStore(s store.Store) Option { return func(c *config.Config) { c.Store = s } }

// WithStoreTimeout bounds one call to the store (default 500 ms). Past it,
// the router goes on with its in-process state.
func WithStoreTimeout(d time.Duration) Option {
	return func(c *config.Config) {
		if d > 0 {
			c.StoreTimeout = d
		}
	}
}

// WithProviderConcurrency caps the cloud sessions open at once across
// every router sharing the store (default: no cap). A new session past the
// cap runs on local Chromium, marked FallbackFromCloud with the reason
// "provider concurrency limit", instead of earning the provider's 429.
// Each session holds a lease on its slot, renewed while it lives, so a
// replica that dies gives its slots back within 30 s. While the store is
// unreachable each router keeps to n on its own.
func WithProviderConcurrency(n int) Option {
	return func(c *config.Config) {
		if n > 0 {
			c.ProviderConcurrency = n
		}
	}
}

// Operator rules narrow what the security floor allows: a list of hosts a
// router's browsers may reach (WithAllowedHosts) and a list they may not
// (WithBlockedHosts). They are part of the policy's refuse, so the plan,
// the guard (every request of a remote browser, every document of the
// local one), the landed-URL check and the egress check (every connection
// of the local browser) hold them alike. They never widen: a host on the
// allow list is still refused when it is metadata, or private where
// private URLs may not run.

// WithAllowedHosts lets the router's browsers reach only hosts that match
// one of patterns, on every route: URL literals, every request the guard
// sees, redirect hops, landed URLs and, on the local browser, every
// connection (WebSockets included). Anything else is refused with
// [netpolicy.ReasonHostNotAllowed]. A pattern is a host name (example.com: that
// host only), a wildcard (*.example.com: its subdomains, not example.com
// itself), an IP address, or an address prefix (10.1.0.0/16), which
// matches a literal or a name all of whose addresses fall in it. Names are
// compared as Chromium writes them (lower case, punycode). With no pattern
// at all (patterns empty) [New] fails with an error matching
// [netpolicy.ErrHostRule], rather than allow every host.
func WithAllowedHosts(patterns ...string) Option {
	return func(c *config.Config) {
		c.AllowedHosts = append(c.AllowedHosts, patterns...)
		c.AllowListGiven = true
	}
}

// WithBlockedHosts refuses hosts that match one of patterns (the syntax of
// [WithAllowedHosts]), on every route, with [netpolicy.ReasonHostBlocked]. An
// address prefix matches a literal in it or a name with any address in it.
// A blocked host stays blocked when the allow list names it too.
func WithBlockedHosts(patterns ...string) Option {
	return func(c *config.Config) { c.BlockedHosts = append(c.BlockedHosts, patterns...) }
}

// The default viewport of the local browser's tabs. Headless Chromium's own
// is what is left of an 800x600 window (780x437), smaller than any page is
// designed for; agents screenshot and click in it. Every local tab gets it
// when it is made (internal/browsertab's SetViewport), so a call pays
// nothing for it.
const (
	DefaultViewportWidth  = config.ViewportWidth  // 1280
	DefaultViewportHeight = config.ViewportHeight // 720
)

// WithProfileDir keeps a persistent profile for each session on the local
// browser under dir: the cookies of a session key survive [Router.Release],
// the idle reaper and a new Router (a new process) on the same dir. Each
// cache key has a directory of its own under dir, named from the key (a
// readable prefix and a hash: no key can name a path outside dir), so a
// session key's hybrid local session (key::local) and its fallback (key)
// keep separate profiles. What is kept: the persistent cookies (not the
// session cookies, not the partitioned ones), in Playwright's storageState
// shape; localStorage, IndexedDB and the cache are not. Only one Router at
// a time may use dir: New fails with [ErrProfileLocked] while another
// holds it. Directories are made 0700, files 0600. "" (the default) keeps
// every local session off the record.
func WithProfileDir(dir string) Option { return func(c *config.Config) { c.ProfileDir = dir } }

// Defaults of [WithLookupConcurrency] and [WithMaxHostsPerCall]: a plan
// resolves each distinct name of a call once, a bounded number at a time
// (internal/floor's DecideAll).
const (
	DefaultLookupConcurrency = config.LookupConcurrency // 16
	DefaultMaxHostsPerCall   = config.MaxHostsPerCall   // 4096
)

// WithMaxSessions caps the sessions the router keeps open at once, cloud
// and local, sessions being created included (default 0: no cap). A new
// session past the cap ends the least recently used idle one; when every
// session is running a call, the new one waits for one to become idle or
// end, within its call's wait for a turn, and fails with [ErrBusy] when
// that wait would not serve it.
func WithMaxSessions(n int) Option {
	return func(c *config.Config) {
		if n >= 0 {
			c.MaxSessions = n
		}
	}
}

// WithMaxLocalMemory caps the memory of the local Chromium, in bytes: the
// proportional set size (PSS) of its processes, shared pages counted once
// (default 0: no cap). A new local session that finds the browser at or
// over the budget first ends idle local sessions, least recently used
// first; when none is idle, it waits as past [WithMaxSessions], and fails
// with [ErrBusy] when the wait would not serve it. The idle reaper also
// ends idle local sessions while the browser is over the budget. Linux
// only: elsewhere the memory is not measured and the option does nothing.
func WithMaxLocalMemory(bytes int64) Option {
	return func(c *config.Config) {
		if bytes >= 0 {
			c.MaxLocalMemory = bytes
		}
	}
}
