package agent_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent"
)

// A Toolset gives a model the browser tools, each with a description
// written for the model and a JSON Schema of its input, and runs the
// model's tool calls through the Router. A refused URL is a tool result
// the model reads (IsError), not a Go error: the error of Call is only for
// an ended context or a closed toolset. The metadata address is refused
// before any browser starts.
func ExampleToolset() {
	router, err := hybroute.New(nil) // no provider: the local Chromium, started on first use
	if err != nil {
		return
	}
	defer router.Close()
	ts := agent.New(router)
	defer ts.Close() // before router.Close

	for _, t := range ts.Tools()[:3] {
		fmt.Println(t.Name)
	}
	res, err := ts.Call(context.Background(), "user-42", "browser_navigate",
		json.RawMessage(`{"url":"http://169.254.169.254/latest/meta-data/"}`))
	fmt.Println(err, res.IsError)
	fmt.Println(res.Text)
	// Output:
	// browser_navigate
	// browser_snapshot
	// browser_click
	// <nil> true
	// blocked: http://169.254.169.254/latest/meta-data/ targets a cloud metadata endpoint; no browser opened it. Do not retry it; no setting allows it.
}

// An agent loop: offer the tools to the model, run each tool call it
// makes, and hand the result back. Not run here: it drives a local
// Chromium, and the model is a stand-in.
func ExampleToolset_Call() {
	ctx := context.Background()
	router, err := hybroute.New(nil)
	if err != nil {
		return
	}
	defer router.Close()
	ts := agent.New(router)
	defer ts.Close()

	calls := []struct{ tool, args string }{ // what a model might ask for
		{"browser_navigate", `{"url":"localhost:3000"}`},
		{"browser_snapshot", `{}`},
		{"browser_click", `{"ref":"e4"}`},
		{"browser_exec", `{"code":"document.title"}`},
	}
	for _, c := range calls {
		res, err := ts.Call(ctx, "user-42", c.tool, json.RawMessage(c.args))
		if err != nil {
			return // the context ended or the toolset closed
		}
		// res.Text starts with where the call ran and the page it is on;
		// res.IsError marks a result the model should act on.
		fmt.Println(c.tool, res.IsError, res.Where.Route)
	}
}
