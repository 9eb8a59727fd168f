package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hybroute/hybroute/hybroutetest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/agenttest"
)

func writeConfig(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

// TestConfigFile: a YAML or JSON file sets flags, a list sets a repeatable
// flag once per element, and the command line wins over the file.
func TestConfigFile(t *testing.T) {
	withCheckResolver(t, agenttest.StaticResolver{})
	y := writeConfig(t, "c.yaml", "provider: none\nblocked-hosts:\n  - '*.ads.test'\n  - 10.0.0.9\n")
	code, out, errOut := runCmd(t, nil, "", "check", "--config", y, "http://x.ads.test/", "http://10.0.0.9/")
	assert.Equal(t, exitBlocked, code, errOut)
	assert.Contains(t, out, "host_blocked")

	j := writeConfig(t, "c.json", `{"provider": "none", "allowed-hosts": "example.com", "auto-local": false}`)
	code, out, _ = runCmd(t, nil, "", "check", "--config", j, "http://10.0.0.9/")
	assert.Equal(t, exitBlocked, code, out)
	assert.Contains(t, out, "host_not_allowed")
	// The command line wins.
	code, out, _ = runCmd(t, nil, "", "check", "--config", j, "--allowed-hosts", "10.0.0.0/8", "http://10.0.0.9/")
	assert.Equal(t, exitOK, code, out)

	for body, want := range map[string]string{
		"nope: 1\n":           `unknown key "nope"`,
		"auto-local: maybe\n": "auto-local",
		"[1, 2]\n":            "not JSON or YAML of flag names",
		"provider: {a: 1}\n":  "not a map",
	} {
		code, _, errOut := runCmd(t, nil, "", "check", "--config", writeConfig(t, "bad.yaml", body), "http://10.0.0.9/")
		assert.Equal(t, exitFailure, code, body)
		assert.Contains(t, errOut, want, body)
	}
}

// TestConfigFileSuggestsAKey: an unknown key that is close to a flag's
// name (a letter off, _ for -) is answered with that name; one close to
// none is not.
func TestConfigFileSuggestsAKey(t *testing.T) {
	for body, want := range map[string]string{
		"alowed-hosts: example.com\n": `unknown key "alowed-hosts" (keys are the flags of hybroute check); did you mean "allowed-hosts"?`,
		"auto_local: false\n":         `did you mean "auto-local"?`,
		"Provider: none\n":            `did you mean "provider"?`,
		"blocked-host: [a.test]\n":    `did you mean "blocked-hosts"?`,
	} {
		code, _, errOut := runCmd(t, nil, "", "check", "--config", writeConfig(t, "c.yaml", body), "http://10.0.0.9/")
		assert.Equal(t, exitFailure, code, body)
		assert.Contains(t, errOut, want, body)
	}
	code, _, errOut := runCmd(t, nil, "", "check", "--config", writeConfig(t, "c.yaml", "colour: blue\n"), "http://10.0.0.9/")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, `unknown key "colour"`)
	assert.NotContains(t, errOut, "did you mean")
}

// TestPrintConfigMasksSecrets: --print-config shows every flag, with a CDP
// URL's credential redacted and API keys only as set or unset.
func TestPrintConfigMasksSecrets(t *testing.T) {
	hybroutetest.Parallel(t)
	const key = "bb_live_SECRET_do_not_print"
	c := writeConfig(t, "c.yaml", "cdp-url: wss://cdp.example/devtools/browser/1?token=SECRET_TOKEN_xyz\nblocked-hosts: [ads.test]\n")
	code, out, _ := runCmd(t, map[string]string{"BROWSERBASE_API_KEY": key}, "", "mcp", "--config", c, "--print-config")
	require.Equal(t, exitOK, code)
	assert.NotContains(t, out, key)
	assert.NotContains(t, out, "SECRET_TOKEN_xyz")
	assert.Contains(t, out, "BROWSERBASE_API_KEY: set (****)")
	assert.Contains(t, out, `blocked-hosts: "ads.test"`)
	assert.Contains(t, out, "cdp-url: ")
}

// TestEmptyAllowListFailsClosed: an allow list with no host, in the file
// or on the command line, is an error, not "no list" (which allows every
// host).
func TestEmptyAllowListFailsClosed(t *testing.T) {
	withCheckResolver(t, agenttest.StaticResolver{})
	for _, body := range []string{"allowed-hosts: []\n", "allowed-hosts: \"\"\n", "allowed-hosts:\n", `{"allowed-hosts": []}`, "allowed-hosts: [\"\"]\n"} {
		code, out, errOut := runCmd(t, nil, "", "check", "--provider", "none", "--config", writeConfig(t, "c.yaml", body), "http://10.0.0.9/")
		assert.Equal(t, exitFailure, code, "%s: %s", body, out)
		assert.Contains(t, errOut, "allowed-hosts", body)
		assert.Contains(t, errOut, "no host given", body)
	}
	for _, v := range []string{"", " , "} {
		code, out, errOut := runCmd(t, nil, "", "check", "--provider", "none", "--allowed-hosts", v, "http://10.0.0.9/")
		assert.Equal(t, exitFailure, code, "%q: %s", v, out)
		assert.Contains(t, errOut, "no host given", v)
	}
}

// TestPrintConfigRedactsPathTokensAndShowsSwitches: a CDP URL's path token
// is not printed; a switch whose name reads like a secret shows its value.
func TestPrintConfigRedactsPathTokensAndShowsSwitches(t *testing.T) {
	c := writeConfig(t, "c.yaml", "cdp-url: wss://user:pw9@cdp.example/devtools/browser/SECRETPATHTOKEN123?token=Q\nprovider-url: https://api.example/v1/k3yInPath\n")
	code, out, _ := runCmd(t, nil, "", "mcp", "--config", c, "--print-config", "--allow-secrets-in-urls")
	require.Equal(t, exitOK, code)
	assert.NotContains(t, out, "SECRETPATHTOKEN123")
	assert.NotContains(t, out, "k3yInPath")
	assert.NotContains(t, out, "pw9")
	assert.Contains(t, out, `cdp-url: "wss://cdp.example/devtools/browser/REDACTED?token=REDACTED"`)
	assert.Contains(t, out, `provider-url: "https://api.example/v1/REDACTED"`)
	assert.Contains(t, out, `allow-secrets-in-urls: "true"`)
	assert.Contains(t, out, `allow-private: "false"`)
}
