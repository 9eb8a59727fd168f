package hybroute

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/route"
)

// reviewInputs are calls that hide a private or metadata URL from a naive
// scanner (or cut it short), so that the call would go to the cloud as if
// it had no URL (or a public one). Each must make Plan block the call or
// route it local; metadata ones must block.
var reviewInputs = []struct {
	rule     string
	code     string
	metadata bool // the real target is a metadata endpoint: must be blocked
}{
	// 1. Placeholder after a complete literal host.
	{"template placeholder after metadata IP", "fetch(`http://169.254.169.254${path}`)", true},
	{"template placeholder in double quotes", `fetch("http://169.254.169.254${path}")`, true},
	{"f-string placeholder after loopback", `requests.get(f"http://127.0.0.1{path}")`, false},
	{"printf verb after localhost", `fetch("http://localhost%s" % p)`, false},
	{"concatenated port after localhost", `fetch("http://localhost:" + port)`, false},
	// 2. Escapes in source strings and HTML attributes.
	{"unicode-escaped @", `fetch("http://evil.example\u0040169.254.169.254/latest")`, true},
	{"hex-escaped digits", `fetch("http://\x31\x36\x39.254.169.254/")`, true},
	{"unicode-escaped dots", `fetch("http://127\u002e0\u002e0\u002e1")`, false},
	{"braced unicode escape", `fetch("http://evil.example\u{40}169.254.169.254/")`, true},
	{"hex-escaped dot", `fetch("http://169\x2e254.169.254/")`, true},
	{"HTML &#58;", `<iframe src="http://localhost&#58;3000">`, false},
	{"HTML &#x3a;", `<iframe src="http://localhost&#x3a;3000">`, false},
	{"HTML &colon;", `<iframe src="http://localhost&colon;3000">`, false},
	{"HTML &period; and &#46;", `<iframe src="http://169&period;254&#46;169.254/">`, true},
	{"HTML &commat;", `<a href="http://evil.example&commat;169.254.169.254/">`, true},
	{"HTML &#64;", `<a href="http://evil.example&#64;169.254.169.254/">`, true},
	// 3. Userinfo tricks.
	{"raw tab before @", "fetch(`http://a\t@169.254.169.254/`)", true},
	{"space in userinfo", `fetch("http://a b@169.254.169.254/")`, true},
	{"escaped quote in userinfo", `fetch("http://a\"b@127.0.0.1")`, false},
	{"angle bracket in userinfo", `http://a<b@127.0.0.1/`, false},
	{"angle bracket in quoted userinfo", `fetch("http://a<b@127.0.0.1/")`, false},
	{"raw tab inside the host", "fetch(\"http://metadata.google\t.internal/\")", true},
	{"escaped tab inside the host", `fetch("http://metadata.google\t.internal/")`, true},
	// 4. Scheme-relative URLs.
	{"scheme-relative metadata IP", `fetch("//169.254.169.254/latest/meta-data/")`, true},
	{"scheme-relative localhost", `<img src="//localhost:3000/x">`, false},
	{"scheme-relative IPv6 loopback", `fetch('//[::1]:8080/')`, false},
	{"scheme-relative metadata name", `fetch("//metadata.google.internal/computeMetadata/v1/")`, true},
	// 5. Length cap.
	{"userinfo longer than the cap", "fetch(\"http://" + strings.Repeat("a", 5000) + "@169.254.169.254/\")", true},
	{"unquoted userinfo longer than the cap", "http://" + strings.Repeat("a", 5000) + "@169.254.169.254/", true},
	// 64<<10 is urlscan's far look-ahead: past it the authority fails closed.
	{"userinfo longer than the far look-ahead", "fetch(\"http://" + strings.Repeat("a", 64<<10+10) + "@169.254.169.254/\")", false},
}

func TestReviewInputsNeverCleanCloud(t *testing.T) {
	ctx := context.Background()
	for i, tc := range reviewInputs {
		t.Run(tc.rule, func(t *testing.T) {
			r := newRouter(t, &stubProvider{name: "C"}, nil)
			key := fmt.Sprintf("review-%d", i)
			p, err := r.Plan(ctx, key, tc.code)
			require.False(t, err == nil && p.Route == route.Cloud,
				"a clean cloud route for %q (urls %q)", tc.code, ScanURLs(tc.code))
			if tc.metadata {
				require.Error(t, err)
				assert.ErrorIs(t, err, netpolicy.ErrMetadata)
			}
		})
	}
}

// TestReviewControlsStayOnCloud makes sure the scanner's care does not
// turn the harmless neighbours of reviewInputs into local or blocked calls:
// a scanner that saw a private URL everywhere would never use the cloud.
func TestReviewControlsStayOnCloud(t *testing.T) {
	ctx := context.Background()
	for i, code := range []string{
		`fetch("https://example.com/" + path)`,
		"// see https://example.com and //example.com for details\nfetch(`https://example.com/${p}`)",
		`fetch("https://example.com", {headers: {from: "me@corp.example"}})`,
		`<a href="https://example.com/?a=1&amp;b=2">x</a>`,
		`fetch("https://example.com/a\u002fb")`,
	} {
		r := newRouter(t, &stubProvider{name: "C"}, nil)
		p, err := r.Plan(ctx, fmt.Sprintf("control-%d", i), code)
		require.NoError(t, err, "code %q", code)
		assert.Equal(t, route.Cloud, p.Route, "code %q: urls %q", code, ScanURLs(code))
	}
}

// literalClassInputs are classes of literals Chromium resolves that a
// scanner looking only for "scheme://host/" misses, through Router.Plan:
// each must be blocked (metadata) or routed local (private).
var literalClassInputs = []struct {
	class, code string
	metadata    bool // blocked with ErrMetadata; otherwise routed local
}{
	// Scheme-relative hosts without a path or port, and "//" spelled with
	// backslashes, in strings and attributes.
	{"scheme-relative", `fetch("//2130706433")`, false}, // the plain form, as a control
	{"scheme-relative", `fetch("//127.1")`, false},
	{"scheme-relative", `<img src="\\169.254.169.254/latest/meta-data/">`, true},
	{"scheme-relative", `<img src="/\169.254.169.254">`, true},
	{"scheme-relative", `{"url":"\/\/10.0.0.1"}`, false},
	// \u{…} with any number of leading zeros.
	{"braced escape", `fetch("http://evil.example\u{0000000040}127.0.0.1/")`, false},
	{"braced escape", `fetch("http://\u{0000000031}69.254.169.254/latest")`, true},
	// Character references without ';', zero-padded, named.
	{"character reference", `<iframe src="http://localhost&#0000000058;3000">`, false},
	{"character reference", `<a href="http://evil.example&#64metadata.google.internal/">`, true},
	{"character reference", `<a href="&sol;&sol;169.254.169.254/">`, true},
	// Inside the scheme name, in any source form.
	{"spelled scheme", `fetch("\x68ttp://169.254.169.254/")`, true},
	{"spelled scheme", `fetch("ht\ttp://169.254.169.254/")`, true},
	{"spelled scheme", `<a href="ht&Tab;tp://10.1/">`, false},
	{"spelled scheme", `<a href="http&colon;//10.1">`, false},
	// data: documents name their own subresources.
	{"data:", `page.goto("data:text/html;base64,` + base64.StdEncoding.EncodeToString([]byte(`<img src="http://169.254.169.254/latest/meta-data/">`)) + `")`, true},
	{"data:", `page.goto("data:text/html;base64,` + base64.StdEncoding.EncodeToString([]byte(`<iframe src="http://127.0.0.1/"></iframe>`)) + `")`, false},
	{"data:", `<iframe src="data:text/html,` + url.PathEscape(`<script src="http://127.0.0.1:8080/app.js"></script>`) + `">`, false},
}

func TestLiteralClassesThroughPlan(t *testing.T) {
	ctx := context.Background()
	for i, tc := range literalClassInputs {
		t.Run(fmt.Sprintf("%s/%d", tc.class, i), func(t *testing.T) {
			r := newRouter(t, &stubProvider{name: "C"}, nil)
			p, err := r.Plan(ctx, fmt.Sprintf("class-%d", i), tc.code)
			if tc.metadata {
				require.Error(t, err, "code %q: urls %q", tc.code, ScanURLs(tc.code))
				assert.ErrorIs(t, err, netpolicy.ErrMetadata)
				return
			}
			require.NoError(t, err, "code %q", tc.code)
			assert.Equal(t, route.Local, p.Route, "code %q: urls %q", tc.code, ScanURLs(tc.code))
		})
	}
}

// TestDataURLsThroughNavigate: Navigate takes its URL as the literal, and
// a data: URL's document is planned like code, before any browser runs.
func TestDataURLsThroughNavigate(t *testing.T) {
	ctx := context.Background()
	r := newRouter(t, &stubProvider{name: "C"}, nil)
	meta := "data:text/html;base64," + base64.StdEncoding.EncodeToString([]byte(`<img src="http://169.254.169.254/">`))
	_, err := r.Navigate(ctx, "nav", meta, nil)
	require.Error(t, err)
	assert.ErrorIs(t, err, netpolicy.ErrMetadata)

	_, err = r.Navigate(ctx, "nav", "data:text/html;base64,@@@", nil)
	require.Error(t, err, "an undecodable data: URL fails closed")
	assert.ErrorIs(t, err, netpolicy.ErrInvalidURL)

	// The plan the navigation runs on: the data: URL has no route of its
	// own, the loopback URL inside it sends the call local.
	p, err := r.plan(ctx, "nav", []string{"data:text/html," + url.PathEscape(`<img src="http://127.0.0.1/">`)}, true)
	require.NoError(t, err)
	assert.Equal(t, route.Local, p.Route)
	require.Len(t, p.Verdicts, 2)
	assert.Equal(t, netpolicy.ClassNoRoute, p.Verdicts[0].Class)
	assert.Equal(t, netpolicy.ClassPrivate, p.Verdicts[1].Class)
}
