package cdpconn

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRedactURL proves the printable form of a URL keeps what helps a
// reader (scheme, host, path, parameter names) and nothing that may be a
// credential.
func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"wss://connect.browserbase.com?signingKey=a%2Bb%2Fc%3D%3D": "wss://connect.browserbase.com?signingKey=REDACTED",
		"wss://connect.steel.dev?apiKey=k1&sessionId=s1":           "wss://connect.steel.dev?apiKey=REDACTED&sessionId=REDACTED",
		"ws://u:p@127.0.0.1:9222/devtools/browser/x#frag":          "ws://127.0.0.1:9222/devtools/browser/x",
		"wss://h/?BARE-TOKEN-123":                                  "wss://h/?REDACTED",
		"wss://h/?a%20weird%20key=v":                               "wss://h/?REDACTED",
		"https://x.cdp.browser-use.com":                            "https://x.cdp.browser-use.com",
		"ws://%zz":                                                 "[unparseable URL]",
	} {
		assert.Equal(t, want, redactURL(in), in)
	}
}

// TestScrubFindsEverySpelling proves each spelling of a key is replaced,
// whatever the case of its escapes.
func TestScrubFindsEverySpelling(t *testing.T) {
	s := urlSecrets("wss://h?signingKey=" + "k%2By%2Fz%3D%3D9")
	for _, text := range []string{
		"raw k+y/z==9 here",
		"query k%2By%2Fz%3D%3D9 here",
		"lower k%2by%2fz%3d%3d9 here",
		"path k+y%2Fz==9 here",
		`quoted "k+y/z==9"`,
	} {
		got := s.scrub(text)
		assert.True(t, s.clean(got), "%q -> %q", text, got)
		assert.Contains(t, got, redacted)
	}
	assert.Equal(t, "no secret here", s.scrub("no secret here"))
}

// TestHostAllowed proves the allow list matches names and wildcards
// without matching the bare parent or a look-alike.
func TestHostAllowed(t *testing.T) {
	allowed := []string{"relay.example.test", "*.cdp.example.test"}
	for host, want := range map[string]bool{
		"relay.example.test":      true,
		"RELAY.example.test.":     true,
		"a.cdp.example.test":      true,
		"a.b.cdp.example.test":    true,
		"cdp.example.test":        false,
		"evilcdp.example.test":    false,
		"relay.example.test.evil": false,
	} {
		assert.Equal(t, want, hostAllowed(host, allowed), host)
	}
	assert.False(t, hostAllowed("x", []string{""}))
}
