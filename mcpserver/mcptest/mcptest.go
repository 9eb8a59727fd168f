package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent"
	"github.com/hybroute/hybroute/internal/agenttest"
)

// pageOut reads what the input page's last control did, and its form.
func pageOut(c *client) string {
	_, text := c.ok("browser_exec", map[string]any{"code": "({out: out.textContent, ...form()})"})
	return text
}

// tabID is the id of the tab whose line of browser_tabs list matches re,
// once one does (a popup is listed as loading at first).
func tabID(t *testing.T, c *client, re string) string {
	t.Helper()
	rx := regexp.MustCompile(`(?m)^- (t\d+)\b.*` + re)
	var m []string
	require.Eventually(t, func() bool {
		_, list := c.ok("browser_tabs", map[string]any{"action": "list"})
		m = rx.FindStringSubmatch(list)
		return m != nil
	}, 30*time.Second, 100*time.Millisecond, "no tab matching %q", re)
	return m[1]
}

// filesToUpload is a directory with a file, and a link in it to a file
// outside it.
func filesToUpload(t *testing.T) string {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello"), 0o600))
	outside := filepath.Join(t.TempDir(), "secret.txt")
	require.NoError(t, os.WriteFile(outside, []byte("secret"), 0o600))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "link.txt")))
	return dir
}

// exerciseInput drives the tabs, input, navigation and dialog tools over
// an MCP client on the local browser, with uploads from a directory and
// dialogs held for the model.
func exerciseInput(t *testing.T, c *client, siteURL string) {
	_, text := c.ok("browser_navigate", map[string]any{"url": siteURL + "/"})
	assert.Contains(t, text, `Page: "Inputs"`)
	_, snap := c.ok("browser_snapshot", nil)

	_, text = c.ok("browser_select_option", map[string]any{"ref": refIn(t, snap, `combobox "Size"`), "values": []string{"Large"}})
	assert.Contains(t, text, `Selected "Large"`)
	c.ok("browser_fill_form", map[string]any{"fields": []map[string]any{
		{"ref": refIn(t, snap, `textbox "Name"`), "type": "textbox", "value": "Ada"},
		{"ref": refIn(t, snap, `checkbox "Subscribe"`), "type": "checkbox", "value": "true"},
		{"ref": refIn(t, snap, `radio "Pro"`), "type": "radio", "value": "true"},
		{"ref": refIn(t, snap, `slider "Volume"`), "type": "slider", "value": "42"},
	}})
	assert.Contains(t, pageOut(c), `"name":"Ada","sub":true,"plan":"pro","size":"l","tops":[],"vol":"42"`)
	c.ok("browser_hover", map[string]any{"ref": refIn(t, snap, `button "Account"`)})
	assert.Contains(t, pageOut(c), `"out":"hovered"`)
	c.ok("browser_drag", map[string]any{"start_ref": refIn(t, snap, `button "Card"`), "end_ref": refIn(t, snap, `button "Done column"`)})
	assert.Contains(t, pageOut(c), `"out":"dropped Card"`)

	c.ok("browser_file_upload", map[string]any{"ref": refIn(t, snap, `button "Attachment"`), "paths": []string{"a.txt"}})
	assert.Contains(t, pageOut(c), `"out":"files a.txt:5"`)
	res := c.call("browser_file_upload", map[string]any{"ref": refIn(t, snap, `button "Attachment"`), "paths": []string{"link.txt"}})
	assert.True(t, res.IsError)
	assert.Contains(t, textOf(res), "outside the upload directory")

	c.ok("browser_click", map[string]any{"ref": refIn(t, snap, `button "Load later"`)})
	_, text = c.ok("browser_wait_for", map[string]any{"text": "Loaded!"})
	assert.Contains(t, text, `The text "Loaded!" is on the page.`)

	// Dialogs wait for the model.
	res, text = c.ok("browser_click", map[string]any{"ref": refIn(t, snap, `button "Ask"`)})
	assert.Contains(t, text, `prompt "Your name?" (default "default"): open`)
	dialogs, _ := res.Meta[MetaWhere].(map[string]any)["dialogs"].([]any)
	require.Len(t, dialogs, 1)
	assert.Equal(t, true, dialogs[0].(map[string]any)["pending"])
	_, text = c.ok("browser_handle_dialog", map[string]any{"accept": true, "prompt_text": "Grace"})
	assert.Contains(t, text, `Accepted the prompt`)
	assert.Contains(t, pageOut(c), `"out":"prompt \"Grace\""`)

	// Tabs: a popup becomes one; a new one opens; refused URLs open none.
	c.ok("browser_click", map[string]any{"ref": refIn(t, snap, `link "Open popup"`)})
	popup := tabID(t, c, `"Popup page"`)
	_, text = c.ok("browser_tabs", map[string]any{"action": "select", "id": popup})
	assert.Contains(t, text, `Page: "Popup page"`)
	_, text = c.ok("browser_tabs", map[string]any{"action": "new", "url": siteURL + "/popup?who=two"})
	assert.Contains(t, text, "it is the current tab")
	res = c.call("browser_tabs", map[string]any{"action": "new", "url": "http://169.254.169.254/latest/"})
	assert.True(t, res.IsError)
	assert.Contains(t, textOf(res), "targets a cloud metadata endpoint")
	_, text = c.ok("browser_tabs", map[string]any{"action": "close", "id": popup})
	assert.Contains(t, text, "Closed tab "+popup)

	// Navigation.
	c.ok("browser_navigate", map[string]any{"url": siteURL + "/popup?who=three"})
	c.ok("browser_back", nil)
	_, text = c.ok("browser_forward", nil)
	assert.Contains(t, text, "Went forward.")
	_, text = c.ok("browser_reload", nil)
	assert.Contains(t, text, "Reloaded the page.")
	c.ok("browser_resize", map[string]any{"width": 640, "height": 480})
	_, text = c.ok("browser_exec", map[string]any{"code": "[innerWidth, innerHeight, document.getElementById('who').textContent]"})
	assert.Contains(t, text, `Result: [640,480,"three"]`)
}

func TestMCPInputToolsOverStdioBinary(t *testing.T) {
	site := agenttest.NewInputSite(t)
	c, _ := startBinary(t, nil, "--provider", "none", "--upload-dir", filesToUpload(t), "--dialogs", "model")
	exerciseInput(t, c, site.URL)
}

func TestMCPInputToolsOverHTTP(t *testing.T) {
	site := agenttest.NewInputSite(t)
	r := agenttest.NewRouter(t, nil, hybroute.WithDialogPolicy(hybroute.DialogPolicy{Hold: true}))
	ts := agent.New(r, agent.WithUploadDir(filesToUpload(t)))
	t.Cleanup(func() { require.NoError(t, ts.Close()) })
	srv := newMCPServer(ts)
	t.Cleanup(srv.close)
	exerciseInput(t, connectHTTP(t, serveMCPHTTP(t, srv).URL), site.URL)
}

// TestMCPInputToolsOnCloud: the tools run in the cloud browser where the
// page is; an upload is refused there; a tab at a local address opens in
// the local browser and says so; a popup to a private address is refused.
func TestMCPInputToolsOnCloud(t *testing.T) {
	site := agenttest.NewInputSite(t)
	public := regexp.MustCompile(`127\.0\.0\.1`).ReplaceAllString(site.URL, agenttest.PublicHost)
	cloud := agenttest.NewCloud(t)
	r := agenttest.NewRouter(t, cloud.Provider)
	ts := agent.New(r, agent.WithUploadDir(filesToUpload(t)))
	t.Cleanup(func() { require.NoError(t, ts.Close()) })
	srv := newMCPServer(ts)
	t.Cleanup(srv.close)
	c := &client{t: t, cs: connectInMemory(t, srv)}

	_, text := c.ok("browser_navigate", map[string]any{"url": public + "/"})
	assert.Contains(t, text, "Browser: the cloud browser")
	_, snap := c.ok("browser_snapshot", nil)
	c.ok("browser_fill_form", map[string]any{"fields": []map[string]any{
		{"ref": refIn(t, snap, `textbox "Name"`), "type": "textbox", "value": "Cloud"},
		{"ref": refIn(t, snap, `combobox "Size"`), "type": "combobox", "value": "Medium"},
	}})
	c.ok("browser_select_option", map[string]any{"ref": refIn(t, snap, `listbox "Toppings"`), "values": []string{"Olives"}})
	c.ok("browser_drag", map[string]any{"start_ref": refIn(t, snap, `button "Card"`), "end_ref": refIn(t, snap, `button "Done column"`)})
	out := pageOut(c)
	assert.Contains(t, out, `"out":"dropped Card","name":"Cloud","sub":false,"plan":"basic","size":"m","tops":["Olives"]`)
	assert.Contains(t, out, "Browser: the cloud browser")
	c.ok("browser_hover", map[string]any{"ref": refIn(t, snap, `button "Account"`)})
	_, text = c.ok("browser_resize", map[string]any{"width": 700, "height": 500})
	assert.Contains(t, text, "Browser: the cloud browser")
	_, text = c.ok("browser_exec", map[string]any{"code": "[innerWidth, innerHeight]"})
	assert.Contains(t, text, "Result: [700,500]")
	_, text = c.ok("browser_reload", nil)
	assert.Contains(t, text, "Browser: the cloud browser")

	res := c.call("browser_file_upload", map[string]any{"ref": refIn(t, snap, `button "Attachment"`), "paths": []string{"a.txt"}})
	assert.True(t, res.IsError)
	assert.Contains(t, textOf(res), "the cloud browser, which cannot read this machine's files")

	_, snap = c.ok("browser_snapshot", nil)
	c.ok("browser_click", map[string]any{"ref": refIn(t, snap, `link "Open popup"`)})
	popup := tabID(t, c, `"Popup page" .*\(cloud browser\)`)
	_, text = c.ok("browser_tabs", map[string]any{"action": "new", "url": site.URL + "/popup?who=local"})
	assert.Contains(t, text, "It opened in the local browser")
	assert.Contains(t, text, "Browser: the local browser")
	_, text = c.ok("browser_tabs", map[string]any{"action": "select", "id": popup})
	assert.Contains(t, text, "Browser: the cloud browser")
	_, text = c.ok("browser_exec", map[string]any{"code": "document.getElementById('who').textContent"})
	assert.Contains(t, text, `Result: "one"`)

	// No literal names the private address, so the call stays in the cloud
	// browser, whose guard refuses the popup.
	res = c.call("browser_exec", map[string]any{"code": "window.open(location.origin.replace('" + agenttest.PublicHost + "', '127.0.0.1') + '/popup'); return 1"})
	assert.True(t, res.IsError)
	assert.Contains(t, textOf(res), "targets a private or internal address")
	assert.Contains(t, textOf(res), "Browser: the cloud browser")
}

// TestMCPToolFlagsAreChecked: a bad --dialogs or --upload-dir stops the
// server at start, with what is wrong.
func TestMCPToolFlagsAreChecked(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--dialogs", "maybe"}, `--dialogs "maybe": want dismiss, accept or model`},
		{[]string{"--upload-dir", filepath.Join(t.TempDir(), "none")}, "--upload-dir: stat"},
		{[]string{"--upload-dir", file}, "is not a directory"},
	} {
		code, _, stderr := runCmd(t, nil, "", append([]string{"mcp", "--provider", "none"}, tc.args...)...)
		assert.Equal(t, exitFailure, code, tc.args)
		assert.Contains(t, stderr, tc.want, tc.args)
	}
	for in, want := range map[string]hybroute.DialogPolicy{"": {}, "dismiss": {}, "Accept": {Accept: true}, "model": {Hold: true}} {
		got, err := dialogsFlag(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
}
