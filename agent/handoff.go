package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent/internal/modeltext"
	"github.com/hybroute/hybroute/route"
)

// ToolHandoff is the tool that hands the session's page to a person for a
// step the agent cannot do (a login with a second factor, a check).
const ToolHandoff = "browser_handoff"

// Bounds of browser_handoff's wait.
const (
	DefaultHandoffTimeout = 5 * time.Minute
	MaxHandoffTimeout     = 30 * time.Minute
)

// Handoffer hands a session's page to a person: *hybroute.LiveViews is
// one ([WithHandoff]).
type Handoffer interface {
	Handoff(ctx context.Context, sessionKey string, req hybroute.HandoffRequest) (hybroute.HandoffResult, error)
}

// WithHandoff offers browser_handoff, which hands a session's page to a
// person through h's live view and waits until they are done.
func WithHandoff(h Handoffer) Option { return func(c *config) { c.handoff = h } }

// ErrHandoffDeclined is what a [HandoffNotifier] returns when the user
// declined to open the live view: the hand-off ends at once.
var ErrHandoffDeclined = errors.New("agent: the user declined to open the live view")

// HandoffNotifier tells the person, while browser_handoff waits, where the
// live view is (viewURL) and what to do there (task). An MCP server asks
// its client to open the URL (URL-mode elicitation) or sends it as a
// message. It may block until the user answers; it returns
// [ErrHandoffDeclined] when they declined.
type HandoffNotifier func(ctx context.Context, viewURL, task string) error

type notifierKey struct{}

// WithHandoffNotifier is ctx carrying n, for the tool calls made with it.
func WithHandoffNotifier(ctx context.Context, n HandoffNotifier) context.Context {
	return context.WithValue(ctx, notifierKey{}, n)
}

var handoffTools = []toolDef{{
	name: ToolHandoff,
	desc: "Ask a person to do a step you cannot (a second-factor login, a check, a consent page) in a live view of this page; waits until they press Done (up to timeout_seconds, default 300), then says where the page is. The session keeps what they did; snapshot after.",
	schema: `{"type":"object","properties":{"task":{"type":"string","description":"What the person should do, e.g. \"Log in\""},` +
		`"timeout_seconds":{"type":"integer","minimum":10,"maximum":1800}},"required":["task"]}`,
	run: (*Toolset).handoffTool,
}}

// handoffArgs are browser_handoff's arguments.
type handoffArgs struct {
	Task    string `json:"task"`
	Timeout int    `json:"timeout_seconds"`
}

func (a handoffArgs) timeout() time.Duration {
	if a.Timeout <= 0 {
		return DefaultHandoffTimeout
	}
	return min(max(time.Duration(a.Timeout)*time.Second, 10*time.Second), MaxHandoffTimeout)
}

// handoffBudget is how much longer than a tool call a browser_handoff call
// may take: the person's time.
func handoffBudget(name string, args json.RawMessage) time.Duration {
	if name != ToolHandoff {
		return 0
	}
	var a handoffArgs
	_ = json.Unmarshal(args, &a)
	return a.timeout()
}

func (t *Toolset) handoffTool(ctx context.Context, s *session, key string, args json.RawMessage) Result {
	var a handoffArgs
	if err := decode(args, &a); err != nil {
		return argError(err)
	}
	if a.Task == "" {
		return toolError("task is empty: say what the person should do, e.g. \"Log in to the dashboard\"")
	}
	// A cloud provider's own live view of the session's browser is named
	// too: a person may know it, and it shows what the provider's browser
	// shows whatever our view can read of it.
	st, _ := t.r.Status(ctx, key)
	hctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	defer wg.Wait()
	notify, _ := ctx.Value(notifierKey{}).(HandoffNotifier)
	res, err := t.cfg.handoff.Handoff(hctx, key, hybroute.HandoffRequest{
		Task: a.Task, Timeout: a.timeout(),
		OnURL: func(u string) {
			t.cfg.log.LogAttrs(ctx, slog.LevelInfo, "hybroute agent: a person is asked to act in the live view (its URL is a secret: not logged)", slog.String("task", a.Task))
			if notify == nil {
				return
			}
			wg.Go(func() {
				if err := notify(hctx, u, a.Task); errors.Is(err, ErrHandoffDeclined) {
					cancel(ErrHandoffDeclined)
				}
			})
		},
	})
	cancel(nil) // the notice is moot now
	declined := errors.Is(context.Cause(hctx), ErrHandoffDeclined)
	if err != nil && !declined {
		return toolError(describe(err, nil, key))
	}
	var text string
	switch {
	case declined:
		text = "The user declined to open the live view; nobody acted in the page."
	case res.Finished:
		text = "The person finished the step and pressed Done."
	case res.Outcome == "gave_up":
		text = "The person gave up without finishing the step."
	case res.Outcome == "closed":
		text = "The live view was closed before the person finished (the server is shutting down, or the session ended)."
	default:
		text = fmt.Sprintf("Nobody finished the step within %s.", a.timeout())
	}
	if res.ViewURL != "" {
		text += " The live view was " + modeltext.Quote(res.ViewURL, 500) + " (closed now)."
	}
	text += providerView(st)
	// Where the page is now, as any call sees it: the person may have
	// taken it anywhere, so the refs of the last snapshot are stale.
	res2, c, err := t.do(ctx, s, key, "", moves, func(ctx context.Context, c *call) error {
		c.moved = true
		return nil
	})
	return t.finishCall(s, key, res2, c, err, func() string {
		return text + " The page is now " + modeltext.Quote(modeltext.URL(res2.LandedURL), 500) +
			", titled " + modeltext.Quote(modeltext.PageText(c.title), 200) + "; take a new snapshot."
	})
}

// providerView names the cloud provider's own live view of the session's
// browser, where its API gave one; "" for any other session.
func providerView(st hybroute.SessionStatus) string {
	if !st.Open || st.Route != route.Cloud || st.LiveViewURL == "" {
		return ""
	}
	return " The cloud provider's own live view of this browser is " + modeltext.Quote(st.LiveViewURL, 500) + "."
}
