package urlscan

import (
	"encoding/base64"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// pct percent-encodes every byte of s that is not a letter or digit, as a
// payload in a data: URL can be written.
func pct(s string) string { return url.PathEscape(s) }

func utf16LE(s string) string {
	b := []byte{0xff, 0xfe}
	for _, u := range utf16.Encode([]rune(s)) {
		b = append(b, byte(u), byte(u>>8))
	}
	return string(b)
}

// nest wraps html in n data: URLs, each in an iframe of the one around it.
func nest(html string, n int) string {
	u := "data:text/html;base64," + b64(html)
	for i := 1; i < n; i++ {
		u = "data:text/html;base64," + b64(`<iframe src="`+u+`"></iframe>`)
	}
	return u
}

type dataCase struct {
	rule string
	code string
	want []string // what ExpandData(Scan(code)) holds besides the data: URLs
}

var metaHTML = `<img src="http://169.254.169.254/latest/meta-data/">`

var dataCases = []dataCase{
	{rule: "base64 HTML payload", code: `page.goto("data:text/html;base64,` + b64(metaHTML) + `")`, want: []string{"http://169.254.169.254/latest/meta-data/"}},
	{rule: "percent-encoded payload", code: `<iframe src="data:text/html,` + pct(`<script src="http://127.0.0.1:8080/x.js"></script>`) + `">`, want: []string{"http://127.0.0.1:8080/x.js"}},
	{rule: "percent-encoded base64 payload and header", code: `"data:text/html%3Bbase64,` + strings.ReplaceAll(b64(metaHTML), "=", "%3D") + `"`, want: []string{"http://169.254.169.254/latest/meta-data/"}},
	{rule: "base64 with spaces and no padding", code: `"data:image/svg+xml;BASE64 ,` + strings.TrimRight(b64(`<svg><image href="//10.0.0.1/a.png"/></svg>`), "=") + `"`, want: []string{"http://10.0.0.1/a.png"}},
	{rule: "data: URL inside a data: URL", code: `"` + nest(metaHTML, 3) + `"`, want: []string{"http://169.254.169.254/latest/meta-data/"}},
	{rule: "nested as deep as the bound", code: `"` + nest(metaHTML, maxDataDepth) + `"`, want: []string{"http://169.254.169.254/latest/meta-data/"}},
	{rule: "nested past the bound fails closed", code: `"` + nest(metaHTML, maxDataDepth+1) + `"`, want: []string{dataTooDeep}},
	{rule: "undecodable base64 fails closed", code: `"data:text/html;base64,PGltZyBz@@@"`, want: []string{dataUnreadable}},
	{rule: "UTF-16 payload with a byte-order mark", code: `"data:text/html;base64,` + b64(utf16LE(metaHTML)) + `"`, want: []string{"http://169.254.169.254/latest/meta-data/"}},
	{rule: "ISO-2022-JP escapes inside the scheme", code: `"data:text/html;charset=iso-2022-jp;base64,` + b64("<img src=\"ht\x1b(Btp://169.254.169.254/\">") + `"`, want: []string{"http://169.254.169.254/"}},
	{rule: "JS escapes in the data: URL are decoded first", code: `fetch("data:text/html;base64\x2c` + b64(metaHTML) + `")`, want: []string{"http://169.254.169.254/latest/meta-data/"}},
	{rule: "HTML references in the attribute are decoded first", code: `<iframe src="data:text/html,&lt;img src=&quot;http&colon;//10.0.0.1/&quot;&gt;">`, want: []string{"http://10.0.0.1/", "http://10.0.0.1/&quot;&gt"}},
	{rule: "unquoted data: URL ends at a space", code: `see data:text/html;base64,` + b64(metaHTML) + ` for the payload.`, want: []string{"http://169.254.169.254/latest/meta-data/"}},
	{rule: "a placeholder ends a base64 payload, which still decodes", code: "img.src = `data:text/html;base64," + b64(metaHTML+"  ") + "${rest}`", want: []string{"http://169.254.169.254/latest/meta-data/"}},
	{rule: "a payload that is all placeholder decodes to nothing", code: "img.src = `data:image/png;base64,${b64}`; f\"data:image/png;base64,{png}\"; \"data:image/png;base64,\" + s", want: nil},
	{rule: "UTF-16 readings are for documents, not raster images", code: `"data:image/png;base64,` + b64(utf16LE(metaHTML)) + `"`, want: nil},
	{rule: "an image payload names nothing", code: `<img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==">`, want: nil},
	{rule: "a data: URL without a comma loads nothing", code: `x = "data:text/html"; y = {data: 1}`, want: nil},
}

func TestExpandData(t *testing.T) {
	for _, tc := range dataCases {
		t.Run(tc.rule, func(t *testing.T) {
			lits := Scan(tc.code)
			got := ExpandData(lits)
			var inner []string
			hasData := false
			for _, u := range got {
				if strings.HasPrefix(u, "data:") {
					hasData = true
					continue
				}
				inner = append(inner, u)
			}
			if tc.want != nil {
				require.True(t, hasData, "no data: literal in %q", lits)
			}
			assert.Equal(t, tc.want, inner, "literals %q", lits)
		})
	}
}

func TestExpandDataOfARawURL(t *testing.T) {
	// Navigate hands the URL over as it is: no source escapes, but the
	// browser's own trimming and tab removal.
	for _, u := range []string{
		"data:text/html;base64," + b64(metaHTML),
		"  DATA:text/html," + pct(metaHTML),
		"da\tta:text/html," + pct(metaHTML),
	} {
		got := ExpandData([]string{u})
		assert.Equal(t, []string{u, "http://169.254.169.254/latest/meta-data/"}, got, "url %q", u)
	}
}

func TestExpandDataWithoutDataAllocatesNothing(t *testing.T) {
	urls := []string{"http://localhost:3000/", "https://example.com/"}
	allocs := testing.AllocsPerRun(100, func() { _ = ExpandData(urls) })
	assert.Equal(t, 0.0, allocs)
	assert.Equal(t, urls, ExpandData(urls))
}

func TestDataURLTooLargeFailsClosed(t *testing.T) {
	code := `"data:text/html,` + strings.Repeat("a", maxData+1) + `"`
	assert.Equal(t, []string{dataTooLarge}, Scan(code))
	// What ExpandData decodes in one list is bounded as well.
	big := "data:text/html," + strings.Repeat("a", maxDataBytes/4)
	urls := []string{big + "1", big + "2", big + "3", big + "4", big + "5"}
	assert.Contains(t, ExpandData(urls), dataTooLarge)
}

// TestExpandDataOnHostileInput checks allocations, not time: ExpandData of
// what a megabyte of hostile data: fragments scans to costs a bounded
// amount per input byte (the scan itself is in hostileUnits).
func TestExpandDataOnHostileInput(t *testing.T) {
	if testing.Short() {
		t.Skip("hostile megabyte inputs")
	}
	const big = 1 << 20
	for _, unit := range hostileDataUnits {
		lits := Scan(hostileInput(unit, big))
		require.NotEmpty(t, lits, "unit %q", unit)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got := ExpandData(lits)
		runtime.ReadMemStats(&after)
		require.NotEmpty(t, got)
		assert.LessOrEqual(t, after.TotalAlloc-before.TotalAlloc, uint64(64*big), "unit %q: bytes allocated", unit)
	}
}
