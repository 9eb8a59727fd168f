package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybroute/hybroute/agent"
)

// MetaWhere is the _meta key of a tool result that says where the call ran,
// on every result of a call a browser ran (none on one that no browser
// ran: a refused URL, a bad argument). Its value is an object of agent.Where's
// fields, each documented there under its JSON name:
//
//   - route: "local" or "cloud", the browser the call ran in;
//   - url, title: the page after the call (url redacted);
//   - navigated: the call took the page to a new document (a click that
//     followed a link too);
//   - browser_changed: the call ran in another browser or tab than the
//     session's page was in (routing, a fresh browser, a replaced tab);
//   - tab_replaced: that tab is a fresh one, the old one did not answer;
//   - fallback_from_cloud, and fallback_reason when set: the call ran on
//     the local browser in place of the cloud's;
//   - dialogs, when any: the JavaScript dialogs the page opened (type,
//     message, accepted, and pending when one waits for an answer);
//   - waited_ms, when set: how long the call waited for a browser session
//     under the server's caps.
const MetaWhere = "hybroute/where"

// Options configure a Server. The zero value serves the toolset with no
// session timeouts and answers HTTP only on the address it is served on.
type Options struct {
	// Version is the server's version in the MCP handshake. Empty: this
	// module's version as the binary's build information has it.
	Version string

	// IdleTimeout ends an HTTP client session after this long with no
	// request, and releases its browsers. Zero: never. A client that goes
	// away without ending its session leaves it on the server until then.
	IdleTimeout time.Duration

	// UnusedTimeout ends an HTTP client session that has made no tool call
	// this long after it was first seen. Zero: never. Such a session has
	// no browser yet, but it holds the SDK's goroutines, and clients that
	// open a session per attempt leave many.
	UnusedTimeout time.Duration

	// AllowHosts are further Host names (or host:port) the HTTP handler
	// answers to, beyond the address a request arrived on (and, on
	// loopback, localhost): the names a non-loopback server is reached by.
	AllowHosts []string

	// LiveViews, when set, is served by Handler under LiveViewPath, with
	// the same Host and Origin checks: a hybroute.LiveViews, whose
	// BaseURL is this server's URL with LiveViewPath. browser_handoff
	// (agent.WithHandoff) hands pages to people there.
	LiveViews http.Handler
}

// Server is an MCP server over a toolset. Every MCP client session gets a
// browser session of its own, keyed "mcp-" and 16 hex digits, made by its
// first tool call and released when the client session ends.
type Server struct {
	server *mcp.Server
	ts     *agent.Toolset
	opts   Options

	mu   sync.Mutex
	keys map[*mcp.ServerSession]string
	wg   sync.WaitGroup // the goroutines that release a session's browsers when it ends

	// requests are the contexts of the HTTP requests in flight, by the
	// id tieRequests gave each: a tool call ends with the request that
	// carried it.
	requests sync.Map     // string -> context.Context
	running  atomic.Int64 // tool calls in the toolset, waiting or running (tests read it)

	stopSweep context.CancelFunc
	swept     chan struct{} // closed when the sweep of unused sessions has stopped
}

// New is an MCP server with the toolset's tools. The toolset stays the
// caller's: Close does not close it.
func New(ts *agent.Toolset, opts Options) *Server {
	version := opts.Version
	if version == "" {
		version = moduleVersion()
	}
	s := &Server{
		ts:   ts,
		opts: opts,
		keys: make(map[*mcp.ServerSession]string),
		server: mcp.NewServer(&mcp.Implementation{Name: "hybroute", Title: "hybroute browser", Version: version}, &mcp.ServerOptions{
			Instructions: "Browser tools. browser_navigate opens a page; browser_snapshot reads it with refs for browser_click and browser_type. " +
				"Public sites run in a cloud browser, local and private addresses in a local one; every result says which, and cloud metadata addresses are always refused.",
			// Logging: the hand-off's notice to a client without progress
			// tokens (handoff.go).
			//lint:ignore SA1019 the hand-off's notice needs the logging capability until clients take URL elicitation
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Logging: &mcp.LoggingCapabilities{}},
		}),
		swept: make(chan struct{}),
	}
	for _, tool := range ts.Tools() {
		name := tool.Name
		s.server.AddTool(&mcp.Tool{Name: name, Description: tool.Description, InputSchema: tool.InputSchema},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				ctx, done := s.requestCtx(ctx, req)
				defer done()
				s.running.Add(1)
				defer s.running.Add(-1)
				ctx = agent.WithHandoffNotifier(ctx, s.handoffNotifier(req))
				res, err := ts.Call(ctx, s.keyOf(req.Session), name, req.Params.Arguments)
				if err != nil {
					return nil, err
				}
				return toMCP(res), nil
			})
	}
	ctx, stop := context.WithCancel(context.Background())
	s.stopSweep = stop
	if opts.UnusedTimeout > 0 {
		go func() {
			defer close(s.swept)
			s.sweepUnused(ctx, opts.UnusedTimeout)
		}()
	} else {
		close(s.swept)
	}
	return s
}

// Connect serves one client session over t, a transport such as the
// in-memory one of mcp.NewInMemoryTransports, until the client ends it or
// the session is closed.
func (s *Server) Connect(ctx context.Context, t mcp.Transport) (*mcp.ServerSession, error) {
	return s.server.Connect(ctx, t, nil)
}

// Run serves one client session over t (such as mcp.StdioTransport) until
// the client ends it or ctx ends; either is a nil error.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	err := s.server.Run(ctx, t)
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) || isClosed(err) {
		return nil
	}
	return err
}

// isClosed says whether err is the end of a stream the client closed: the
// SDK reports it in words, not with a sentinel.
func isClosed(err error) bool {
	return strings.Contains(err.Error(), "EOF") || strings.Contains(err.Error(), "closed")
}

// Close ends the client sessions still open and waits until their browsers
// are released.
func (s *Server) Close() error {
	s.stopSweep()
	<-s.swept
	for ss := range s.server.Sessions() {
		_ = ss.Close()
	}
	s.wg.Wait()
	return nil
}

// toMCP is a tool result as MCP content: the text, then the images.
func toMCP(res agent.Result) *mcp.CallToolResult {
	out := &mcp.CallToolResult{IsError: res.IsError, Content: []mcp.Content{&mcp.TextContent{Text: res.Text}}}
	for _, img := range res.Images {
		out.Content = append(out.Content, &mcp.ImageContent{Data: img.Data, MIMEType: img.MIMEType})
	}
	if w := res.Where; w.Ran {
		where := map[string]any{
			"route":               w.Route.String(),
			"fallback_from_cloud": w.FallbackFromCloud,
			"browser_changed":     w.BrowserChanged,
			"navigated":           w.Navigated,
			"tab_replaced":        w.TabReplaced,
			"url":                 w.URL,
			"title":               w.Title,
		}
		if w.FallbackReason != "" {
			where["fallback_reason"] = w.FallbackReason
		}
		if w.WaitedForRoom > 0 {
			where["waited_ms"] = w.WaitedForRoom.Milliseconds()
		}
		if len(w.Dialogs) > 0 {
			ds := make([]map[string]any, len(w.Dialogs))
			for i, d := range w.Dialogs {
				ds[i] = map[string]any{"type": d.Type, "message": d.Message, "accepted": d.Accepted}
				if d.Pending {
					ds[i]["pending"] = true // held for browser_handle_dialog (--dialogs model)
				}
			}
			where["dialogs"] = ds
		}
		out.Meta = mcp.Meta{MetaWhere: where}
	}
	return out
}

// keyOf is the browser session key of an MCP client session. The first
// call of a client session makes one, and the session's end releases its
// browsers.
func (s *Server) keyOf(ss *mcp.ServerSession) string {
	if ss == nil {
		return "mcp"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if k, ok := s.keys[ss]; ok {
		return k
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	k := "mcp-" + hex.EncodeToString(b[:])
	s.keys[ss] = k
	s.wg.Go(func() {
		_ = ss.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = s.ts.Release(ctx, k)
		s.mu.Lock()
		delete(s.keys, ss)
		s.mu.Unlock()
	})
	return k
}

// modulePath is this package's module, whose version the handshake names.
const modulePath = "github.com/hybroute/hybroute/mcpserver"

// moduleVersion is this module's version in the binary's build
// information, "(devel)" when it has none.
func moduleVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(devel)"
	}
	if bi.Main.Path == modulePath && bi.Main.Version != "" {
		return bi.Main.Version
	}
	for _, m := range bi.Deps {
		if m.Path == modulePath && m.Version != "" {
			return m.Version
		}
	}
	return "(devel)"
}
