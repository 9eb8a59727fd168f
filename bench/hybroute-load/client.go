package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The steps of one client, in order.
var steps = []string{"browser_navigate", "browser_snapshot", "browser_click", "browser_exec", "browser_close"}

// outcome is how one client's run ended.
type outcome int

const (
	outcomeOK     outcome = iota
	outcomeBusy           // a step was refused at once: the server is busy
	outcomeFailed         // any other failure
)

// run is one client's record.
type run struct {
	outcome  outcome
	step     string // the step that ended it, when it did not succeed
	detail   string
	took     map[string]time.Duration // per step that returned
	busyTook time.Duration            // how long the refused step took to be refused
}

var refRE = regexp.MustCompile(`button "Press me".*\[ref=(e\d+)\]`)

// drive connects one MCP client over streamable HTTP and runs navigate →
// snapshot → click → exec → close on page.
func drive(ctx context.Context, endpoint, page string, callTimeout time.Duration) run {
	r := run{took: map[string]time.Duration{}}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "hybroute-load", Version: "v0"}, nil).
		Connect(cctx, &mcp.StreamableClientTransport{Endpoint: endpoint}, nil)
	cancel()
	if err != nil {
		return run{outcome: outcomeFailed, step: "connect", detail: err.Error()}
	}
	defer cs.Close()
	var ref string
	for _, step := range steps {
		args := map[string]any{}
		switch step {
		case "browser_navigate":
			args["url"] = page
		case "browser_click":
			args["ref"] = ref
		case "browser_exec":
			args["code"] = "document.getElementById('h').textContent"
		}
		sctx, cancel := context.WithTimeout(ctx, callTimeout)
		start := time.Now()
		res, err := cs.CallTool(sctx, &mcp.CallToolParams{Name: step, Arguments: args})
		took := time.Since(start)
		cancel()
		if err != nil {
			r.outcome, r.step, r.detail = outcomeFailed, step, err.Error()
			return r
		}
		text := textOf(res)
		if res.IsError {
			r.step, r.detail = step, firstLine(text)
			r.outcome = outcomeFailed
			if strings.HasPrefix(text, "busy:") {
				r.outcome, r.busyTook = outcomeBusy, took
			}
			return r
		}
		r.took[step] = took
		switch step {
		case "browser_snapshot":
			m := refRE.FindStringSubmatch(text)
			if m == nil {
				r.outcome, r.step, r.detail = outcomeFailed, step, "no button in the snapshot"
				return r
			}
			ref = m[1]
		case "browser_exec":
			if !strings.Contains(text, "clicked") {
				r.outcome, r.step, r.detail = outcomeFailed, step, fmt.Sprintf("the click did not take: %q", firstLine(text))
				return r
			}
		}
	}
	return r
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
