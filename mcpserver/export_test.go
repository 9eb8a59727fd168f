package mcpserver

import (
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// KeyedSessions is the number of client sessions that hold a browser session
// key, for the tests.
func (s *Server) KeyedSessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.keys)
}

// Running is the number of tool calls in the toolset, waiting or running.
func (s *Server) Running() int64 { return s.running.Load() }

// Sessions is the number of the SDK's client sessions.
func (s *Server) Sessions() int {
	n := 0
	for range s.server.Sessions() {
		n++
	}
	return n
}

// SweepTwice runs two sweeps for unused sessions an hour apart: every
// HTTP session that made no tool call is ended by the second.
func (s *Server) SweepTwice() {
	seen := map[*mcp.ServerSession]time.Time{}
	now := time.Now()
	s.endUnused(seen, now, time.Minute)
	s.endUnused(seen, now.Add(time.Hour), time.Minute)
}
