package egress

import (
	"context"
	"net"
	"time"
)

const (
	// warnEvery is how often one refused host is logged again.
	warnEvery = time.Minute
	// dialTimeout bounds one dial of the default dialer.
	dialTimeout = 15 * time.Second
	// fullWarnEvery is how often a proxy at its connection cap says so
	// again.
	fullWarnEvery = time.Minute
	// maxLoggedHost is the longest host name DNS allows; longer ones are
	// cut in the log and the warning table.
	maxLoggedHost = 253
)

// Limits are the bounds of one proxy, so that a page (or another local
// process) cannot pile up connections that carry nothing. A zero field
// takes the default: zero would refuse every connection or end every
// tunnel at once.
type Limits struct {
	// MaxConns caps the connections from the browser held at once. Past
	// it a new connection is closed as soon as it is accepted: the
	// browser sees a failed proxy connection for that one request.
	MaxConns int
	// TunnelIdle ends a CONNECT tunnel that moved no byte either way for
	// that long. A tunnel that carries traffic in either direction (a
	// download, a WebSocket exchanging messages) is never cut.
	TunnelIdle time.Duration
	// KeepAliveIdle closes a kept-alive proxy connection that waits that
	// long for its next request (the http.Server's IdleTimeout), and
	// bounds the wait for an upstream's response header.
	KeepAliveIdle time.Duration
	// UpstreamIdle closes a pooled upstream connection unused that long.
	UpstreamIdle time.Duration
	// LookupTimeout bounds the decision on one connection (its name
	// lookup), as the guard bounds its own: a resolver that never answers
	// must not hold a connection (or close) for ever. A decision that runs
	// out refuses the connection: nothing undecided is dialled.
	LookupTimeout time.Duration
}

// DefaultLimits are the bounds of the sidecar's proxy. 512 connections is
// 16 times what Chromium opens to one proxy for its own HTTP traffic (32
// sockets per proxy), leaving room for WebSockets and WebRTC over TCP,
// which Chromium pools apart; at the cap a flood holds about 1,000
// goroutines.
func DefaultLimits() Limits {
	return Limits{
		MaxConns:      512,
		TunnelIdle:    2 * time.Minute,
		KeepAliveIdle: 2 * time.Minute,
		UpstreamIdle:  30 * time.Second,
		LookupTimeout: 10 * time.Second,
	}
}

// orDefault is l with every zero (or negative) field set to the default.
func (l Limits) orDefault() Limits {
	def := DefaultLimits()
	for _, f := range []struct{ v, d *time.Duration }{
		{&l.TunnelIdle, &def.TunnelIdle}, {&l.KeepAliveIdle, &def.KeepAliveIdle},
		{&l.UpstreamIdle, &def.UpstreamIdle}, {&l.LookupTimeout, &def.LookupTimeout},
	} {
		if *f.v <= 0 {
			*f.v = *f.d
		}
	}
	if l.MaxConns <= 0 {
		l.MaxConns = def.MaxConns
	}
	return l
}

func defaultDial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: dialTimeout}
	return d.DialContext(ctx, network, addr)
}
