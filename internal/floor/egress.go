package floor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"

	"github.com/hybroute/hybroute/internal/egress"
	"github.com/hybroute/hybroute/internal/whatwg"
	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/route"
)

// The decisions of the egress check (internal/egress): the proxy asks the
// router's policy about each connection, and a call's verdicts earn its
// session's grant. The rules stay here, with every other verdict; the
// proxy only carries them out.

// StartEgress starts the proxy of one local Chromium on a loopback port.
// It decides every connection with p and dials the allowed ones with
// dial (nil: a net.Dialer). ctx bounds the start only.
func StartEgress(ctx context.Context, p *Policy, dial func(ctx context.Context, network, addr string) (net.Conn, error), logger *slog.Logger) (*egress.Proxy, error) {
	cfg := EgressRules(p)
	cfg.Dial, cfg.Log = dial, logger
	return egress.Start(ctx, cfg)
}

// EgressRules are the proxy's decisions, with the router's policy.
func EgressRules(p *Policy) egress.Config {
	return egress.Config{
		Decide: func(ctx context.Context, hostport string) (egress.Decision, error) {
			v, port, err := DecideEgress(ctx, p, hostport)
			return egress.Decision{Host: v.Host, Addrs: v.Addrs, Port: port, Private: v.Class == netpolicy.ClassPrivate}, egressRefusal(err)
		},
		Ungranted: Ungranted,
		Refused:   func(ctx context.Context, err error) { p.refused(ctx, "egress", err) },
	}
}

// Ungranted is the refusal of a connection to hostport, at the private
// addresses d, that no call of its session named.
func Ungranted(hostport string, d egress.Decision) error {
	v := netpolicy.Verdict{URL: hostport, Host: d.Host, Addrs: d.Addrs, Class: netpolicy.ClassPrivate}
	return egressRefusal(netpolicy.Block(v, netpolicy.ReasonPrivateNotNamed, ErrNotNamed))
}

// ErrNotNamed is the detail of Ungranted's refusal.
var ErrNotNamed = errors.New("no call of this session named the host; a public page on the local browser reaches public addresses only")

// egressRefusal hands a refusal of the policy to the proxy as one it
// answers with 403; it still unwraps to the *BlockedError and its
// sentinel. Other errors (nothing to dial) pass as they are.
func egressRefusal(err error) error {
	be, ok := errors.AsType[*netpolicy.BlockedError](err)
	if !ok {
		return err
	}
	return &egress.Refusal{Class: be.Class.String(), Reason: be.Reason.String(), Phrase: be.Reason.Phrase(), Err: err}
}

// DecideEgress is the connect-time verdict on one host:port, as the local
// Chromium asked for it. On success v.Addrs are the addresses to dial (the
// ones the class was decided on) and port the port. The error is the
// policy's refusal (a *BlockedError), or says that the name did not resolve
// (nothing to dial).
func DecideEgress(ctx context.Context, p *Policy, hostport string) (v netpolicy.Verdict, port uint16, err error) {
	host, ps, err := net.SplitHostPort(hostport)
	if err != nil {
		v = invalid(netpolicy.Verdict{URL: hostport}, netpolicy.ReasonInvalidURL, err)
		return v, 0, v.Err
	}
	if len(host) > maxDNSName+2 { // a DNS name, or an IPv6 literal in brackets
		v = invalid(netpolicy.Verdict{URL: hostport[:maxDNSName]}, netpolicy.ReasonInvalidURL, errors.New("host name too long"))
		return v, 0, v.Err
	}
	n, perr := strconv.ParseUint(ps, 10, 16)
	if perr != nil || n == 0 {
		v = invalid(netpolicy.Verdict{URL: hostport}, netpolicy.ReasonInvalidURL, fmt.Errorf("bad port %q", ps))
		return v, 0, v.Err
	}
	// The same classifier as every other verdict: the host as Chromium
	// wrote it is already canonical, so the URL round-trips.
	v = p.Classify(ctx, "http://"+net.JoinHostPort(host, ps)+"/")
	v.URL = hostport
	if err := p.Refuse(v, route.Local); err != nil {
		return v, 0, err
	}
	if len(v.Addrs) == 0 {
		if c, ok := netpolicy.ClassifyName(v.Host); ok && c == netpolicy.ClassPrivate {
			// localhost and *.localhost: loopback, as Chromium itself
			// would resolve them, without asking DNS.
			v.Addrs = LoopbackAddrs()
			return v, uint16(n), nil
		}
		rerr := v.ResolveErr
		if rerr == nil {
			rerr = netpolicy.ErrNoAnswers
		}
		return v, 0, fmt.Errorf("hybroute: egress: %s does not resolve, nothing to dial: %w", v.Host, rerr)
	}
	return v, uint16(n), nil
}

// maxDNSName is the longest host name DNS allows.
const maxDNSName = 253

// LoopbackAddrs are the addresses localhost and *.localhost reach.
func LoopbackAddrs() []netip.Addr {
	return []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()}
}

// GrantOf is the grant the verdicts of one call earn, and whether the call
// named any network target at all (a call that names none keeps the grant
// it had). Only private verdicts the policy let through grant anything;
// metadata never does.
func GrantOf(vs []netpolicy.Verdict) (g egress.Grant, names bool) {
	for _, v := range vs {
		if v.Err != nil || (v.Class != netpolicy.ClassPublic && v.Class != netpolicy.ClassPrivate) || !IsWebURL(v.URL) {
			continue // loads from no network (an allowed file: URL, say)
		}
		names = true
		if v.Class != netpolicy.ClassPrivate || v.Host == "" {
			continue
		}
		g.Add(v.Host, v.Addrs...)
		if c, ok := netpolicy.ClassifyName(v.Host); ok && c == netpolicy.ClassPrivate {
			g.Add(v.Host, LoopbackAddrs()...)
		}
	}
	return g, names
}

// IsWebURL reports whether raw is an http(s) or ws(s) URL: an allowed
// scheme such as file: is private but connects to nothing.
func IsWebURL(raw string) bool {
	u, err := whatwg.Parse(raw)
	if err != nil {
		return false
	}
	switch u.Scheme {
	case "http", "https", "ws", "wss":
		return true
	}
	return false
}

// GrantCall gives the door of a session on the local browser the grant its
// call earns, before the call runs: the private hosts the call names, when
// it names any network target.
//
// It returns what ends the call's part: while the call runs, its pages may
// move among every host the call named (a mixed call that opens a public
// page, then localhost); when it ends on a page the grant does not cover
// (landed is where the tab is then), the grant ends there.
//
// The grant is given only to a context that is clean for it
// (egress.Door.SetClean); for any other it fails with ErrNotClean, the
// context granting nothing, and its user moves the session to a fresh
// context and asks again.
func GrantCall(door *egress.Door, vs []netpolicy.Verdict, landed func() string) (done func(), err error) {
	g, names := GrantOf(vs)
	if !names {
		return func() {}, nil
	}
	if !door.SetClean(g) {
		door.Set(egress.Grant{})
		return nil, ErrNotClean
	}
	door.NameCall(NamedHosts(vs))
	return func() {
		door.NameCall(nil)
		if u := landed(); IsWebURL(u) {
			door.Leave(u)
		}
	}, nil
}

// ErrNotClean is GrantCall's error when the session's browser context ran
// a document of a host the grant does not cover.
var ErrNotClean = errors.New("hybroute: the session's browser context loaded a document of a host its grant would not cover; the call moves it to a fresh one first")

// NamedHosts are the hosts of every network URL a call names, public ones
// too.
func NamedHosts(vs []netpolicy.Verdict) []string {
	out := []string{}
	for _, v := range vs {
		if v.Err == nil && (v.Class == netpolicy.ClassPublic || v.Class == netpolicy.ClassPrivate) && v.Host != "" && IsWebURL(v.URL) {
			out = append(out, v.Host)
		}
	}
	return out
}
