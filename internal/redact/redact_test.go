package redact

import (
	"net/url"
	"strings"
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
		assert.Equal(t, want, URL(in), in)
	}
}

// TestScrubFindsEverySpelling proves each spelling of a key is replaced,
// whatever the case of its escapes.
func TestScrubFindsEverySpelling(t *testing.T) {
	s := FromURL("wss://h?signingKey=" + "k%2By%2Fz%3D%3D9")
	for _, text := range []string{
		"raw k+y/z==9 here",
		"query k%2By%2Fz%3D%3D9 here",
		"lower k%2by%2fz%3d%3d9 here",
		"path k+y%2Fz==9 here",
		`quoted "k+y/z==9"`,
	} {
		got := s.Scrub(text)
		assert.True(t, s.Clean(got), "%q -> %q", text, got)
		assert.Contains(t, got, Redacted)
	}
	assert.Equal(t, "no secret here", s.Scrub("no secret here"))
}

// TestDisplay proves the printable form of a URL a caller or a page asked
// for: credentials gone from the userinfo, the query and a fragment, the
// rest kept, whatever the case of the name or the encoding of the key, and
// the length bounded.
func TestDisplay(t *testing.T) {
	for in, want := range map[string]string{
		"https://example.com/a?q=1&token=abc":                   "https://example.com/a?q=1&token=REDACTED",
		"https://u:p4ss@example.com/":                           "https://u:REDACTED@example.com/",
		"https://u@example.com/":                                "https://u@example.com/",
		"https://b.s3.amazonaws.com/k?X-Amz-Signature=ff&x=1":   "https://b.s3.amazonaws.com/k?X-Amz-Signature=REDACTED&x=1",
		"https://x/?API_KEY=k&Client_Secret=s&my_token=t&key=v": "https://x/?API_KEY=REDACTED&Client_Secret=REDACTED&my_token=REDACTED&key=REDACTED",
		"https://x/cb#access_token=at&state=s":                  "https://x/cb#access_token=REDACTED&state=s",
		"https://x/?api%5Fkey=v":                                "https://x/?api%5Fkey=REDACTED",
		"https://x/?token=":                                     "https://x/?token=",
		"http:\\\\u:pw@host/":                                   "http:\\\\u:REDACTED@host/",
		"https://x/?page=2&sort=asc":                            "https://x/?page=2&sort=asc",
		"not a url ?password=hunter2":                           "not a url ?password=REDACTED",
	} {
		assert.Equal(t, want, Display(in), in)
	}
	big := "https://example.com/?token=" + strings.Repeat("s", 1<<20) + "&q=" + strings.Repeat("q", 1<<20)
	got := Display(big)
	assert.LessOrEqual(t, len(got), MaxDisplay+40)
	assert.NotContains(t, got, "sss")
	assert.True(t, strings.HasSuffix(got, "…(2097182 bytes)"), got[len(got)-30:])
	long := "https://example.com/" + strings.Repeat("é", 600)
	assert.Contains(t, Display(long), "…(")
}

// TestCredential proves which URLs carry a credential and how the rule
// names it.
func TestCredential(t *testing.T) {
	for in, want := range map[string]string{
		"https://x/?token=abc":                            "token",
		"https://x/?a=1&Access_Token=abc":                 "Access_Token",
		"https://u:pw@x/":                                 "password",
		"https://x/?X-Goog-Signature=ab":                  "X-Goog-Signature",
		"https://x/?refresh_token=r":                      "refresh_token",
		"https://x/?mysecretthing=1":                      "mysecretthing",
		"https://x/?signingKey=k":                         "signingKey",
		"https://x/?sessionId=s":                          "sessionId",
		"https://x/#id_token=t":                           "id_token",
		"https://x/?" + url.QueryEscape("api key") + "=v": "",
	} {
		got, ok := Credential(in)
		assert.Equal(t, want != "", ok, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"https://x/", "https://x/?token=", "https://x/?tokens=1", "https://u@x/", "https://u:@x/", "https://x/?q=token%3Dabc", "https://x/path/token=abc"} {
		_, ok := Credential(in)
		assert.False(t, ok, in)
	}
}

// BenchmarkCredential measures the rule's cost on the routing hot path.
func BenchmarkCredential(b *testing.B) {
	for _, u := range []string{"https://dashboard.example.com/reports/daily?page=2&sort=asc", "https://x/?token=abc"} {
		b.Run(u, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = Credential(u)
			}
		})
	}
}

// TestDisplayText: every URL written in a text loses its credentials as
// Display redacts them, and the rest of the text stays as it was.
func TestDisplayText(t *testing.T) {
	for in, want := range map[string]string{
		"Error: boom\n    at boom (http://127.0.0.1:5/app.js?token=S3CR3T:1:33)\n    at http://h/a.js?v=2&key=S3CR3T:4:1": "Error: boom\n    at boom (http://127.0.0.1:5/app.js?token=REDACTED:1:33)\n    at http://h/a.js?v=2&key=REDACTED:4:1",
		"WebSocket connection to 'ws://127.0.0.1:1/?token=S3CR3T' failed: ":                                               "WebSocket connection to 'ws://127.0.0.1:1/?token=REDACTED' failed: ",
		`["http://h/api?access_token=S3CR3T","http://h/cb#access_token=S3CR3T&x=1"]`:                                      `["http://h/api?access_token=REDACTED","http://h/cb#access_token=REDACTED&x=1"]`,
		`{\"u\":\"https://u:S3CR3T@h/p\"}`:                                                                                `{\"u\":\"https://u:REDACTED@h/p\"}`,
		"no URL here, what? #1 a@b":                                                                                       "no URL here, what? #1 a@b",
		"see /api?sig=S3CR3T.":                                                                                            "see /api?sig=REDACTED.",
		"":                                                                                                                "",
	} {
		got := DisplayText(in)
		assert.Equal(t, want, got, in)
		assert.NotContains(t, got, "S3CR3T")
	}
}
