package mcpserver

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An HTTP client that goes away without ending its session leaves it on
// the server: the SDK ends it after Options.IdleTimeout with no request.
// A session that never made a tool call has no browser yet, but it holds
// the SDK's goroutines and its place, and clients that open a session per
// attempt leave many: it is ended sooner, after Options.UnusedTimeout.

// sweepUnused ends, every tick, the HTTP client sessions that made no tool
// call within unused of being first seen, until ctx ends.
func (s *Server) sweepUnused(ctx context.Context, unused time.Duration) {
	every := max(unused/4, 50*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	seen := map[*mcp.ServerSession]time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s.endUnused(seen, now, unused)
		}
	}
}

// endUnused is one sweep: seen holds when each session was first seen.
func (s *Server) endUnused(seen map[*mcp.ServerSession]time.Time, now time.Time, unused time.Duration) {
	live := map[*mcp.ServerSession]bool{}
	for ss := range s.server.Sessions() {
		if ss.ID() == "" {
			continue // not an HTTP session: stdio or in memory, whose client ends it
		}
		live[ss] = true
		first, ok := seen[ss]
		if !ok {
			seen[ss] = now
			continue
		}
		s.mu.Lock()
		_, called := s.keys[ss]
		s.mu.Unlock()
		if !called && now.Sub(first) >= unused {
			_ = ss.Close()
		}
	}
	for ss := range seen {
		if !live[ss] {
			delete(seen, ss)
		}
	}
}
