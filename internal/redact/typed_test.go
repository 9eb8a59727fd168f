package redact

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestTypedFindsTheCommonEncodings: a typed secret is found as typed,
// URL-escaped (three ways), JSON- and HTML-escaped, in hex of either case,
// and in base64 whole or inside a longer encoded text at every offset.
func TestTypedFindsTheCommonEncodings(t *testing.T) {
	const v = `hunter2 "&<é>/+=?`
	s := Typed(v)
	j, _ := json.Marshal(v)
	texts := []string{
		"a " + v + " b",
		"q=" + url.QueryEscape(v),
		"p/" + url.PathEscape(v),
		"c=" + strings.ReplaceAll(url.QueryEscape(v), "+", "%20"),
		string(j),
		"h " + hex.EncodeToString([]byte(v)),
		"H " + strings.ToUpper(hex.EncodeToString([]byte(v))),
		"b " + base64.StdEncoding.EncodeToString([]byte(v)),
		"u " + base64.RawURLEncoding.EncodeToString([]byte(v)),
		"<b>" + strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(v) + "</b>",
		`<input value="` + strings.NewReplacer("&", "&amp;", `"`, "&quot;").Replace(v) + `">`,
	}
	texts = append(texts, "btoa "+base64.StdEncoding.EncodeToString([]byte("hunter2 \"&<\xe9>/+=?")))
	for _, prefix := range []string{"", "u:", "us:", "use:", "user:"} {
		texts = append(texts, "Basic "+base64.StdEncoding.EncodeToString([]byte(prefix+v+"!tail")))
	}
	for _, text := range texts {
		got := s.Scrub(text)
		assert.Contains(t, got, Redacted, text)
		assert.NotContains(t, got, v, text)
		assert.NotContains(t, got, hex.EncodeToString([]byte(v)), text)
	}
	assert.Equal(t, "nothing here", s.Scrub("nothing here"))
	assert.Empty(t, Typed("abc").pairs, "a value under four bytes is no secret")
}

// TestScrubCutFindsAHalfValue: a value cut short by a bound, before its
// mark, is replaced too; a short common start is not.
func TestScrubCutFindsAHalfValue(t *testing.T) {
	s := Typed("s3cret-pa55word")
	assert.Equal(t, `"typed REDACTED…" and REDACTED`, s.ScrubCut(`"typed s3cret-pa…" and s3cret-pa55word`, CutMarks...))
	assert.Equal(t, `"REDACTED [result cut at 9 of 20 bytes`, s.ScrubCut(`"s3cret-pa [result cut at 9 of 20 bytes`, CutMarks...))
	assert.Equal(t, "a s3c… b", s.ScrubCut("a s3c… b", CutMarks...), "three bytes are no secret")
	assert.Equal(t, "nothing… here", s.ScrubCut("nothing… here", CutMarks...))
}
