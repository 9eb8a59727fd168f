package agent_test

import (
	"testing"

	"github.com/hybroute/hybroute/hybroutetest"

	"github.com/stretchr/testify/assert"

	"github.com/hybroute/hybroute/internal/agenttest"
)

// TestExecRunsTheCodeOnce: code is sent as an expression first and as a
// function body only when it does not parse, so an expression that throws
// a SyntaxError while it runs (JSON.parse) runs once, not twice; and the
// result line carries the page's title as the code left it.
func TestExecRunsTheCodeOnce(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewSite(t)
	ts := newToolset(t, agenttest.NewRouter(t, nil))
	const s = "once"
	mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": site.URL("127.0.0.1", "/")}))

	threw := callTool(t, ts, s, "browser_exec", map[string]string{"code": `(window.runs = (window.runs || 0) + 1, JSON.parse("{"))`})
	assert.True(t, threw.IsError)
	assert.Contains(t, threw.Text, "the code threw: SyntaxError")
	runs := mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": "window.runs"}))
	assert.Contains(t, runs.Text, "Result: 1")

	// Statements: the expression does not parse, the body runs.
	body := mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": "window.runs += 1; document.title = 'Renamed'; return window.runs"}))
	assert.Contains(t, body.Text, "Result: 2")
	assert.Equal(t, "Renamed", body.Where.Title)
	none := mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": "let x = 1;"}))
	assert.Contains(t, none.Text, "Result: undefined")
	assert.Equal(t, "Renamed", none.Where.Title)

	// Code that does not parse either way says so.
	bad := callTool(t, ts, s, "browser_exec", map[string]string{"code": "return ("})
	assert.True(t, bad.IsError)
	assert.Contains(t, bad.Text, "the code threw: SyntaxError")
}
