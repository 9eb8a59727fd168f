package urlscan

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/whatwg"
)

type scanCase struct {
	rule string
	code string
	want []string
}

var scanCases = []scanCase{
	// Schemes and case.
	{rule: "plain http URL in double quotes", code: `fetch("http://localhost:3000/api")`, want: []string{"http://localhost:3000/api"}},
	{rule: "https, ws, wss", code: `a("https://example.com/x"); new WebSocket('ws://127.0.0.1:9222/devtools'); b('wss://h.example/s')`, want: []string{"https://example.com/x", "ws://127.0.0.1:9222/devtools", "wss://h.example/s"}},
	{rule: "upper-case scheme is lower-cased", code: `page.goto("HTTP://LOCALHOST:8080/")`, want: []string{"http://LOCALHOST:8080/"}},
	{rule: "mixed-case scheme is lower-cased", code: `x = 'hTtPs://example.com'`, want: []string{"https://example.com"}},
	{rule: "refused schemes are still reported", code: `open("file:///etc/passwd"); go('ftp://files.example/x'); nav("chrome://settings"); nav('chrome-untrusted://terminal/'); nav("devtools://devtools/bundled/inspector.html")`, want: []string{"file:///etc/passwd", "ftp://files.example/x", "chrome://settings", "chrome-untrusted://terminal/", "devtools://devtools/bundled/inspector.html"}},
	{rule: "view-source is reported with the URL inside", code: `page.goto("view-source:http://localhost:3000/")`, want: []string{"view-source:http://localhost:3000/", "http://localhost:3000/"}},
	{rule: "file with one slash is file:///", code: `f("file:/etc/hosts")`, want: []string{"file:///etc/hosts"}},
	{rule: "javascript:, blob:, mailto: are not reported", code: `a.href = "javascript:alert(1)"; x = "blob:null/abc"; m = "mailto:ops@example.com"`, want: nil},
	{rule: "data: is reported whole, for its payload to be read", code: `img.src = "data:text/html,<b>x</b>"; a = {data: x, metadata: "y"}`, want: []string{"data:text/html,<b>x</b>"}},
	{rule: "http URL inside blob: is found", code: `URL.revokeObjectURL("blob:https://app.example/3f2a-11")`, want: []string{"https://app.example/3f2a-11"}},

	// Slash runs.
	{rule: "no slashes before a host", code: `goto("http:localhost:3000")`, want: []string{"http://localhost:3000"}},
	{rule: "backslashes as slashes", code: `goto("http:\\127.0.0.1/")`, want: []string{"http://127.0.0.1/"}},
	{rule: "mixed slash run", code: `goto("http:/\localhost")`, want: []string{"http://localhost"}},
	{rule: "three slashes fold to two", code: `goto("https:///example.com")`, want: []string{"https://example.com"}},
	{rule: "JSON-escaped slashes", code: `{"url":"http:\/\/localhost:3000\/api"}`, want: []string{"http://localhost:3000/api"}},
	{rule: "unicode-escaped slashes", code: `s = "http:\u002f\u002f127.0.0.1/x"`, want: []string{"http://127.0.0.1/x"}},
	{rule: "doubled backslashes in a string literal", code: `s = "http:\\\\host.internal\\/x"`, want: []string{"http://host.internal/x"}},
	{rule: "regex-escaped dots are unescaped (and the cut reading kept)", code: `re = 'https://go\.example\.com'`, want: []string{"https://go.example.com", "https://go"}},
	{rule: "escaped dot after a private IP keeps the IP reading", code: `page.goto("http://169.254.169.254\.nip.io/")`, want: []string{"http://169.254.169.254.nip.io/", "http://169.254.169.254"}},
	{rule: "escaped dot only in the path is one URL", code: `r = /http:\/\/localhost\/a\.js/`, want: []string{"http://localhost/a.js/"}},
	{rule: "backslash that is not an escape ends the URL", code: `print("http://localhost\\next")`, want: []string{"http://localhost"}},
	// Chromium strips the newline from "http://localhost\nnext", so the
	// joined reading is reported next to the one cut at the escape.
	{rule: "escaped newline in the host: cut and joined readings", code: `print("http://localhost\nnext")`, want: []string{"http://localhost", "http://localhostnext"}},

	// Placeholders.
	{rule: "template literal port placeholder", code: "fetch(`http://localhost:${port}/api`)", want: []string{"http://localhost"}},
	{rule: "f-string port placeholder", code: `f"http://127.0.0.1:{port}"`, want: []string{"http://127.0.0.1"}},
	{rule: "placeholder in the path cuts the path", code: "fetch(`https://api.example.com/users/${id}/orders`)", want: []string{"https://api.example.com/users/"}},
	{rule: "placeholder host is skipped", code: `f"http://{host}/x"; t = ` + "`https://${domain}/y`" + `; j = "http://{{ host }}/z"; e = "http://<%= host %>/"`, want: nil},
	{rule: "partly-placeholder host is skipped", code: "u = `http://api.${region}.example.com/`", want: nil},
	{rule: "shell variable host skipped, shell variable port cut", code: `curl http://$HOST:8080/x; curl "http://localhost:$PORT/y"`, want: []string{"http://localhost"}},
	{rule: "printf verbs are placeholders", code: `fmt.Sprintf("http://%s:%d/", h, p); fmt.Sprintf("http://localhost:%d/x", p)`, want: []string{"http://localhost"}},
	{rule: "percent-escapes are not placeholders", code: `go("http://127%2E0.0.1/a%20b")`, want: []string{"http://127%2E0.0.1/a%20b"}},
	{rule: "placeholder userinfo keeps the literal host", code: "u = `http://${user}:${pass}@localhost:5000/`", want: []string{"http://localhost:5000/"}},
	{rule: "placeholder port inside IPv6 URL", code: `f"http://[::1]:{port}/"`, want: []string{"http://[::1]"}},

	// Bare host:port.
	{rule: "bare localhost:port", code: `proxy: "localhost:3000"`, want: []string{"http://localhost:3000"}},
	{rule: "bare *.localhost:port", code: `vite at foo.localhost:5173/app`, want: []string{"http://foo.localhost:5173/app"}},
	{rule: "bare IPv4:port", code: `addr := "127.0.0.1:8080"; bind("0.0.0.0:8000"); lan = '192.168.1.9:80'`, want: []string{"http://127.0.0.1:8080", "http://0.0.0.0:8000", "http://192.168.1.9:80"}},
	{rule: "bare bracketed IPv6:port", code: `listen("[::1]:8080"); peer = "[fe80::1]:80"`, want: []string{"http://[::1]:8080", "http://[fe80::1]:80"}},
	{rule: "names, times, slices and short dotted numbers are not hosts", code: `{a:1, foo:80} at 12:30:45; v = x[1:3]; r = 1.2:3; s = arr[::1]; mylocalhost:80; 1.2.3.4.5:80`, want: nil},
	{rule: "port of a reported URL is not reported again", code: `"http://127.0.0.1:8080/x"`, want: []string{"http://127.0.0.1:8080/x"}},
	{rule: "bare host:port in another scheme fails closed", code: `redis://localhost:6379/0`, want: []string{"http://localhost:6379/0"}},

	// Trimming.
	{rule: "trailing punctuation trimmed", code: `see http://localhost:3000/docs. Or http://127.0.0.1/x, or http://[::1]/; then http://a.example/!? (http://b.example/) [http://c.example] {u: http://d.example} <http://e.example>* http://f.example:`, want: []string{"http://localhost:3000/docs", "http://127.0.0.1/x", "http://[::1]/", "http://a.example/", "http://b.example/", "http://c.example", "http://d.example", "http://e.example", "http://f.example"}},
	{rule: "balanced parenthesis kept", code: `(see https://en.wikipedia.org/wiki/Foo_(bar)).`, want: []string{"https://en.wikipedia.org/wiki/Foo_(bar)"}},
	{rule: "token ends at quotes, backtick, angle brackets and whitespace", code: "a='http://a.example'b\"http://b.example\"c`http://c.example`<http://d.example>\thttp://e.example\nhttp://f.example", want: []string{"http://a.example", "http://b.example", "http://c.example", "http://d.example", "http://e.example", "http://f.example"}},

	// Must not be fooled into missing.
	{rule: "adjacent quotes", code: `"'http://127.0.0.1/'"`, want: []string{"http://127.0.0.1/"}},
	{rule: "adjacent backslashes", code: `\http://127.0.0.1/\`, want: []string{"http://127.0.0.1/"}},
	{rule: "adjacent parentheses", code: `(http://127.0.0.1/)`, want: []string{"http://127.0.0.1/"}},
	{rule: "after =", code: `url=http://127.0.0.1/`, want: []string{"http://127.0.0.1/"}},
	{rule: "after a // comment", code: `//http://localhost:3000`, want: []string{"http://localhost:3000"}},
	{rule: "after #", code: `#http://localhost`, want: []string{"http://localhost"}},
	{rule: "at the very start and end", code: `http://localhost`, want: []string{"http://localhost"}},
	{rule: "glued to a preceding identifier", code: `xhttp://localhost`, want: []string{"http://localhost"}},
	{rule: "glued after an escape letter, no slashes", code: `"a\nhttp:localhost"`, want: []string{"http://localhost"}},
	{rule: "glued without slashes is an identifier", code: `{useHttp:true, news:item}`, want: nil},
	{rule: "string concatenation: empty http:// is not reported", code: `"http://" + "localhost"`, want: nil},
	{rule: "URL in the query of another URL", code: `https://example.com/r?next=http://localhost:8080/admin`, want: []string{"https://example.com/r?next=http://localhost:8080/admin", "http://localhost:8080/admin"}},
	{rule: "userinfo does not hide the host", code: `"http://user:pw@127.0.0.1/"`, want: []string{"http://user:pw@127.0.0.1/"}},

	// A placeholder right after a complete literal host: the host is reported.
	{rule: "template placeholder right after an IPv4 host", code: "fetch(`http://169.254.169.254${path}`)", want: []string{"http://169.254.169.254"}},
	{rule: "template placeholder after a host, in double quotes", code: `fetch("http://169.254.169.254${path}")`, want: []string{"http://169.254.169.254"}},
	{rule: "f-string placeholder right after the host", code: `requests.get(f"http://127.0.0.1{path}")`, want: []string{"http://127.0.0.1"}},
	{rule: "printf verb right after the host", code: `fetch("http://localhost%s" % p)`, want: []string{"http://localhost"}},
	{rule: "concatenated port after a host", code: `"http://localhost:" + port`, want: []string{"http://localhost"}},
	{rule: "placeholder starting the host still reports nothing", code: `f"http://{host}/x"`, want: nil},
	{rule: "mid-host placeholder after a dot reports nothing", code: "u = `http://api.${domain}/`; v = `http://api-${n}.example.com`", want: nil},
	{rule: "mid-host placeholder in an address reports the numeric prefix", code: `f"http://127.0.0.{n}/"`, want: []string{"http://127.0.0"}},
	{rule: "placeholder glued to a label reports the label", code: "`http://api${n}.example.com/`", want: []string{"http://api"}},

	// Escapes inside the URL: a URL is reported as the source decodes it.
	{rule: "unicode-escaped @ in the authority", code: `fetch("http://evil.example\u0040169.254.169.254/latest")`, want: []string{"http://evil.example@169.254.169.254/latest"}},
	{rule: "hex-escaped digits in the host", code: `fetch("http://\x31\x36\x39.254.169.254/")`, want: []string{"http://169.254.169.254/"}},
	{rule: "unicode-escaped dots in the host", code: `x = http://127\u002e0\u002e0\u002e1`, want: []string{"http://127.0.0.1"}},
	{rule: "braced unicode escape and hex-escaped dot", code: `a("http://a\u{40}127.0.0.1/"); b("http://127\x2e0.0.1")`, want: []string{"http://a@127.0.0.1/", "http://127.0.0.1"}},
	{rule: "long and octal escapes", code: `s = "http://a\U00000040localhost/"; t = "http://b\100localhost/"`, want: []string{"http://a@localhost/", "http://b@localhost/"}},
	{rule: "identity escape of a letter: both readings", code: `goto("http://instance-dat\a/")`, want: []string{"http://instance-data/", "http://instance-dat"}},
	{rule: "HTML numeric reference for ':' in an attribute", code: `<iframe src="http://localhost&#58;3000">`, want: []string{"http://localhost:3000"}},
	{rule: "HTML hex and named references in the authority", code: `<a href="http://evil&commat;127&period;0.0.1&#x3a;80/">x</a> <a href="http://a&#64;169.254.169.254&#46;/">y</a> <img src="http://localhost&colon;8080/p?a=1&amp;b=2">`, want: []string{"http://evil@127.0.0.1:80/", "http://a@169.254.169.254./", "http://localhost:8080/p?a=1&amp;b=2"}},
	{rule: "HTML references for the slashes", code: `<a href="http:&#47;&#47;169.254.169.254/">`, want: []string{"http://169.254.169.254/"}},
	{rule: "escaped quotes around a URL in a string are a clean end", code: `s = "<a href=\"http://localhost:3000\">"; j = "{\"url\":\"http://localhost:4000\",\"x\":1}"`, want: []string{"http://localhost:3000", "http://localhost:4000"}},

	// Userinfo that a browser would read differently: every reading is reported.
	{rule: "raw tab before the @ of a userinfo", code: "fetch(`http://a\t@169.254.169.254/`)", want: []string{"http://a", "http://a@169.254.169.254/", "http://169.254.169.254/"}},
	{rule: "space inside a userinfo", code: `fetch("http://a b@169.254.169.254/")`, want: []string{"http://a", "http://169.254.169.254/"}},
	{rule: "escaped quote inside a userinfo", code: `u = "http://a\"b@127.0.0.1"`, want: []string{"http://a", "http://127.0.0.1"}},
	{rule: "other quote inside a userinfo", code: `u = 'http://a"b@127.0.0.1/'`, want: []string{"http://a", "http://127.0.0.1/"}},
	{rule: "angle bracket inside a userinfo", code: `http://a<b@127.0.0.1/`, want: []string{"http://a", "http://127.0.0.1/"}},
	{rule: "raw tab inside the host", code: "goto(\"http://metadata.google\t.internal/\")", want: []string{"http://metadata.google", "http://metadata.google.internal/"}},
	{rule: "escaped tab inside the host", code: `goto("http://metadata.google\t.internal/")`, want: []string{"http://metadata.google", "http://metadata.google.internal/"}},
	{rule: "a closing quote is a clean end: no look-ahead past it", code: `fetch("http://localhost:3000", {headers: {from: "me@corp.example"}})`, want: []string{"http://localhost:3000"}},
	{rule: "unquoted whitespace is a clean end", code: "see http://example.com or mail me@corp.example\nhttp://a.example\tb@127.0.0.1", want: []string{"http://example.com", "http://a.example"}},
	{rule: "joined reading Chromium refuses is dropped", code: "s = `http://localhost:3000\nOK`", want: []string{"http://localhost:3000"}},

	// Scheme-relative URLs: they take the page's scheme, so they reach hosts too.
	{rule: "scheme-relative metadata address", code: `fetch("//169.254.169.254/latest/meta-data/")`, want: []string{"http://169.254.169.254/latest/meta-data/"}},
	{rule: "scheme-relative localhost with port", code: `<img src="//localhost:3000/x">`, want: []string{"http://localhost:3000/x"}},
	{rule: "scheme-relative IPv6 literal", code: `u = '//[::1]:8080/'`, want: []string{"http://[::1]:8080/"}},
	{rule: "scheme-relative numeric IPv4 forms and metadata names", code: `a("//0x7f.1/"); b("//2130706433"); c("//metadata.google.internal/computeMetadata/v1/"); d("//app.localhost/")`, want: []string{"http://0x7f.1/", "http://2130706433", "http://metadata.google.internal/computeMetadata/v1/", "http://app.localhost/"}},
	{rule: "comments and public scheme-relative names in comments are not reported", code: "// comment text\n//example.com\nx = 1 //1.5 seconds\ny = n //2\n/// doc", want: nil},
	{rule: "a scheme-relative name in a string is reported", code: "x = '//cdn.example.com/a.js' //1.5 seconds", want: []string{"http://cdn.example.com/a.js"}},
	{rule: "slash runs after a scheme are not scheme-relative", code: `file:///169.254.169.254/x`, want: []string{"file:///169.254.169.254/x"}},

	// The length cap: a long token must not hide the host after it.
	{rule: "userinfo longer than the cap still finds the host", code: "http://" + strings.Repeat("a", 5000) + "@169.254.169.254/", want: []string{"http://" + strings.Repeat("a", maxToken), "http://169.254.169.254/"}},
	{rule: "authority longer than the cap is reported unparseable", code: `"http://` + strings.Repeat("a", 5000) + `"`, want: []string{"http://" + strings.Repeat("a", maxToken), "http://" + strings.Repeat("a", maxToken) + ":truncated-authority"}},

	// Found by fuzzing: the outer authority "http:" has an empty port, so
	// the colon inside it that a slash follows still starts a URL.
	{rule: "slashless scheme before a full URL", code: `"http:http://127.0.0.1/"`, want: []string{"http://http://127.0.0.1/", "http://127.0.0.1/"}},
	{rule: "slashless schemes inside one authority are read once", code: `"http:http:http:127.0.0.1"`, want: []string{"http://http:http:127.0.0.1"}},

	// Classes of literals Chromium resolves that a scanner looking only for
	// "scheme://host/" misses. 1: scheme-relative hosts without a path or port,
	// and the backslash spellings of "//", in strings and attributes.
	{rule: "scheme-relative short IPv4 form in a string", code: `fetch("//127.1"); g('//10.1')`, want: []string{"http://127.1", "http://10.1"}},
	{rule: "scheme-relative name in a string or attribute", code: `fetch('//intranet'); <img src="//db.corp.internal">`, want: []string{"http://intranet", "http://db.corp.internal"}},
	{rule: "scheme-relative unquoted attribute and CSS url()", code: `<img src=//intranet/x.png> div { background: url(//10.1/a.png) }`, want: []string{"http://intranet/x.png", "http://10.1/a.png"}},
	{rule: "two backslashes in an attribute", code: `<img src="\\169.254.169.254/latest">`, want: []string{"http://169.254.169.254/latest"}},
	{rule: "slash and backslash, both orders", code: `<img src="/\169.254.169.254"><img src='\/127.1'>`, want: []string{"http://169.254.169.254", "http://127.1"}},
	{rule: "JSON-escaped scheme-relative URL", code: `{"u":"\/\/10.0.0.1"}`, want: []string{"http://10.0.0.1"}},
	{rule: "escaped backslashes in a JS string", code: `fetch("\\\\169.254.169.254/")`, want: []string{"http://169.254.169.254/"}},
	{rule: "named and numeric references for the slashes", code: `<img src="&sol;&sol;127.1"><img src="&#47;&#x2F;10.1">`, want: []string{"http://127.1", "http://10.1"}},
	{rule: "escape-spelled slashes in a string", code: `fetch("\x2f\u002f169.254.169.254")`, want: []string{"http://169.254.169.254"}},
	{rule: "backslash before an octal-looking host", code: `<img src="\\127.0.0.1/"><a href="http:\127.0.0.1/">`, want: []string{"http://127.0.0.1/", "http://W.0.0.1/"}},

	// 2: \u{…} with any number of leading zeros.
	{rule: "zero-padded braced escape in the host", code: `fetch("http://\u{0000000031}27.0.0.1/")`, want: []string{"http://127.0.0.1/"}},
	{rule: "zero-padded braced escape for the @", code: `fetch("http://evil.example\u{00000000040}169.254.169.254/")`, want: []string{"http://evil.example@169.254.169.254/"}},
	{rule: "braced escape longer than the cap fails closed", code: `fetch("http://evil.example\u{` + strings.Repeat("0", 5000) + `40}169.254.169.254/")`, want: []string{"http://evil.example", "http://evil.example:truncated-authority"}},

	// 3: character references without ';', zero-padded, and named ones.
	{rule: "zero-padded numeric reference", code: `<a href="http://evil.example&#0000000064;169.254.169.254/">`, want: []string{"http://evil.example@169.254.169.254/"}},
	{rule: "numeric reference without the semicolon", code: `<a href="http://a&#64localhost/"><a href="http://b&#x40metadata/">`, want: []string{"http://a@localhost/", "http://b@metadata/"}},
	{rule: "named reference for the colon after the scheme", code: `<a href="http&colon;//intranet/"><a href="https&colon;10.0.0.1">`, want: []string{"http://intranet/", "https://10.0.0.1"}},
	{rule: "zero-padded reference for the colon, without ';'", code: `<a href="http&#0000000058//169.254.169.254/">`, want: []string{"http://169.254.169.254/"}},

	// 4: a tab, newline or character reference inside the scheme name.
	{rule: "hex escape inside the scheme name", code: `fetch("\x68ttp://10.0.0.1/")`, want: []string{"http://10.0.0.1/"}},
	{rule: "escaped tab inside the scheme name", code: `fetch("ht\ttp://169.254.169.254/")`, want: []string{"http://169.254.169.254/"}},
	{rule: "escaped newline and carriage return inside the scheme name", code: `fetch("ht\ntp://169.254.169.254/"); fetch("d\revtools://x/"); fetch("http\r://10.0.0.1/")`, want: []string{"http://169.254.169.254/", "devtools://x/", "http://10.0.0.1/"}},
	{rule: "raw tab and newline inside the scheme name", code: "fetch(`ht\ttp://169.254.169.254/`); <a href=\"ht\ntps://10.0.0.1/\">", want: []string{"http://169.254.169.254/", "https://10.0.0.1/"}},
	{rule: "spelled colon in a JS string", code: `fetch("http\u003a//169.254.169.254/"); fetch("https\x3a\/\/10.0.0.1")`, want: []string{"http://169.254.169.254/", "https://10.0.0.1"}},
	{rule: "zero-padded braced escape inside the scheme name", code: `fetch("ht\u{000000074}p://127.0.0.1/")`, want: []string{"http://127.0.0.1/"}},
	{rule: "character references inside the scheme name", code: `<a href="&#x68;ttp://169.254.169.254/"><a href="h&#116tps://10.0.0.1/"><a href="ht&Tab;tp://127.0.0.1/"><a href="ws&NewLine;s://[::1]/">`, want: []string{"http://169.254.169.254/", "https://10.0.0.1/", "http://127.0.0.1/", "wss://[::1]/"}},
	{rule: "tab between the scheme and its colon or slashes", code: `fetch("http\t://127.0.0.1/"); fetch("http:\t//10.0.0.1/")`, want: []string{"http://127.0.0.1/", "http://10.0.0.1/"}},
	{rule: "spelled scheme and spelled colon", code: `fetch("\x68ttp\u003a//169.254.169.254/"); <a href="ht&Tab;tps&colon;10.0.0.1">`, want: []string{"http://169.254.169.254/", "https://10.0.0.1"}},
	{rule: "spelled scheme without slashes", code: `fetch("\x68ttp:169.254.169.254")`, want: []string{"http://169.254.169.254"}},
	{rule: "plain identifiers before a colon stay unreported", code: `{name: 1, keys: 2, "data\x20": 3, type: "a"}; x = c ? d : e; case 0x7f: break`, want: nil},

	// Dedup and empties.
	{rule: "deduplicated in order of first appearance", code: `a("http://b.example"); a("http://a.example"); a("http://b.example"); a("HTTP://a.example")`, want: []string{"http://b.example", "http://a.example"}},
	{rule: "empty input", code: ``, want: nil},
	{rule: "no URL", code: `const x = { a: 1, b: "two" }; // nothing here: at all`, want: nil},
}

func TestScanURLsTable(t *testing.T) {
	for _, tc := range scanCases {
		t.Run(tc.rule, func(t *testing.T) {
			assert.Equal(t, tc.want, Scan(tc.code), "code: %s", tc.code)
		})
	}
}

func TestScanURLsReturnsSubstringsWhenUnchanged(t *testing.T) {
	for _, code := range []string{
		`fetch("http://localhost:3000/api")`,
		`<img src="data:image/png;base64,iVBORw0KGgo=">`,
	} {
		allocs := testing.AllocsPerRun(100, func() { _ = Scan(code) })
		assert.Equal(t, 1.0, allocs, "%s: only the result slice should be allocated", code)
	}
}

func TestScanURLsManyResultsDedup(t *testing.T) {
	var b strings.Builder
	var want []string
	for i := 0; i < 5000; i++ {
		u := "http://h" + string(rune('a'+i%26)) + ".example/" + strings.Repeat("x", i%40)
		b.WriteString(u + " ")
		want = append(want, u)
	}
	got := Scan(b.String())
	seen := map[string]bool{}
	var uniq []string
	for _, u := range want {
		if !seen[u] {
			seen[u] = true
			uniq = append(uniq, u)
		}
	}
	assert.Equal(t, uniq, got)
}

func TestScanURLsCorpus(t *testing.T) {
	code, err := os.ReadFile("../../testdata/scan-corpus.txt")
	require.NoError(t, err)
	wantText, err := os.ReadFile("../../testdata/scan-corpus.want.txt")
	require.NoError(t, err)
	want := strings.Split(strings.TrimSpace(string(wantText)), "\n")
	require.Greater(t, len(want), 100, "the corpus should plant many distinct URLs")
	assert.Equal(t, want, Scan(string(code)))
}

// hostOf is the host of a reported URL, enough for the metamorphic check.
func hostOf(u string) string {
	_, rest, ok := strings.Cut(u, "://")
	if !ok {
		return ""
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		rest = rest[i+1:]
	}
	if strings.HasPrefix(rest, "[") {
		if i := strings.IndexByte(rest, ']'); i >= 0 {
			return rest[:i+1]
		}
		return rest
	}
	if i := strings.LastIndexByte(rest, ':'); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

var scannedSchemes = []string{"http", "https", "ws", "wss", "ftp", "file", "chrome", "chrome-untrusted", "devtools"}

func checkScanInvariants(t *testing.T, code string) {
	got := Scan(code)
	seen := map[string]bool{}
	for _, u := range got {
		require.NotEmpty(t, u)
		require.False(t, seen[u], "duplicate %q", u)
		seen[u] = true
		ok := false
		if rest, vs := strings.CutPrefix(u, "view-source:"); vs {
			ok = rest != ""
		}
		if rest, data := strings.CutPrefix(u, "data:"); data {
			ok = strings.Contains(rest, ",")
		}
		for _, s := range scannedSchemes {
			if rest, has := strings.CutPrefix(u, s+"://"); has && rest != "" {
				ok = true
			}
		}
		require.True(t, ok, "result %q does not start with a lower-case scanned scheme and ://", u)
	}
	if !strings.Contains(code, "http://127.0.0.1/") {
		return
	}
	for _, w := range [][2]string{{`"`, `"`}, {`'`, `'`}, {`(`, `)`}, {"`", "`"}, {"// ", ""}, {`\`, `\`}, {"", ""}} {
		wrapped := w[0] + code + w[1]
		found := false
		for _, u := range Scan(wrapped) {
			if strings.HasPrefix(u, "http://") && hostOf(u) == "127.0.0.1" {
				found = true
				break
			}
		}
		require.True(t, found, "lost http://127.0.0.1 when wrapped in %q…%q: %q", w[0], w[1], wrapped)
	}
}

// Pieces of the differential property: a private or metadata URL planted
// in a code context, in any of the spellings Chromium reads, must come out
// with its host intact (or fail closed).
var (
	diffHosts = [][2]string{ // as written, as Chromium reads it
		{"127.0.0.1", "127.0.0.1"}, {"169.254.169.254", "169.254.169.254"},
		{"2130706433", "127.0.0.1"}, {"0xa9.0xfe.0xa9.0xfe", "169.254.169.254"},
	}
	diffPorts    = []string{"", ":8080", ":1", ":65535"}
	diffPaths    = []string{"", "/", "/latest/meta-data/", "/x?y=1#z", "?q", "#f", "/a\\/b"}
	diffContexts = [][2]string{
		{`fetch("`, `")`}, {`fetch('`, `')`}, {"fetch(`", "`)"}, {`(`, `)`},
		{`<a href="`, `">x</a>`}, {`<img src='`, `'>`}, {`requests.get(f"`, `{path}")`},
		{"fetch(`", "${path}`)"}, {`// see `, ` for details`}, {`url=`, `;`},
		{`{"u":"`, `","n":1}`}, {`curl -s `, ` | jq .`}, {``, ``}, {`"`, `" % p`},
	}
	// diffSpellings rewrite "http://…" as the source may spell it. inStr
	// says the context opens a string or an attribute value, where a
	// scheme-relative URL is one.
	diffSpellings = []func(u string, inStr bool) string{
		func(u string, _ bool) string { return u },
		// Inside the scheme name: escapes, references, tabs.
		func(u string, _ bool) string { return `\x68` + u[1:] },
		func(u string, _ bool) string { return `h\u{0000000074}` + u[2:] },
		func(u string, _ bool) string { return `ht\t` + u[2:] },
		func(u string, _ bool) string { return "ht\t" + u[2:] },
		func(u string, _ bool) string { return `ht\n` + u[2:] },
		func(u string, _ bool) string { return `h\T` + u[2:] },
		func(u string, _ bool) string { return `&#104;` + u[1:] },
		func(u string, _ bool) string { return `ht&Tab;` + u[2:] },
		// The colon.
		func(u string, _ bool) string { return `http&colon;` + u[5:] },
		func(u string, _ bool) string { return `http&#0000000058` + u[5:] },
		func(u string, _ bool) string { return `http\u003a` + u[5:] },
		func(u string, _ bool) string { return `\x68ttp\u003a` + u[5:] },
		// A host byte as a zero-padded braced escape.
		func(u string, _ bool) string {
			i := strings.LastIndexByte(u[:strings.IndexAny(u[7:]+"/", "/?#")+7], '@') + 1
			if i == 0 {
				i = 7
			}
			return u[:i] + fmt.Sprintf(`\u{00000000%x}`, u[i]) + u[i+1:]
		},
		// Scheme-relative, with "//" in the spellings Chromium folds.
		relSpelling("//"), relSpelling(`\\`), relSpelling(`/\`), relSpelling(`\/\/`), relSpelling(`&sol;&sol;`),
		// Inside a data: document.
		func(u string, _ bool) string { return "data:text/html;base64," + b64(`<img src="`+u+`">`) },
		func(u string, _ bool) string { return "data:text/html," + pct(`<iframe src="`+u+`"></iframe>`) },
	}
)

// relSpelling drops the scheme of a URL planted in a string and opens it
// with slashes; outside a string the URL stays as it is.
func relSpelling(slashes string) func(string, bool) string {
	return func(u string, inStr bool) string {
		if !inStr {
			return u
		}
		return slashes + u[len("http://"):]
	}
}

// diffURL builds the planted URL and its context from n and the fuzzed
// code, whose URL-safe bytes become the userinfo.
func diffURL(n uint64, code string) (host, input string) {
	pick := func(k int) int { v := int(n % uint64(k)); n /= uint64(k); return v }
	h := diffHosts[pick(len(diffHosts))]
	var user []byte
	for i := 0; i < len(code) && len(user) < 16; i++ {
		if b := code[i]; isLetter(b) || isDigit(b) || strings.IndexByte("-._~!*+,;=:", b) >= 0 {
			user = append(user, b)
		}
	}
	userinfo := ""
	switch pick(3) {
	case 1:
		userinfo = string(user) + "@"
	case 2:
		userinfo = "u:" + string(user) + "@"
	}
	u := "http://" + userinfo + h[0] + diffPorts[pick(len(diffPorts))] + diffPaths[pick(len(diffPaths))]
	ctx := diffContexts[pick(len(diffContexts))]
	last := ctx[0][max(0, len(ctx[0])-1):]
	inStr := last == `"` || last == "'" || last == "`" || last == "="
	u = diffSpellings[pick(len(diffSpellings))](u, inStr)
	return h[1], ctx[0] + u + ctx[1]
}

// diffCombinations is how many distinct plantings diffURL makes.
var diffCombinations = uint64(len(diffHosts) * 3 * len(diffPorts) * len(diffPaths) * len(diffContexts) * len(diffSpellings))

// checkPlantedHost fails unless the planted host comes out of the scan
// (and the data: expansion the router runs after it), or a reading that
// fails closed does.
func checkPlantedHost(t *testing.T, n uint64, code string) {
	host, input := diffURL(n, code)
	got := ExpandData(Scan(input))
	for _, u := range got {
		if p, err := whatwg.Parse(u); err == nil && p.Host == host {
			return
		}
	}
	t.Fatalf("planted host %s lost: input %q, reported %q", host, input, got)
}

func FuzzScanURLs(f *testing.F) {
	for i, tc := range scanCases {
		f.Add(tc.code, uint64(i)*7919)
	}
	f.Add("http://127.0.0.1/", uint64(0))
	f.Add(`x"http://127.0.0.1/\.(`, uint64(1))
	f.Add("http:http://127.0.0.1/", uint64(300969))
	f.Fuzz(func(t *testing.T, code string, n uint64) {
		checkScanInvariants(t, code)
		checkPlantedHost(t, n, code)
	})
}

// TestScanURLsPlantedHosts runs the differential property of the fuzz
// target over every combination once, so plain `go test` covers it.
func TestScanURLsPlantedHosts(t *testing.T) {
	for _, code := range []string{"", "user", "a:b", "x-y.z~"} {
		for n := uint64(0); n < diffCombinations; n++ {
			checkPlantedHost(t, n, code)
		}
	}
}

func BenchmarkScanURLs(b *testing.B) {
	corpus, err := os.ReadFile("../../testdata/scan-corpus.txt")
	if err != nil {
		b.Fatal(err)
	}
	inputs := []struct{ name, code string }{
		{"corpus-1MiB", string(corpus)},
		{"small-goto", `await page.goto("http://localhost:3000/dashboard", { waitUntil: "networkidle" });`},
		{"small-no-url", `const x = { a: 1, b: "two", c: cond ? d : e }; await page.click("#submit");`},
		{"small-normalised", "fetch(`HTTP:\\\\127.0.0.1:${port}/api`)"},
	}
	for _, in := range inputs {
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(in.code)))
			b.ReportAllocs()
			for b.Loop() {
				_ = Scan(in.code)
			}
		})
	}
}

// BenchmarkScanFloor is the cost of only visiting every colon of the corpus
// with strings.IndexByte, the floor under Scan: on a loaded machine
// compare BenchmarkScanURLs/corpus-1MiB against it, not against a constant.
func BenchmarkScanFloor(b *testing.B) {
	corpus, err := os.ReadFile("../../testdata/scan-corpus.txt")
	if err != nil {
		b.Fatal(err)
	}
	code := string(corpus)
	b.SetBytes(int64(len(code)))
	for b.Loop() {
		n := 0
		for i := 0; ; n++ {
			j := strings.IndexByte(code[i:], ':')
			if j < 0 {
				break
			}
			i += j + 1
		}
		if n == 0 {
			b.Fatal("no colons")
		}
	}
}

// hostileInputs are repetitions of short URL fragments with the quotes,
// tabs, spaces, escapes and missing terminators that make the scanner look
// ahead, join readings or hit its cap.
var hostileUnits = []string{
	"http://a",
	"\"http://a\t",
	"\"http://a b",
	"'http://a\"b",
	"`http://a\thttp:a\t",
	"\"http:a\\thttp:a\\t",
	"\"http://a&#9;",
	"//127.0.0.1",
	"http:",
	"http:/",
	"'http:\\/a",
	"\"http://a\\u0040",
	"\"\\u{0000",
	"\"&#0000",
	"\"ht\\ttp:",
	"\"//a",
	"\"\\/\\/a",
	"\\u{0068}ttp:",
	"http&colon;",
	"\t:",
	";:",
}

// hostileDataUnits are hostileUnits for data: URLs; ExpandData is checked
// on them as well.
var hostileDataUnits = []string{
	"data:,",
	"\"data:,",
	"data:text/html;base64,PGEg",
	"data:,data:,%3C",
	"\"data:,data:,\\\"",
}

func hostileInput(unit string, n int) string {
	return strings.Repeat(unit, n/len(unit)+1)[:n]
}

// hostileSizes are the two input sizes the cost checks compare: half a
// megabyte and a megabyte, or, under the race detector (tens of times
// slower here), a quarter and half a megabyte. Both pairs are past farLook
// and past the result count where dedup moves to a map, so the costs
// compared grow the same way; smaller inputs would compare two regimes.
func hostileSizes() (small, large int) {
	if raceEnabled {
		return 256 << 10, 512 << 10
	}
	return 512 << 10, 1 << 20
}

// scanCost is the allocations and bytes one Scan call on code costs.
func scanCost(code string) (allocs, bytes uint64) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_ = Scan(code)
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs, after.TotalAlloc - before.TotalAlloc
}

// TestScanURLsLinearOnHostileInput checks allocations, not time: twice as
// much hostile input must cost about twice as much, and a bounded amount
// per input byte.
func TestScanURLsLinearOnHostileInput(t *testing.T) {
	if testing.Short() {
		t.Skip("hostile megabyte inputs")
	}
	small, large := hostileSizes()
	_ = Scan(hostileInput(hostileUnits[0], 1<<10)) // one-time allocations out of the way
	for _, unit := range append(hostileUnits[:len(hostileUnits):len(hostileUnits)], hostileDataUnits...) {
		t.Run(fmt.Sprintf("%q", unit), func(t *testing.T) {
			aSmall, bSmall := scanCost(hostileInput(unit, small))
			aLarge, bLarge := scanCost(hostileInput(unit, large))
			t.Logf("%d B: %d allocs %d B; %d B: %d allocs %d B", small, aSmall, bSmall, large, aLarge, bLarge)
			assert.LessOrEqual(t, aLarge, uint64(large), "allocations per input byte")
			// The worst unit, "http:/", is one rebuilt reading (at most
			// maxRebuiltPath bytes of path) per six input bytes.
			assert.LessOrEqual(t, bLarge, uint64(128*large), "bytes allocated per input byte")
			assert.LessOrEqual(t, float64(aLarge), 2.5*float64(aSmall)+64, "allocations should grow linearly")
			assert.LessOrEqual(t, float64(bLarge), 2.5*float64(bSmall)+(64<<10), "bytes should grow linearly")
		})
	}
}
