package agent_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hybroute/hybroute/hybroutetest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/agent"
	"github.com/hybroute/hybroute/internal/agenttest"
)

// outOf reads what the input page's last control did, and the form's state.
func outOf(t *testing.T, ts *agent.Toolset, s string) string {
	t.Helper()
	r := mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": "({out: out.textContent, ...form()})"}))
	return r.Text
}

// uploadDir is a directory with files to upload, a file outside it, and a
// link inside it to that file.
func uploadDir(t *testing.T) string {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello"), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "b.txt"), []byte("hi!"), 0o600))
	outside := filepath.Join(t.TempDir(), "secret.txt")
	require.NoError(t, os.WriteFile(outside, []byte("secret"), 0o600))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "link.txt")))
	require.NoError(t, os.Symlink(filepath.Join(dir, "a.txt"), filepath.Join(dir, "inner.txt")))
	return dir
}

// TestInputTools drives every input tool on the local browser, and checks
// each one's effect in the page.
func TestInputTools(t *testing.T) {
	hybroutetest.Parallel(t)
	site := agenttest.NewInputSite(t)
	dir := uploadDir(t)
	r := agenttest.NewRouter(t, nil)
	ts := newToolset(t, r, agent.WithUploadDir(dir))
	const s = "input"
	mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": site.URL + "/"}))
	snap := mustOK(t, callTool(t, ts, s, "browser_snapshot", nil)).Text
	ref := func(line string) string {
		r := refOf(line, snap)
		require.NotEmpty(t, r, "%s in\n%s", line, snap)
		return r
	}

	// browser_select_option: by label or value; a missing option lists them.
	res := mustOK(t, callTool(t, ts, s, "browser_select_option", map[string]any{"ref": ref(`combobox "Size"`), "values": []string{"Large"}}))
	assert.Contains(t, res.Text, `Selected "Large" in`)
	assert.Contains(t, outOf(t, ts, s), `{"out":"change size","name":"","sub":false,"plan":"basic","size":"l"`)
	// The action waited for the request its change started.
	stock := mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": "document.getElementById('stock').textContent"}))
	assert.Contains(t, stock.Text, `Result: "in stock: l"`)
	mustOK(t, callTool(t, ts, s, "browser_select_option", map[string]any{"ref": ref(`listbox "Toppings"`), "values": []string{"Cheese", "Basil"}}))
	assert.Contains(t, outOf(t, ts, s), `"tops":["Cheese","Basil"]`)
	res = callTool(t, ts, s, "browser_select_option", map[string]any{"ref": ref(`combobox "Size"`), "values": []string{"Huge"}})
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text, `has no option "Huge"; its options are "Small", "Medium", "Large"`)
	res = callTool(t, ts, s, "browser_select_option", map[string]any{"ref": ref(`textbox "Name"`), "values": []string{"x"}})
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text, "is not a drop-down list")

	// browser_fill_form: every kind of field in one call.
	res = mustOK(t, callTool(t, ts, s, "browser_fill_form", map[string]any{"fields": []map[string]string{
		{"ref": ref(`textbox "Name"`), "type": "textbox", "value": "Ada"},
		{"ref": ref(`checkbox "Subscribe"`), "type": "checkbox", "value": "true"},
		{"ref": ref(`radio "Pro"`), "type": "radio", "value": "true"},
		{"ref": ref(`combobox "Size"`), "type": "combobox", "value": "Medium"},
		{"ref": ref(`slider "Volume"`), "type": "slider", "value": "75"},
	}}))
	assert.Contains(t, res.Text, "Filled 5 fields")
	assert.Contains(t, outOf(t, ts, s), `"name":"Ada","sub":true,"plan":"pro","size":"m","tops":["Cheese","Basil"],"vol":"75"}`)
	// A failing field stops the call; what was filled before it is said.
	res = callTool(t, ts, s, "browser_fill_form", map[string]any{"fields": []map[string]string{
		{"ref": ref(`textbox "Name"`), "type": "textbox", "value": "Grace"},
		{"ref": ref(`checkbox "Subscribe"`), "type": "slider", "value": "3"},
	}})
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text, "is not a slider input")
	assert.Contains(t, res.Text, `filled before it: `+ref(`textbox "Name"`))
	assert.Contains(t, outOf(t, ts, s), `"name":"Grace"`)
	res = callTool(t, ts, s, "browser_fill_form", map[string]any{"fields": []map[string]string{{"ref": "e1", "type": "date", "value": "x"}}})
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text, `use textbox, checkbox, radio, combobox or slider`)

	// browser_hover: real mouse movement.
	res = mustOK(t, callTool(t, ts, s, "browser_hover", map[string]any{"ref": ref(`button "Account"`)}))
	assert.Contains(t, res.Text, `Hovered over`)
	assert.Contains(t, outOf(t, ts, s), `"out":"hovered"`)
	hovered := mustOK(t, callTool(t, ts, s, "browser_snapshot", nil)).Text
	assert.Contains(t, hovered, `link "Settings"`, "the menu shown on hover")

	// browser_drag: HTML drag and drop, and a widget that follows the mouse.
	snap = hovered
	res = mustOK(t, callTool(t, ts, s, "browser_drag", map[string]any{"start_ref": ref(`button "Card"`), "end_ref": ref(`button "Done column"`)}))
	assert.Contains(t, res.Text, "Dragged")
	assert.Contains(t, outOf(t, ts, s), `"out":"dropped Card"`)
	mustOK(t, callTool(t, ts, s, "browser_drag", map[string]any{"start_ref": ref(`button "Handle"`), "end_ref": ref(`button "Target"`)}))
	assert.Regexp(t, `"out":"mouse drag onto target in \d+ moves"`, outOf(t, ts, s))

	// browser_file_upload: files under the directory only.
	file := ref(`button "Attachment"`)
	res = mustOK(t, callTool(t, ts, s, "browser_file_upload", map[string]any{"ref": file, "paths": []string{"a.txt", "sub/b.txt"}}))
	assert.Contains(t, res.Text, "Chose 2 file(s)")
	assert.Contains(t, outOf(t, ts, s), `"out":"files a.txt:5,b.txt:3"`)
	mustOK(t, callTool(t, ts, s, "browser_file_upload", map[string]any{"ref": file, "paths": []string{"inner.txt"}}))
	assert.Contains(t, outOf(t, ts, s), `"out":"files a.txt:5"`, "a link that stays inside resolves to its file")
	for _, p := range []string{"link.txt", "../secret.txt", filepath.Join(filepath.Dir(dir), "x"), "/etc/passwd"} {
		res = callTool(t, ts, s, "browser_file_upload", map[string]any{"ref": file, "paths": []string{p}})
		assert.True(t, res.IsError, p)
		assert.False(t, res.Where.Ran, "refused before any browser ran: %s", p)
		assert.NotContains(t, res.Text, dir, "the directory's place is not told")
	}
	assert.Contains(t, outOf(t, ts, s), `"out":"files a.txt:5"`, "nothing refused reached the page")
	res = callTool(t, ts, s, "browser_file_upload", map[string]any{"ref": ref(`textbox "Name"`), "paths": []string{"a.txt"}})
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text, "is not a file input")
	off := newToolset(t, r)
	res = callTool(t, off, "off", "browser_file_upload", map[string]any{"ref": "e1", "paths": []string{"a.txt"}})
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text, "browser_file_upload is off on this server: the operator set no upload directory")

	// browser_wait_for: text that comes, text that goes, a pause, a bound.
	mustOK(t, callTool(t, ts, s, "browser_click", map[string]any{"ref": ref(`button "Load later"`)}))
	res = mustOK(t, callTool(t, ts, s, "browser_wait_for", map[string]any{"text": "Loaded!"}))
	assert.Contains(t, res.Text, `The text "Loaded!" is on the page.`)
	res = mustOK(t, callTool(t, ts, s, "browser_wait_for", map[string]any{"text_gone": "Loading…"}))
	assert.Contains(t, res.Text, `is not on the page`)
	res = mustOK(t, callTool(t, ts, s, "browser_wait_for", map[string]any{"text": "Never shown", "time": 0.3}))
	assert.Contains(t, res.Text, `did not appear within 300ms`)
	res = mustOK(t, callTool(t, ts, s, "browser_wait_for", map[string]any{"time": 0.1}))
	assert.Contains(t, res.Text, `Waited 100ms.`)
	res = callTool(t, ts, s, "browser_wait_for", map[string]any{"time": 600})
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text, "from 0 to 30 seconds")

	// browser_press with a chord: Control+a selects the field's text.
	mustOK(t, callTool(t, ts, s, "browser_click", map[string]any{"ref": ref(`textbox "Name"`)}))
	mustOK(t, callTool(t, ts, s, "browser_press", map[string]any{"key": "Control+a"}))
	sel := mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": "const f = document.getElementById('name'); return [f.selectionStart, f.selectionEnd]"}))
	assert.Contains(t, sel.Text, "Result: [0,5]")
}

// TestClickOnAHiddenElement: a ref whose element is no longer rendered
// (display: none) is answered in words, not with Chromium's "Node does
// not have a layout object".
func TestClickOnAHiddenElement(t *testing.T) {
	site := agenttest.NewInputSite(t)
	r := agenttest.NewRouter(t, nil)
	ts := newToolset(t, r)
	mustOK(t, callTool(t, ts, "h", "browser_navigate", map[string]string{"url": site.URL + "/"}))
	snap := mustOK(t, callTool(t, ts, "h", "browser_snapshot", nil)).Text
	mustOK(t, callTool(t, ts, "h", "browser_exec", map[string]string{"code": `document.getElementById("sub").style.display = "none"; 1`}))
	res := callTool(t, ts, "h", "browser_click", map[string]string{"ref": refOf(`checkbox "Subscribe"`, snap)})
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text, "has no visible box (it is hidden or has no size); take a new snapshot")
}
