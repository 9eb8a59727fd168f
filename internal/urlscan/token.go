package urlscan

import (
	"strings"
	"unicode/utf8"
)

// token is one URL read forward from its host: end is where it stops,
// auth where its authority stops, ambig the first ambiguous escape (a
// backslash before '.' or a letter) in the authority (-1 if none). cut
// says a placeholder stopped it, esc that it holds an escape and must be
// rebuilt, inAuth that it stopped inside the authority, capped that it hit
// maxToken, brk that it stopped on an escaped tab or newline (its length).
type token struct {
	end, auth, ambig, brk int
	cut, esc, inAuth      bool
	capped                bool
}

// token reads a URL forward from p, in one pass. It ends at a terminator
// (space, quote, backtick, '<', '>', control byte), at a backslash that is
// not an escape the scanner decodes, at an escaped tab or newline, or at a
// placeholder.
func (s *scanner) token(p int) token {
	code := s.code
	t := token{auth: -1, ambig: -1}
	lim := len(code)
	if lim-p > maxToken {
		lim = p + maxToken
	}
	i := p
	tab := &authClass
	for i < lim {
		for i < lim && tab[code[i]] == cURL {
			i++
		}
		if i >= lim {
			break
		}
		switch tab[code[i]] {
		case cAuthEnd:
			t.auth = i
			tab = &tokClass
			i++
		case cTerm:
			return t.stop(i, false)
		case cBackslash:
			j := i + 1
			for j < lim && code[j] == '\\' {
				j++
			}
			if j < lim && (code[j] == '.' || code[j] == '/') {
				t.esc = true
				if t.auth < 0 {
					if code[j] == '/' {
						t.auth = i
						tab = &tokClass
					} else if t.ambig < 0 {
						t.ambig = i
					}
				}
				i = j + 1
				continue
			}
			if j > i+1 {
				// Literal backslashes: a path separator to Chromium.
				return t.stop(i, false)
			}
			if r, n := escapeAt(code, i); n > 0 {
				if r < 0 || i+n > lim {
					return t.capAt(i)
				}
				if isTabOrNewline(r) {
					t.brk = n
					return t.stop(i, false)
				}
				t.esc = true
				if t.auth < 0 && (r == '/' || r == '?' || r == '#' || r == '\\') {
					t.auth = i
					tab = &tokClass
				}
				i += n
				continue
			}
			if t.auth < 0 && j < lim && isIdentityEscape(code[j]) {
				// "\h" is "h" in JavaScript and a backslash (the end of
				// the host) in Python: both readings, as with "\.".
				t.esc = true
				if t.ambig < 0 {
					t.ambig = i
				}
				i = j + 1
				continue
			}
			return t.stop(i, false)
		case cAmp:
			r, n := entityAt(code, i)
			if n == 0 {
				i++
				continue
			}
			if r < 0 || i+n > lim {
				return t.capAt(i)
			}
			if isTabOrNewline(r) {
				t.brk = n
				return t.stop(i, false)
			}
			t.esc = true
			if r == '/' || r == '?' || r == '#' || r == '\\' {
				t.auth = i
				tab = &tokClass
			}
			i += n
		case cBrace:
			return t.stop(i, true)
		case cDollar:
			// ${x}, $(cmd), $VAR and $1 are run-time values; a lone '$'
			// (a regexp anchor, an OData "$filter") is literal.
			if i+1 < lim && isPlaceholderAfterDollar(code[i+1]) {
				return t.stop(i, true)
			}
			i++
		case cPercent:
			// "%2e" is a percent-escape Chromium decodes; "%s", "%d" and
			// "%(x)s" are printf placeholders.
			if i+2 < lim && isHex(code[i+1]) && isHex(code[i+2]) {
				i += 3
				continue
			}
			return t.stop(i, true)
		}
	}
	t = t.stop(i, false)
	t.capped = i >= lim && lim < len(code)
	return t
}

// capAt stops t at an escape or character reference that it cannot read
// to its end within the cap: what the browser gets from there on is as
// unknown as past the cap, and is handled the same way.
func (t token) capAt(end int) token {
	t = t.stop(end, false)
	t.capped = true
	return t
}

func (t token) stop(end int, cut bool) token {
	t.end, t.cut = end, cut
	if t.auth < 0 {
		t.auth = end
		t.inAuth = true
	}
	return t
}

// isIdentityEscape is a byte that a backslash before it leaves alone in
// JavaScript ("\h" is "h") and that can sit in a host. The letters that
// start a real escape (b f n r t v u x, and the digits) are not.
func isIdentityEscape(b byte) bool {
	switch b {
	case 'b', 'f', 'n', 'r', 't', 'v', 'u', 'x', 'U', 'N':
		return false
	}
	return isLetter(b) || b == '8' || b == '9' || b == '-' || b == '@' || b == ':' || b == '_' || b == '~'
}

// maxEscape bounds how far one escape or character reference is read.
// JavaScript allows any number of leading zeros in \u{…} and HTML in
// &#…;, so one can be made as long as its author likes; a longer one is
// unreadable (r < 0), which the token reader treats as the length cap, so
// that the reading fails closed.
const maxEscape = maxToken

// escapeAt decodes the source-string escape that starts with the single
// backslash at code[i]: \t \n \r, \xHH, \uHHHH, \u{H…} (any number of
// digits), \UHHHHHHHH and three-digit octal \ooo (JavaScript, Python, Go,
// C). n is its length, 0 when there is none; r is -1 when it runs past
// maxEscape.
func escapeAt(code string, i int) (r rune, n int) {
	if i+1 >= len(code) {
		return 0, 0
	}
	switch code[i+1] {
	case 't':
		return '\t', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 'x':
		if v, ok := hexAt(code, i+2, 2); ok {
			return rune(v), 4
		}
	case 'u':
		if i+2 < len(code) && code[i+2] == '{' {
			v, k := 0, i+3
			for k < len(code) && isHex(code[k]) {
				if k-i >= maxEscape {
					return -1, k - i
				}
				v = min(v<<4|hexVal(code[k]), utf8.MaxRune+1)
				k++
			}
			if k > i+3 && k < len(code) && code[k] == '}' && v <= utf8.MaxRune {
				return rune(v), k + 1 - i
			}
			return 0, 0
		}
		if v, ok := hexAt(code, i+2, 4); ok {
			return rune(v), 6
		}
	case 'U':
		if v, ok := hexAt(code, i+2, 8); ok && v <= utf8.MaxRune {
			return rune(v), 10
		}
	case '0', '1', '2', '3':
		if i+4 <= len(code) && isOctal(code[i+2]) && isOctal(code[i+3]) {
			return rune(code[i+1]-'0')<<6 | rune(code[i+2]-'0')<<3 | rune(code[i+3]-'0'), 4
		}
	}
	return 0, 0
}

// decodedAt decodes the string escape or the character reference that
// starts at code[i], as escapeAt or entityAt; n is 0 when there is none.
func decodedAt(code string, i int) (r rune, n int) {
	switch code[i] {
	case '\\':
		return escapeAt(code, i)
	case '&':
		return entityAt(code, i)
	}
	return 0, 0
}

func isOctal(b byte) bool { return '0' <= b && b <= '7' }

func hexVal(b byte) int {
	if isDigit(b) {
		return int(b - '0')
	}
	return int(b|0x20-'a') + 10
}

// hexAt reads n hex digits at code[i:].
func hexAt(code string, i, n int) (int, bool) {
	if i+n > len(code) {
		return 0, false
	}
	v := 0
	for k := i; k < i+n; k++ {
		if !isHex(code[k]) {
			return 0, false
		}
		v = v<<4 | hexVal(code[k])
	}
	return v, true
}

// namedRefs are the HTML named character references that spell a byte
// that matters in an authority, or in a data: URL's HTML.
var namedRefs = map[string]rune{
	"colon": ':', "period": '.', "commat": '@', "sol": '/', "bsol": '\\',
	"quest": '?', "num": '#', "percnt": '%', "lsqb": '[', "rsqb": ']',
	"lbrack": '[', "rbrack": ']', "Tab": '\t', "NewLine": '\n', "amp": '&',
	"hyphen": '-', "dash": '-', "lowbar": '_', "excl": '!', "dollar": '$',
	"quot": '"', "apos": '\'', "lt": '<', "gt": '>',
}

// entityAt decodes the HTML character reference at code[i] == '&' as an
// HTML parser does: &#DDD; and &#xHH; with any number of digits and with or
// without the semicolon, or one of namedRefs with its semicolon. n is its
// length, 0 when there is none; r is -1 when it runs past maxEscape.
func entityAt(code string, i int) (r rune, n int) {
	j := i + 1
	if j < len(code) && code[j] == '#' {
		j++
		hex := j < len(code) && code[j]|0x20 == 'x'
		if hex {
			j++
		}
		v, k := 0, j
		for k < len(code) {
			b := code[k]
			if hex && isHex(b) {
				v = v<<4 | hexVal(b)
			} else if !hex && isDigit(b) {
				v = v*10 + int(b-'0')
			} else {
				break
			}
			if k-i >= maxEscape {
				return -1, k - i
			}
			v = min(v, utf8.MaxRune+1)
			k++
		}
		if k == j {
			return 0, 0
		}
		if k < len(code) && code[k] == ';' {
			k++
		}
		return numericRef(v), k - i
	}
	k := j
	for k < len(code) && k-j < 8 && isLetter(code[k]) {
		k++
	}
	if k == j || k >= len(code) || code[k] != ';' {
		return 0, 0
	}
	if r, ok := namedRefs[code[j:k]]; ok {
		return r, k + 1 - i
	}
	return 0, 0
}

// numericRef is the character a numeric reference to v stands for: the
// replacement character for 0, surrogates and values past Unicode.
func numericRef(v int) rune {
	if v == 0 || v > utf8.MaxRune || 0xD800 <= v && v <= 0xDFFF {
		return utf8.RuneError
	}
	return rune(v)
}

// trimEnd drops the punctuation that ends a sentence or closes the code
// around a URL, keeping a ')' or ']' that balances one inside it
// (wikipedia-style paths, IPv6 literals).
func trimEnd(code string, start, end int) int {
	parens, brackets := -1, -1 // unmatched closers, counted on first need
	for end > start {
		switch b := code[end-1]; b {
		case '.', ',', ';', ':', '!', '?', '\'', '"', '`', '}', '>', '*', '\\':
			end--
		case ')':
			if parens < 0 {
				parens = unmatched(code[start:end], '(', ')')
			}
			if parens == 0 {
				return end
			}
			parens--
			end--
		case ']':
			if brackets < 0 {
				brackets = unmatched(code[start:end], '[', ']')
			}
			if brackets == 0 {
				return end
			}
			brackets--
			end--
		default:
			return end
		}
	}
	return end
}

// unmatched counts the closers in s that no opener before them balances.
func unmatched(s string, open, close byte) int {
	depth, extra := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case open:
			depth++
		case close:
			if depth > 0 {
				depth--
			} else {
				extra++
			}
		}
	}
	return extra
}

// decodeToken rebuilds a token as the browser gets it: a backslash run
// before '.' or '/' stands for that character alone, a backslash before an
// identity-escaped letter is dropped, string escapes are decoded, and in
// the first auth bytes (the authority) so are HTML character references.
func decodeToken(s string, auth int) string {
	if strings.IndexByte(s, '\\') < 0 && (auth <= 0 || strings.IndexByte(s[:min(auth, len(s))], '&') < 0) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		switch s[i] {
		case '\\':
			j := i + 1
			for j < len(s) && s[j] == '\\' {
				j++
			}
			if j < len(s) && (s[j] == '.' || s[j] == '/') {
				b.WriteByte(s[j])
				i = j + 1
				continue
			}
			if j == i+1 {
				if r, n := escapeAt(s, i); n > 0 {
					b.WriteRune(r)
					i += n
					continue
				}
				if j < len(s) && isIdentityEscape(s[j]) {
					b.WriteByte(s[j])
					i = j + 1
					continue
				}
			}
			b.WriteString(s[i:j])
			i = j
		case '&':
			if i < auth {
				if r, n := entityAt(s, i); n > 0 {
					b.WriteRune(r)
					i += n
					continue
				}
			}
			b.WriteByte('&')
			i++
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

func isTabOrNewline(r rune) bool { return r == '\t' || r == '\n' || r == '\r' }

func isDigit(b byte) bool  { return '0' <= b && b <= '9' }
func isLetter(b byte) bool { return 'a' <= b|0x20 && b|0x20 <= 'z' }
func isHex(b byte) bool    { return isDigit(b) || 'a' <= b|0x20 && b|0x20 <= 'f' }

// isWordByte is a byte that glues to an identifier or a scheme name.
func isWordByte(b byte) bool {
	return isLetter(b) || isDigit(b) || b == '_' || b == '+' || b == '-' || b == '.'
}

func isPlaceholderAfterDollar(b byte) bool {
	return b == '{' || b == '(' || b == '_' || isLetter(b) || isDigit(b)
}
