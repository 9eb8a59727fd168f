package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/netip"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hybroute/hybroute/hybroutetest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/internal/agenttest"
)

// runCmd runs the command in process with env vars and stdin.
func runCmd(t *testing.T, vars map[string]string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := run(ctx, args, env{
		getenv: func(k string) string { return vars[k] },
		stdin:  strings.NewReader(stdin),
		stdout: &out,
		stderr: &errb,
	})
	return code, out.String(), errb.String()
}

// withCheckResolver makes the check command resolve with a static
// resolver: tests ask no real DNS server.
func withCheckResolver(t *testing.T, res agenttest.StaticResolver) {
	old := checkOptions
	checkOptions = []hybroute.Option{hybroute.WithResolver(res)}
	t.Cleanup(func() { checkOptions = old })
}

func TestCheckExplainsEachURL(t *testing.T) {
	withCheckResolver(t, agenttest.StaticResolver{
		"shop.example":    {netip.MustParseAddr("93.184.215.14")},
		"intranet.corp":   {netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("93.184.215.15")},
		"rebind.example":  {netip.MustParseAddr("93.184.215.16"), netip.MustParseAddr("169.254.169.254")},
		"printer.example": {netip.MustParseAddr("192.168.1.9")},
	})
	vars := map[string]string{"BROWSERBASE_API_KEY": "k", "BROWSERBASE_PROJECT_ID": "p"}

	code, out, errOut := runCmd(t, vars, "", "check", "--json", "localhost:3000", "shop.example", "http://intranet.corp/", "http://0x7f.1:8080/", "unknown.test")
	require.Equal(t, exitOK, code, errOut)
	var rep checkReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	assert.Equal(t, "cloud provider browserbase; private addresses run on the local Chromium", rep.Routing, "the provider is picked from the environment")
	require.Len(t, rep.URLs, 5)

	lh := rep.URLs[0]
	assert.Equal(t, "http://localhost:3000/", lh.URL)
	assert.Equal(t, "localhost", lh.Host)
	assert.Equal(t, "private", lh.Class)
	assert.Equal(t, "local", lh.Route)
	assert.Equal(t, "<session>::local", lh.CacheKey)
	assert.Contains(t, lh.Change, "--auto-local=false")

	shop := rep.URLs[1]
	assert.Equal(t, "https://shop.example/", shop.URL)
	assert.Equal(t, "public", shop.Class)
	assert.Equal(t, "cloud", shop.Route)
	assert.Equal(t, "<session>", shop.CacheKey)
	require.Len(t, shop.Addresses, 1)
	assert.Equal(t, "93.184.215.14", shop.Addresses[0].Addr)

	mixed := rep.URLs[2]
	assert.Equal(t, "private", mixed.Class)
	assert.Contains(t, mixed.Rule, "one private answer makes the name private")
	require.Len(t, mixed.Addresses, 2)
	assert.Equal(t, "private network (RFC 1918)", mixed.Addresses[0].Range)
	assert.Equal(t, "local", mixed.Route)

	hex := rep.URLs[3]
	assert.Equal(t, "127.0.0.1", hex.Host, "the host as Chromium parses it")
	assert.Equal(t, "loopback", hex.Addresses[0].Range)

	unknown := rep.URLs[4]
	assert.Equal(t, "public", unknown.Class)
	assert.NotEmpty(t, unknown.Resolve)
	assert.Contains(t, unknown.Rule, "does not resolve here")

	// A name that mixes in a metadata answer blocks the call: exit 2.
	code, out, _ = runCmd(t, vars, "", "check", "http://rebind.example/")
	assert.Equal(t, exitBlocked, code)
	assert.Contains(t, out, "class:     metadata")
	assert.Contains(t, out, "resolves to a cloud metadata address")
	assert.Contains(t, out, "none: cloud metadata is refused whatever the options")

	// Auto-local off: a private URL is refused, and the output says which
	// option would let it run.
	code, out, _ = runCmd(t, vars, "", "check", "--auto-local=false", "http://printer.example/")
	assert.Equal(t, exitBlocked, code)
	assert.Contains(t, out, "decision:  blocked: auto-local routing is off")
	assert.Contains(t, out, "--auto-local (the default) runs it on the local Chromium")
}

func TestCheckCode(t *testing.T) {
	withCheckResolver(t, agenttest.StaticResolver{"shop.example": {netip.MustParseAddr("93.184.215.14")}})
	code := "await page.goto(\"https://shop.example/cart\");\nconst r = await fetch(\"http://localhost:3000/api\");\n"
	c, out, errOut := runCmd(t, map[string]string{"STEEL_API_KEY": "k"}, code, "check", "--json", "--code", "-")
	require.Equal(t, exitOK, c, errOut)
	var rep checkReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.NotNil(t, rep.Call)
	assert.Equal(t, 2, rep.Call.URLs)
	assert.Equal(t, "local", rep.Call.Route, "a call that mixes public and private URLs runs wholly local")
	assert.Equal(t, "<session>::local", rep.Call.CacheKey)
	require.Len(t, rep.URLs, 2)
	assert.Equal(t, "cloud", rep.URLs[0].Route)
	assert.Equal(t, "local", rep.URLs[1].Route)

	c, out, _ = runCmd(t, nil, `fetch("http://169.254.169.254/latest/")`, "check", "--code", "-")
	assert.Equal(t, exitBlocked, c)
	assert.Contains(t, out, "blocked:   hybroute: blocked (metadata): URL targets a cloud metadata endpoint")
}

func TestCheckWithCDPOverride(t *testing.T) {
	withCheckResolver(t, agenttest.StaticResolver{})
	code, out, _ := runCmd(t, nil, "", "check", "--cdp-url", "ws://127.0.0.1:9222/devtools/browser/x", "http://10.0.0.7/")
	assert.Equal(t, exitBlocked, code)
	assert.Contains(t, out, "every call goes to the browser at --cdp-url")
	assert.Contains(t, out, "blocked: the --cdp-url browser is not local")
	code, out, _ = runCmd(t, nil, "", "check", "--cdp-url", "ws://127.0.0.1:9222/devtools/browser/x", "--allow-private", "http://10.0.0.7/")
	assert.Equal(t, exitOK, code, out)
}

// TestEachCommandOffersItsOwnFlags: check runs no browser, so it offers
// none of the browser's flags (--chromium, --idle-timeout) that would do
// nothing there; every flag it offers it reads. mcp offers them.
func TestEachCommandOffersItsOwnFlags(t *testing.T) {
	flags := func(args ...string) []string {
		code, _, help := runCmd(t, nil, "", args...)
		require.Equal(t, exitOK, code)
		return regexp.MustCompile(`(?m)^  -([a-z-]+)`).FindAllString(help, -1)
	}
	check := flags("check", "-h")
	assert.Equal(t, []string{"  -allow-private", "  -allow-private-provider-url", "  -allow-secrets-in-urls", "  -allowed-hosts", "  -auto-local", "  -blocked-hosts",
		"  -cdp-url", "  -cloud-webrtc", "  -code", "  -config", "  -json", "  -print-config", "  -provider", "  -provider-spec", "  -provider-url", "  -v"}, check)
	mcp := flags("mcp", "-h")
	for _, f := range []string{"  -chromium", "  -idle-timeout"} {
		assert.NotContains(t, check, f)
		assert.Contains(t, mcp, f)
	}
	code, _, errOut := runCmd(t, nil, "", "check", "--idle-timeout", "1m", "http://10.0.0.9/")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "flag provided but not defined: -idle-timeout")
}

func TestConfigErrors(t *testing.T) {
	hybroutetest.Parallel(t)
	code, _, errOut := runCmd(t, nil, "", "mcp", "--provider", "browserbase")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "--provider browserbase needs BROWSERBASE_API_KEY and BROWSERBASE_PROJECT_ID in the environment")

	code, _, errOut = runCmd(t, nil, "", "mcp", "--provider", "cloudy")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, `unknown --provider "cloudy"`)

	code, _, errOut = runCmd(t, nil, "", "mcp", "--provider", "cdp")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "--provider cdp needs --cdp-url")

	code, _, errOut = runCmd(t, nil, "", "mcp", "--viewport", "wide")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "want WIDTHxHEIGHT")

	code, _, _ = runCmd(t, nil, "", "check")
	assert.Equal(t, exitFailure, code)
	code, _, _ = runCmd(t, nil, "", "frobnicate")
	assert.Equal(t, exitFailure, code)
	code, out, _ := runCmd(t, nil, "", "version")
	assert.Equal(t, exitOK, code)
	assert.True(t, strings.HasPrefix(out, "hybroute "))
}

func TestProviderFromEnvironment(t *testing.T) {
	hybroutetest.Parallel(t)
	for _, tc := range []struct {
		vars map[string]string
		flag string
		want string
	}{
		{nil, "", "none"},
		{map[string]string{"STEEL_API_KEY": "s"}, "", "steel"},
		{map[string]string{"BROWSER_USE_API_KEY": "u", "STEEL_API_KEY": "s"}, "", "browser-use"},
		{map[string]string{"BROWSER_USE_API_KEY": "u"}, "none", "none"},
		{map[string]string{"BROWSERBASE_API_KEY": "b", "BROWSERBASE_PROJECT_ID": "p"}, "", "browserbase"},
		{nil, "camofox", "camofox"}, // no key needed: an access key is optional
	} {
		c := config{provider: tc.flag}
		_, name, err := c.newProvider(func(k string) string { return tc.vars[k] }, true)
		require.NoError(t, err)
		assert.Equal(t, tc.want, name, "%v %q", tc.vars, tc.flag)
	}
}

func TestCheckExplainsTheSecretsRule(t *testing.T) {
	withCheckResolver(t, agenttest.StaticResolver{"shop.example": {netip.MustParseAddr("93.184.215.14")}})
	vars := map[string]string{"BROWSERBASE_API_KEY": "k", "BROWSERBASE_PROJECT_ID": "p"}
	const u = "https://shop.example/export?token=abc123"

	code, out, errOut := runCmd(t, vars, "", "check", u)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, `secret:    the URL carries a credential (query parameter "token"), so it is kept off cloud browsers (rule secret_in_url)`)
	assert.Contains(t, out, "route:     local (cache key <session>::local)")
	assert.Contains(t, out, "decision:  runs on the local Chromium: the URL carries a credential (secret_in_url), kept off the cloud browser")
	assert.Contains(t, out, "change:    --allow-secrets-in-urls would send it to the cloud browser")

	code, out, _ = runCmd(t, vars, "", "check", "--auto-local=false", u)
	assert.Equal(t, exitBlocked, code)
	assert.Contains(t, out, "blocked: the URL carries a credential (secret_in_url)")
	assert.NotContains(t, out, "error:    abc123")

	code, out, _ = runCmd(t, vars, "", "check", "--allow-secrets-in-urls", u)
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "route:     cloud")

	code, out, _ = runCmd(t, vars, "", "check", "https://shop.example/export?page=2")
	assert.Equal(t, exitOK, code)
	assert.NotContains(t, out, "secret:")
}

// TestCheckExpandsDataURLs: a data: URL opens a document, and the browser
// loads what that document names: check explains those URLs as the plan
// decides them, as an argument and inside a call's code.
func TestCheckExpandsDataURLs(t *testing.T) {
	withCheckResolver(t, agenttest.StaticResolver{})
	data := `data:text/html,<img src="http://169.254.169.254/latest/">`
	code, out, _ := runCmd(t, nil, "", "check", "--json", data)
	assert.Equal(t, exitBlocked, code, out)
	var rep checkReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Len(t, rep.URLs, 2)
	assert.True(t, rep.URLs[0].Blocked, "the data: URL is blocked by what it holds")
	assert.Equal(t, "http://169.254.169.254/latest/", rep.URLs[1].URL)
	assert.Equal(t, "metadata", rep.URLs[1].Class)
	assert.Equal(t, data, rep.URLs[1].Inside)

	// The frame's src is http://localhost:8080/, in base64: only the
	// data: document names it.
	code, out, _ = runCmd(t, map[string]string{"STEEL_API_KEY": "k"}, "frame.src = `data:text/html;base64,PGlmcmFtZSBzcmM9J2h0dHA6Ly9sb2NhbGhvc3Q6ODA4MC8nPjwvaWZyYW1lPg==`", "check", "--json", "--code", "-")
	require.Equal(t, exitOK, code, out)
	rep = checkReport{}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.NotNil(t, rep.Call)
	assert.Equal(t, "local", rep.Call.Route, "the localhost frame inside the data: document sends the call local")
	require.Len(t, rep.URLs, 2)
	assert.Equal(t, "http://localhost:8080/", rep.URLs[1].URL)
	assert.Equal(t, "a data: URL of the call", rep.URLs[1].Inside)
}

func TestCheckOperatorRules(t *testing.T) {
	withCheckResolver(t, agenttest.StaticResolver{})
	code, out, _ := runCmd(t, nil, "", "check", "--provider", "none", "--blocked-hosts", "*.ads.test,10.0.0.9", "http://x.ads.test/", "http://10.0.0.9/")
	assert.Equal(t, exitBlocked, code, out)
	assert.Equal(t, 2, strings.Count(out, "blocked by an operator rule (host_blocked)"), out)
	code, out, _ = runCmd(t, nil, "", "check", "--provider", "none", "--allowed-hosts", "example.com", "http://10.0.0.9/")
	assert.Equal(t, exitBlocked, code, out)
	assert.Contains(t, out, "host_not_allowed")
	code, out, _ = runCmd(t, nil, "", "check", "--provider", "none", "--allowed-hosts", "10.0.0.0/8", "http://10.0.0.9/")
	assert.Equal(t, exitOK, code, out)
	code, _, errOut := runCmd(t, nil, "", "check", "--blocked-hosts", "http://x/", "http://10.0.0.9/")
	assert.NotEqual(t, exitOK, code)
	assert.Contains(t, errOut, "host pattern")
}
