package mcpserver

import (
	"context"
	"crypto/rand"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybroute/hybroute/internal/hostguard"
)

// requestHeader carries, inside the server, the id tieRequests gave the
// HTTP request that brought a message. It is set on every request over
// what a client may have sent.
const requestHeader = "X-Hybroute-Request"

// ErrClientGone is the cause (context.Cause) that ends a tool call whose
// HTTP client hung up.
var ErrClientGone = errors.New("mcpserver: the client hung up")

// Handler is the MCP endpoint over streamable HTTP, each HTTP client
// session with a browser session of its own. It answers only requests
// whose Host, and Origin if sent, is the address the request arrived on
// or one of Options.AllowHosts (see HostGuard), and a tool call ends when
// the HTTP request that carried it does. Each call makes a handler with
// client sessions of its own: serve one.
func (s *Server) Handler() http.Handler {
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.server },
		&mcp.StreamableHTTPOptions{SessionTimeout: s.opts.IdleTimeout})
	// The live views check Host and Origin themselves (their own
	// AllowHosts): they are mounted beside the guarded endpoint, not in it.
	return s.withLiveViews(HostGuard(s.opts.AllowHosts, s.tieRequests(handler)))
}

// Serve serves Handler on ln until ctx ends, then shuts the HTTP server
// down. It does not close the client sessions: Close does.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// tieRequests makes the HTTP requests' contexts known to the tool handlers:
// the SDK runs a call in its session's context, which a client that hangs
// up does not end (without an event store it cannot resume the stream
// either), so its call would run on for no one and hold the session's
// later calls behind it.
func (s *Server) tieRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := rand.Text()
		r.Header.Set(requestHeader, id)
		s.requests.Store(id, r.Context())
		defer s.requests.Delete(id)
		next.ServeHTTP(w, r)
	})
}

// requestCtx is ctx ended also when the HTTP request that carried req
// ends. A request that ended before its call started (the call waited in
// the SDK) gives an ended context: the call is dropped. A call that came
// by another transport keeps ctx.
func (s *Server) requestCtx(ctx context.Context, req *mcp.CallToolRequest) (context.Context, func()) {
	if req == nil || req.Extra == nil || req.Extra.Header == nil {
		return ctx, func() {}
	}
	id := req.Extra.Header.Get(requestHeader)
	if id == "" {
		return ctx, func() {}
	}
	cctx, cancel := context.WithCancelCause(ctx)
	v, ok := s.requests.Load(id)
	if !ok {
		cancel(ErrClientGone)
		return cctx, func() {}
	}
	stop := context.AfterFunc(v.(context.Context), func() { cancel(ErrClientGone) })
	return cctx, func() { stop(); cancel(nil) }
}

// HostGuard refuses, with 403, requests whose Host or Origin is not the
// server's own: a web page the user visits can make the browser send
// requests to a loopback port, and with DNS rebinding its own name can
// point there too; such requests carry the page's name in Host and its
// origin in Origin. The live view (hybroute.LiveViews) answers under the
// same check.
//
// The server's own names are the address the request arrived on (from
// the http.Server's http.LocalAddrContextKey), with 127.0.0.1, localhost
// and [::1] when that is loopback, and allowHosts (a name without a port
// takes the arriving port). A request with no local address is allowed
// only by allowHosts with a port.
func HostGuard(allowHosts []string, next http.Handler) http.Handler {
	return hostguard.Wrap(allowHosts, next)
}
