package agent_test

import (
	"testing"

	"github.com/hybroute/hybroute/hybroutetest"

	"github.com/stretchr/testify/assert"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/internal/agenttest"
)

// TestDialogsHeldForTheModel: with DialogPolicy.Hold, a dialog waits for
// browser_handle_dialog, calls meanwhile are refused, and the page gets
// the model's answer.
func TestDialogsHeldForTheModel(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewInputSite(t)
	r := agenttest.NewRouter(t, nil, hybroute.WithDialogPolicy(hybroute.DialogPolicy{Hold: true}))
	ts := newToolset(t, r)
	const s = "held"
	mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": site.URL + "/"}))
	snap := mustOK(t, callTool(t, ts, s, "browser_snapshot", nil)).Text
	ask := refOf(`button "Ask"`, snap)

	res := mustOK(t, callTool(t, ts, s, "browser_click", map[string]string{"ref": ask}))
	assert.Contains(t, res.Text, "waits for your answer")
	assert.Contains(t, res.Text, `prompt "Your name?" (default "default"): open`)
	res = callTool(t, ts, s, "browser_snapshot", nil)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text, "a JavaScript dialog is open in the page")

	res = mustOK(t, callTool(t, ts, s, "browser_handle_dialog", map[string]any{"accept": true, "prompt_text": "Ada"}))
	assert.Contains(t, res.Text, `Accepted the prompt "Your name?" with "Ada".`)
	assert.Contains(t, outOf(t, ts, s), `"out":"prompt \"Ada\""`)

	mustOK(t, callTool(t, ts, s, "browser_click", map[string]string{"ref": ask}))
	res = mustOK(t, callTool(t, ts, s, "browser_handle_dialog", map[string]any{"accept": false}))
	assert.Contains(t, res.Text, `Dismissed the prompt`)
	assert.Contains(t, outOf(t, ts, s), `"out":"prompt null"`)
	res = callTool(t, ts, s, "browser_handle_dialog", map[string]any{"accept": true})
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text, "no dialog waits for an answer")

	// One that a timer opens during another call ends that call.
	mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": `setTimeout(() => alert("Saved"), 100); return 1`}))
	res = mustOK(t, callTool(t, ts, s, "browser_wait_for", map[string]any{"time": 20}))
	assert.Contains(t, res.Text, `alert "Saved": open`)
	mustOK(t, callTool(t, ts, s, "browser_handle_dialog", map[string]any{"accept": true}))
	mustOK(t, callTool(t, ts, s, "browser_snapshot", nil))
}

// TestDialogsAnsweredByDefault: without Hold, the policy answers and
// browser_handle_dialog has nothing to do.
func TestDialogsAnsweredByDefault(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewInputSite(t)
	r := agenttest.NewRouter(t, nil)
	ts := newToolset(t, r)
	const s = "policy"
	mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": site.URL + "/"}))
	snap := mustOK(t, callTool(t, ts, s, "browser_snapshot", nil)).Text
	res := mustOK(t, callTool(t, ts, s, "browser_click", map[string]string{"ref": refOf(`button "Ask"`, snap)}))
	assert.Contains(t, res.Text, `answered automatically`)
	assert.Contains(t, outOf(t, ts, s), `"out":"prompt null"`)
	res = callTool(t, ts, s, "browser_handle_dialog", map[string]any{"accept": true})
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text, "--dialogs model")
}
