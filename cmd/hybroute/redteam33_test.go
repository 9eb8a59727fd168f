package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/agenttest"
)

// Red team of issue 33, item 7: every spelling of an empty allow list in
// a config file fails, or leaves a list that allows nothing; none means
// "no list".
func TestRedTeam33EmptyAllowListSpellings(t *testing.T) {
	withCheckResolver(t, agenttest.StaticResolver{})
	for _, body := range []string{
		"allowed-hosts: ~\n",
		"allowed-hosts: null\n",
		"allowed-hosts: !!null\n",
		`{"allowed-hosts": null}`,
		"allowed-hosts: [ ]\n",
		"allowed-hosts: [~]\n",
		`{"allowed-hosts": [null]}`,
		"allowed-hosts: [[]]\n",
		"allowed-hosts: [[], []]\n",
		"allowed-hosts: '   '\n",
		"allowed-hosts: \"\\t\\n\"\n",
		"allowed-hosts: \"\\u00a0\"\n",
		"allowed-hosts: \"\\u200b\"\n",
		"allowed-hosts: \"\\ufeff\"\n",
		"allowed-hosts: ','\n",
		"allowed-hosts: ', ,'\n",
		"allowed-hosts: [' ', ',']\n",
		"allowed-hosts: ['', 'example.com']\n",
		"allowed-hosts: '.'\n",
		"allowed-hosts: '*.'\n",
		"allowed-hosts: false\n",
		"allowed-hosts: 0\n",
		"--allowed-hosts: []\n",
		"<<: {allowed-hosts: []}\n",
		"allowed-hosts: |\n\n",
		"allowed-hosts: >-\n   \n",
	} {
		code, out, errOut := runCmd(t, nil, "", "check", "--provider", "none", "--config", writeConfig(t, "c.yaml", body), "http://10.0.0.9/", "https://example.org/")
		assert.NotEqual(t, exitOK, code, "held if not OK: %q: %s %s", body, out, errOut)
		assert.NotContains(t, out, "decision:  runs on the local Chromium (no cloud provider)\n\nhttps://example.org", body)
	}
	for _, v := range []string{"\t", ",,", " ,\t, ", "\u00a0"} {
		code, out, _ := runCmd(t, nil, "", "check", "--provider", "none", "--allowed-hosts", v, "http://10.0.0.9/")
		assert.NotEqual(t, exitOK, code, "%q: %s", v, out)
	}
}

// TestRedTeam33BooleanSpellings: a switch in the file takes only what
// strconv.ParseBool takes; YAML 1.1's yes/no/on/off are refused, not
// read as a string that means true.
func TestRedTeam33BooleanSpellings(t *testing.T) {
	for _, body := range []string{"allow-private: yes\n", "allow-private: 'on'\n", "allow-private: ~\n", "allow-private: 'true '\n", "allow-private: [true, no]\n"} {
		code, out, errOut := runCmd(t, nil, "", "mcp", "--config", writeConfig(t, "c.yaml", body), "--print-config")
		assert.Equal(t, exitFailure, code, "%q: %s", body, out)
		assert.Contains(t, errOut, "allow-private", body)
	}
	// A switch given a value after a space is the switch on and a stray
	// argument: mcp refuses the argument.
	code, _, errOut := runCmd(t, nil, "", "mcp", "--allow-private", "false", "--print-config")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "unexpected arguments")
}

// TestRedTeam33PrintConfigSpellings: --print-config prints no credential
// of a URL in any spelling the flag takes.
func TestRedTeam33PrintConfigSpellings(t *testing.T) {
	for _, c := range []struct{ flag, val, secret string }{
		{"cdp-url", "wss://cdp.example/devtools/browser/x?token=S3CRETa", "S3CRETa"},
		{"cdp-url", "WSS://cdp.example/devtools/browser/S3CRETb", "S3CRETb"},
		{"cdp-url", "wss://S3CRETc@cdp.example/devtools/browser/x", "S3CRETc"},
		{"cdp-url", "wss://cdp.example/devtools/browser/x#token=S3CRETd", "S3CRETd"},
		{"cdp-url", "wss://cdp.example/devtools;token=S3CRETe/browser/x", "S3CRETe"},
		{"cdp-url", "wss://cdp.example/devtools/browser/%53%33CRETf", "S3CRETf"},
		{"cdp-url", "wss://cdp.example/devtools/browser/%53%33CRETf", "%53%33CRETf"},
		{"cdp-url", " wss://cdp.example/devtools/browser/S3CRETg", "S3CRETg"},
		{"cdp-url", "wss://cdp.example/devtools/browser/x?&=S3CRETh", "S3CRETh"},
		{"cdp-url", "wss://cdp.example/devtools/browser/x?token", "S3CRETi"},
		{"provider-url", "https://api.example/v1?apikey=S3CRETj", "S3CRETj"},
		{"provider-url", "https://user:S3CRETk@api.example/", "S3CRETk"},
		{"provider-url", "https://api.example/v1/sessions/S3CRETl/", "S3CRETl"},
	} {
		code, out, errOut := runCmd(t, nil, "", "mcp", "--"+c.flag, c.val, "--print-config")
		require.Equal(t, exitOK, code, errOut)
		assert.NotContains(t, out, c.secret, "held if not printed: --%s %q", c.flag, c.val)
	}
}

// TestRedTeam33PrintConfigComma: printableURLs splits every value at
// commas (for the host lists) before it redacts, so the part of a single
// URL's token after a comma is printed as it is.
func TestRedTeam33PrintConfigComma(t *testing.T) {
	for _, v := range []string{
		"wss://cdp.example/devtools/browser/x?token=abc,S3CRETm",
		"wss://cdp.example/devtools/browser/abc,S3CRETm",
	} {
		code, out, errOut := runCmd(t, nil, "", "mcp", "--cdp-url", v, "--print-config")
		require.Equal(t, exitOK, code, errOut)
		assert.NotContains(t, out, "S3CRETm", v)
	}
}

// TestCheckStraySwitchValue: "--allow-private false" leaves "false" as an
// argument, which check refuses instead of reading it as a URL.
func TestCheckStraySwitchValue(t *testing.T) {
	code, _, errOut := runCmd(t, nil, "", "check", "--provider", "none", "--allow-private", "false", "http://10.0.0.9/")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "--flag=false")
}
