package mcpserver

import (
	"context"
	"crypto/rand"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybroute/hybroute/agent"
)

// LiveViewPath is where Handler serves Options.LiveViews, beside the MCP
// endpoint: a view's URL is http://HOST/live/TOKEN.
const LiveViewPath = "/live/"

// withLiveViews is the MCP handler with the live views under LiveViewPath.
func (s *Server) withLiveViews(mcpHandler http.Handler) http.Handler {
	if s.opts.LiveViews == nil {
		return mcpHandler
	}
	mux := http.NewServeMux()
	mux.Handle(LiveViewPath, http.StripPrefix(LiveViewPath[:len(LiveViewPath)-1], s.opts.LiveViews))
	mux.Handle("/", mcpHandler)
	return mux
}

// handoffNotifier tells the client of req where browser_handoff's live view
// is: a client that takes URL-mode elicitation (MCP 2025-11-25) is asked to
// open it for its user, and told when the hand-off is over; any other gets
// it as a progress notification (when the call asked for progress) and a
// log message. The tool's result names it too.
func (s *Server) handoffNotifier(req *mcp.CallToolRequest) agent.HandoffNotifier {
	return func(ctx context.Context, viewURL, task string) error {
		ss := req.Session
		if ss == nil {
			return nil
		}
		if urlElicitation(ss) {
			id := rand.Text()
			res, err := ss.Elicit(ctx, &mcp.ElicitParams{Mode: "url", URL: viewURL, ElicitationID: id,
				Message: "The agent asks you to act in its browser: " + task + ". Open the live view, do it, and press Done."})
			if err == nil {
				if res.Action != "accept" {
					return agent.ErrHandoffDeclined
				}
				<-ctx.Done() // the hand-off is over
				nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				defer cancel()
				_ = ss.NotifyElicitationComplete(nctx, &mcp.ElicitationCompleteParams{ElicitationID: id})
				return nil
			}
			if ctx.Err() != nil {
				return nil // the hand-off ended first: its view is gone, no link to send
			}
			// A client that failed the request still hears of the URL below.
		}
		msg := "A person is needed in the browser: " + task + ". Open " + viewURL + " and press Done when finished."
		if req.Params != nil {
			if tok := req.Params.GetProgressToken(); tok != nil {
				_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Message: msg})
			}
		}
		// A client that sent no progress token hears of the URL only
		// through a log message while the call waits: logging is deprecated
		// from protocol 2026-07-28 (SEP-2577) but works for its window.
		//lint:ignore SA1019 the one notice a client without progress tokens or URL elicitation gets while the hand-off waits
		_ = ss.Log(ctx, &mcp.LoggingMessageParams{Level: "notice", Logger: "hybroute", Data: msg})
		return nil
	}
}

// urlElicitation says whether the client of ss declared URL-mode
// elicitation.
func urlElicitation(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil && p.Capabilities.Elicitation.URL != nil
}
