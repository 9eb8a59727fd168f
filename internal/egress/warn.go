package egress

import (
	"context"
	"log/slog"
	"net"
	"time"
)

// warn logs a refusal, once per host (whatever the port) and warnEvery.
// The key and the logged host are cut short, so a hostile name cannot grow
// the table or the log.
func (p *Proxy) warn(ctx context.Context, hostport string, d Decision, r *Refusal) {
	now := time.Now()
	host := hostport
	if h, _, serr := net.SplitHostPort(hostport); serr == nil {
		host = h
	}
	if len(host) > maxLoggedHost {
		host = host[:maxLoggedHost] + "…"
	}
	p.warnMu.Lock()
	if last, ok := p.warned[host]; ok && now.Sub(last) < warnEvery {
		p.warnMu.Unlock()
		return
	}
	if len(p.warned) >= 1024 {
		clear(p.warned) // bounded: a page cannot grow it without end
	}
	p.warned[host] = now
	p.warnMu.Unlock()
	msg := r.Error()
	if len(msg) > 2*maxLoggedHost {
		msg = msg[:2*maxLoggedHost] + "…"
	}
	p.log.LogAttrs(ctx, slog.LevelWarn, "hybroute: egress refused",
		slog.String("host", host), slog.String("class", r.Class),
		slog.String("reason", r.Reason), slog.Any("addrs", d.Addrs), slog.String("error", msg))
}
