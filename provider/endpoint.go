package provider

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/hybroute/hybroute/internal/cdpconn"
	"github.com/hybroute/hybroute/internal/metadata"
	"github.com/hybroute/hybroute/internal/redact"
	"github.com/hybroute/hybroute/internal/whatwg"
	"github.com/hybroute/hybroute/netpolicy"
)

// Where a client may send its key. Every request a client makes is
// checked against these rules before it is sent, whatever built its URL
// (the default base URL, WithBaseURL, a spec's base_url, an absolute URL
// a provider answered): the key never crosses a network unencrypted, and
// a provider URL never names a metadata service, nor a private address
// the operator did not allow.

var (
	// ErrCleartext is matched by the error of a request that would carry
	// a provider key (a header, a query parameter such as browserless's
	// token, a URL's userinfo) over plain http or ws to a host that is
	// not loopback (a literal of 127.0.0.0/8 or ::1, or exactly localhost;
	// not "localhost." nor a name under localhost, which a DNS server may
	// answer). Nothing was sent. Use https (wss), or a loopback address
	// for a stand-in on this machine.
	ErrCleartext = errors.New("hybroute: a provider key would go unencrypted to a host that is not loopback")
	// ErrPrivateEndpoint is matched by the error of a request to a
	// provider URL whose host is a cloud metadata service (always), or a
	// private address (a LAN, link-local, unique-local or shared address)
	// without [WithPrivateEndpoint]. Nothing was sent.
	ErrPrivateEndpoint = errors.New("hybroute: the provider URL is a metadata or private address")
)

// WithPrivateEndpoint lets the client call a provider (its API, or a CDP
// endpoint) at a private address given as an IP literal: a LAN address
// (10/8, 172.16/12, 192.168/16), a link-local, unique-local or shared
// (100.64/10) one. What it opens: the client's requests, its key with
// them, go to a machine inside the network, so whoever writes the
// provider URL (a spec file, --provider-url) can make this process call an
// internal service. It is for a browser service the operator runs on the
// LAN. It does not open cleartext ([ErrCleartext]: a key goes over https
// to anything but loopback), nor metadata addresses, which stay refused.
// Loopback needs no option.
func WithPrivateEndpoint() Option { return func(c *config) { c.privateEndpoint = true } }

// CheckEndpoint reports whether a client made with opts may call rawURL,
// with a key when keyed: it is an error matching [ErrCleartext] or
// [ErrPrivateEndpoint] when a request would be refused. A command checks
// the URLs of its configuration with it before it serves; the clients
// check every request themselves.
func CheckEndpoint(rawURL string, keyed bool, opts ...Option) error {
	var c config
	for _, o := range opts {
		o(&c)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("the provider URL %s does not parse", redact.URL(rawURL))
	}
	return checkEndpoint(u, keyed, c.privateEndpoint)
}

// checkEndpoint is CheckEndpoint on a parsed URL. A metadata address is
// named first, then cleartext, the worse of what is left.
func checkEndpoint(u *url.URL, keyed, allowPrivate bool) error {
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	name := u.Scheme + "://" + u.Host
	if metadata.IsName(host) {
		return fmt.Errorf("%w: %s names a cloud metadata service", ErrPrivateEndpoint, name)
	}
	loopback := cdpconn.IsLoopbackHost(u.Hostname())
	a, err := netip.ParseAddr(host)
	literal := err == nil
	if literal {
		a = a.Unmap().WithZone("")
	} else if host != "" {
		// The C library's resolver (inet_aton) and browsers read
		// 2852039166, 0xa9.0xfe.0xa9.0xfe or 0251.0376.0251.0376 as an
		// address, without DNS: judge such a host by the address it
		// spells. It never counts as loopback (fail closed).
		w, werr := whatwg.Parse("http://" + u.Host + "/")
		switch {
		case werr != nil && looksNumeric(host):
			return fmt.Errorf("%w: %s looks like an address but does not parse as one", ErrPrivateEndpoint, name)
		case werr == nil && (w.Kind == whatwg.HostIPv4 || w.Kind == whatwg.HostIPv6):
			a, literal = w.Addr.Unmap(), true
		case werr == nil && metadata.IsName(strings.TrimSuffix(w.Host, ".")):
			return fmt.Errorf("%w: %s names a cloud metadata service", ErrPrivateEndpoint, name)
		}
	}
	class := netpolicy.ClassPublic
	if literal {
		// netpolicy's classes: metadata first (several metadata addresses
		// sit in private ranges), and the IPv6 forms that carry an IPv4
		// address (NAT64, 6to4, Teredo, IPv4-compatible) judged by it.
		class = netpolicy.ClassifyAddr(a)
		if class == netpolicy.ClassMetadata {
			return fmt.Errorf("%w: %s is a cloud metadata address", ErrPrivateEndpoint, name)
		}
	}
	if (keyed || u.User != nil) && (u.Scheme == "http" || u.Scheme == "ws") && !loopback {
		return fmt.Errorf("%w: %s; use %ss", ErrCleartext, name, u.Scheme)
	}
	if class != netpolicy.ClassPublic && !loopback && !allowPrivate {
		return fmt.Errorf("%w: %s is a private address; an operator who runs the provider there allows it explicitly (provider.WithPrivateEndpoint, hybroute --allow-private-provider-url)", ErrPrivateEndpoint, name)
	}
	return nil
}

// looksNumeric reports a host whose last label is a number (decimal, or
// hex with 0x): the WHATWG parser and inet_aton take it for an address.
func looksNumeric(host string) bool {
	last := host[strings.LastIndexByte(host, '.')+1:]
	if strings.HasPrefix(last, "0x") {
		last = last[2:]
		return strings.Trim(last, "0123456789abcdef") == ""
	}
	return last != "" && strings.Trim(last, "0123456789") == ""
}

// checkRedirect is the redirect policy put before next (the caller's, or
// net/http's default of at most 10 when nil): a redirect to a URL the
// endpoint rules refuse, or to another host (host and port) while the
// request carries a key, is not followed, and the call fails with the
// refusal.
func checkRedirect(next func(*http.Request, []*http.Request) error, allowPrivate bool) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		keyed := len(via) > 0 && carriesKey(via[0])
		if err := checkEndpoint(req.URL, keyed, allowPrivate); err != nil {
			return fmt.Errorf("a redirect: %w", err)
		}
		if keyed && !strings.EqualFold(req.URL.Host, via[0].URL.Host) {
			return fmt.Errorf("%w: a redirect to another host, %s://%s, with the key", ErrCleartext, req.URL.Scheme, req.URL.Host)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
}

// carriesKey reports a request that may carry a provider key: a query,
// userinfo, or any header but the few a client sets without one (fail
// closed: the key headers differ by provider).
func carriesKey(r *http.Request) bool {
	if r.URL.RawQuery != "" || r.URL.User != nil {
		return true
	}
	for k := range r.Header {
		switch http.CanonicalHeaderKey(k) {
		case "Accept", "Accept-Encoding", "Content-Type", "Content-Length", "User-Agent":
		default:
			return true
		}
	}
	return false
}

// refusedEndpoint reports whether err is a refusal of these rules.
func refusedEndpoint(err error) bool {
	return errors.Is(err, ErrCleartext) || errors.Is(err, ErrPrivateEndpoint)
}
