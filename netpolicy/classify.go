package netpolicy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/hybroute/hybroute/internal/metadata"
	"github.com/hybroute/hybroute/internal/whatwg"
)

// Classifier computes the class of a URL: its host as Chromium parses it
// (WHATWG URL rules), and for a name, what its resolver answers. It is
// built once and never changes, so it is shared without a lock.
type Classifier struct {
	resolver       Resolver
	allowedSchemes []string
}

// NewClassifier is a classifier that resolves names with res (nil:
// net.DefaultResolver) and also accepts the non-web schemes in
// allowedSchemes ("file" or "file:", any case). A URL of such a scheme
// reads this machine, so it is [ClassPrivate]: it is never sent to a
// remote browser.
func NewClassifier(res Resolver, allowedSchemes ...string) *Classifier {
	if res == nil {
		res = net.DefaultResolver
	}
	c := &Classifier{resolver: res}
	for _, s := range allowedSchemes {
		c.allowedSchemes = append(c.allowedSchemes, strings.ToLower(strings.TrimSuffix(s, ":")))
	}
	return c
}

// Resolver is the resolver names are classified with: a check that
// resolves a name itself (a cache of its own, a time limit) asks it, and
// finishes the verdict with [Resolved].
func (c *Classifier) Resolver() Resolver { return c.resolver }

// AllowsScheme reports whether scheme (lower case, no colon) is one of the
// non-web schemes this classifier accepts, which only the local browser
// may open.
func (c *Classifier) AllowsScheme(scheme string) bool {
	return slices.Contains(c.allowedSchemes, scheme)
}

// Classify computes the class of rawURL. A name is answered from known,
// the lookups of the call it belongs to, when they hold it (nil: none);
// else the resolver is asked. It never fails: an unparseable URL is
// [ClassInvalid] with Err set to what was wrong. Err is set for no other
// class: the allow/refuse rule is the [Policy]'s.
func (c *Classifier) Classify(ctx context.Context, rawURL string, known *Lookups) Verdict {
	v, name := c.Parse(rawURL)
	if name == "" {
		return v
	}
	if a, ok := known.Get(name); ok {
		return Resolved(v, a.Addrs, a.Err)
	}
	addrs, err := c.resolver.LookupNetIP(ctx, "ip", name)
	return Resolved(v, addrs, err)
}

// Parse is the part of Classify that needs no DNS. When the class depends
// on what a name resolves to, it returns that name (as the resolver is
// asked it) and a verdict for [Resolved] to finish; otherwise name is
// empty and the verdict is final. A caller with lookups of its own (a
// cache, a time limit) resolves the name itself, without a closure that
// would cost every verdict an allocation.
func (c *Classifier) Parse(rawURL string) (v Verdict, name string) {
	v = Verdict{URL: rawURL}
	u, err := whatwg.Parse(rawURL)
	if err != nil {
		return invalid(v, ReasonInvalidURL, err), ""
	}
	switch u.Scheme {
	case "http", "https", "ws", "wss":
	case "about":
		if IsNoRouteAbout(rawURL) {
			v.Class = ClassNoRoute
			return v, ""
		}
		return invalidScheme(v, u.Scheme), ""
	case "data":
		v.Class = ClassNoRoute
		return v, ""
	case "chrome-error":
		if u.Host == "chromewebdata" {
			// The page Chromium shows after a load failed: a tab lands
			// there, and it loads nothing.
			v.Class = ClassNoRoute
			return v, ""
		}
		return invalidScheme(v, u.Scheme), ""
	default:
		if c.AllowsScheme(u.Scheme) {
			// An allowed non-web scheme (file:, say) reads this machine:
			// it must never be sent to a remote browser.
			v.Host = u.Host
			v.Class = ClassPrivate
			return v, ""
		}
		return invalidScheme(v, u.Scheme), ""
	}
	v.Host = u.Host
	switch u.Kind {
	case whatwg.HostIPv4, whatwg.HostIPv6:
		v.Addrs = []netip.Addr{u.Addr}
		v.Class = ClassifyAddr(u.Addr)
		return v, ""
	case whatwg.HostDomain:
	default:
		return invalid(v, ReasonInvalidURL, errors.New("no host")), ""
	}
	if cl, ok := ClassifyName(u.Host); ok {
		v.Class = cl
		return v, ""
	}
	return v, lookupName(u.Host)
}

// lookupName is the name the resolver is asked for host: one trailing dot
// (an absolute name) is the same name without it.
func lookupName(host string) string { return strings.TrimSuffix(host, ".") }

// Resolved finishes a verdict of [Classifier.Parse] with the resolver's
// answer for its name: the most restrictive class among the addresses
// ([ClassifyAddrs]), or, for a name that does not resolve, public (the
// cloud browser does its own DNS) unless its suffix is reserved for
// private use ([PrivateUseName]).
func Resolved(v Verdict, addrs []netip.Addr, err error) Verdict {
	if err != nil || len(addrs) == 0 {
		if err == nil {
			err = ErrNoAnswers
		}
		v.ResolveErr = err
		v.Class = ClassPublic
		if PrivateUseName(v.Host) {
			v.Class = ClassPrivate
		}
		return v
	}
	v.Addrs = addrs
	v.Class = ClassifyAddrs(addrs)
	return v
}

// invalid makes v a ClassInvalid verdict, refused for reason.
func invalid(v Verdict, reason Reason, detail error) Verdict {
	v.Class = ClassInvalid
	v.Err = Block(v, reason, detail)
	return v
}

func invalidScheme(v Verdict, scheme string) Verdict {
	return invalid(v, ReasonSchemeNotAllowed, fmt.Errorf("scheme %q is not allowed", scheme))
}

// IsNoRouteAbout accepts the two about: URLs Chromium renders without any
// network: about:blank and about:srcdoc (with any query or fragment).
func IsNoRouteAbout(raw string) bool {
	s := strings.TrimSpace(raw)
	if len(s) < len("about:") {
		return false
	}
	rest := s[len("about:"):]
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	return strings.EqualFold(rest, "blank") || strings.EqualFold(rest, "srcdoc")
}

// ClassifyName decides the names that are decided without DNS: the
// metadata names of the table ([Metadata]) and localhost with its
// subdomains. host is lower-case ASCII, as Chromium writes a host; ok is
// false for any other name.
func ClassifyName(host string) (c Class, ok bool) {
	if metadata.IsName(host) {
		return ClassMetadata, true
	}
	h := strings.TrimRight(host, ".")
	if h == "localhost" {
		return ClassPrivate, true
	}
	if strings.HasSuffix(h, ".localhost") {
		return ClassPrivate, true
	}
	return 0, false
}

// PrivateUseName reports names under suffixes reserved for private use
// (.local, .internal, .home.arpa, .localdomain). Only consulted when the
// name does not resolve here: such a name cannot be resolved by a cloud
// browser either, and the name itself is private data.
func PrivateUseName(host string) bool {
	h := strings.TrimRight(host, ".")
	for _, s := range [...]string{".local", ".internal", ".home.arpa", ".localdomain"} {
		if strings.HasSuffix(h, s) || h == s[1:] {
			return true
		}
	}
	return false
}
