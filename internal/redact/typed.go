package redact

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"html"
	"net/url"
	"strings"
)

// Typed lists the secrets vs, values a page was given (a password typed
// into a field), in every spelling a page or a log is likely to carry one
// in: as typed; URL-escaped as Go, as encodeURIComponent and as a form
// body escape it; JSON- and HTML-escaped; hex (either case, as Scrub
// ignores case); and base64 in the standard and URL alphabets, padded or
// not, both whole and as it reads inside a longer encoded text (btoa of
// "user:" + the password, a basic auth header), where it starts at any of
// three byte offsets. A value a script turned into anything else (spaced
// out, reversed, XORed) is not found: what a page's script may read is the
// caller's to refuse.
func Typed(vs ...string) Secrets {
	var s Secrets
	for _, v := range vs {
		if len(v) < minSecretLen {
			continue
		}
		for _, f := range typedSpellings(v) {
			s.add(f, Redacted)
		}
	}
	s.sort()
	return s
}

// typedSpellings are the spellings of Typed, each at least minSecretLen long.
func typedSpellings(v string) []string {
	out := []string{v, url.QueryEscape(v), url.PathEscape(v), escape(v, uriComponentKeeps, false), escape(v, formKeeps, true),
		quoted(v), html.EscapeString(v), htmlText.Replace(v), htmlAttr.Replace(v), hex.EncodeToString([]byte(v))}
	for _, html := range []bool{true, false} {
		var b strings.Builder
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(html)
		if e.Encode(v) == nil {
			j := strings.TrimSpace(b.String())
			out = append(out, j[1:len(j)-1])
		}
	}
	out = append(out, base64Forms([]byte(v))...)
	if l1, ok := latin1(v); ok {
		// btoa and a script's own hex write a character under U+0100 as
		// one byte.
		out = append(out, hex.EncodeToString(l1))
		out = append(out, base64Forms(l1)...)
	}
	kept := out[:0]
	for _, f := range out {
		if len(f) >= minSecretLen {
			kept = append(kept, f)
		}
	}
	return kept
}

// base64Forms are b in base64, standard and URL alphabets: whole, and the
// part of it that reads the same inside a longer encoded text.
func base64Forms(b []byte) []string {
	var out []string
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		out = append(out, enc.EncodeToString(b))
		raw := enc.WithPadding(base64.NoPadding)
		for k := range 3 {
			// The characters of base64(k bytes + b) that only b's bits
			// decide: from the first that starts at or after bit 8k, to
			// the last that ends at or before b's last bit.
			padded := make([]byte, k+len(b))
			copy(padded[k:], b)
			e := raw.EncodeToString(padded)
			from, to := (8*k+5)/6, 8*(k+len(b))/6
			if core := e[from:to]; len(core) >= 2*minSecretLen {
				out = append(out, core)
			}
		}
	}
	return out
}

// latin1 is v with each character as one byte, when v has a character
// past ASCII and none past U+00FF.
func latin1(v string) ([]byte, bool) {
	b := make([]byte, 0, len(v))
	wide := false
	for _, r := range v {
		if r > 0xFF {
			return nil, false
		}
		wide = wide || r > 0x7F
		b = append(b, byte(r))
	}
	return b, wide
}

// How a browser serialises text and attribute values in HTML (outerHTML,
// innerHTML).
var (
	htmlText = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "\u00a0", "&nbsp;")
	htmlAttr = strings.NewReplacer("&", "&amp;", `"`, "&quot;", "\u00a0", "&nbsp;")
)

// Bytes that encodeURIComponent and a form body (application/x-www-form-
// urlencoded, as a browser writes it) leave as they are, beside ASCII
// letters and digits.
const (
	uriComponentKeeps = "-_.!~*'()"
	formKeeps         = "*-._"
)

// escape percent-escapes every byte of v but ASCII letters, digits and
// keep, with upper-case hex; a space is "+" when plus is set.
func escape(v, keep string, plus bool) string {
	const digits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte(keep, c) >= 0:
			b.WriteByte(c)
		case c == ' ' && plus:
			b.WriteByte('+')
		default:
			b.WriteByte('%')
			b.WriteByte(digits[c>>4])
			b.WriteByte(digits[c&15])
		}
	}
	return b.String()
}

// CutMarks are the marks the toolset leaves where it cut a text short: a
// value cut there is found by the part of it before the mark.
var CutMarks = []string{"…", " [result cut at ", "\n\n[snapshot cut at "}

// ScrubCut is Scrub, and also replaces the start of a spelling (its first
// minSecretLen bytes at least) that ends right at one of marks: a secret
// a bound cut in two is not left half readable.
func (s Secrets) ScrubCut(text string, marks ...string) string {
	text = s.Scrub(text)
	for _, m := range marks {
		for from := 0; ; {
			i := strings.Index(text[from:], m)
			if i < 0 {
				break
			}
			i += from
			head := text[:i]
			cut := 0
			for _, p := range s.pairs {
				for k := len(p.old) - 1; k >= minSecretLen && k > cut; k-- {
					if len(head) >= k && strings.EqualFold(head[len(head)-k:], p.old[:k]) {
						cut = k
						break
					}
				}
			}
			if cut > 0 {
				text = head[:len(head)-cut] + Redacted + text[i:]
				i += len(Redacted) - cut
			}
			from = i + len(m)
		}
	}
	return text
}
