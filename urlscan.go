package hybroute

import (
	"strings"
)

// The scanner runs in front of every browser call, so it is one forward pass
// that jumps between ':' bytes with strings.IndexByte and inspects only the
// few bytes around each colon. There is no regexp and no backtracking: every
// look-back and look-ahead is bounded.
//
// Its bias is fail-closed. A false positive only makes a call run locally or
// be refused; a miss can send a private URL to the cloud. Where the source
// language is ambiguous (a `\.` means "." in JavaScript but stays a backslash
// in Python, and Chromium treats that backslash as the end of the host), the
// scanner reports every reading.
//
// What a literal scanner cannot see, it does not guess: a URL assembled at
// run time ("http://" + host, a host in a placeholder, "%s") has no literal
// host, so nothing is reported for it ("http://" alone included) and the
// connect-time egress check on the local browser is what catches it.
// Without slashes, a scheme glued to an identifier ("useHttp:true") is not
// a URL to any parser and is not reported; with slashes it is, failing
// closed. Bare host:port is limited to local-looking hosts, since "name:80"
// is indistinguishable from an object key.

// maxToken bounds how far one URL is read past its scheme. It keeps the scan
// linear on hostile input (a megabyte of "http:" with no terminator would
// otherwise be read once per colon). Hosts live in the first bytes of a URL,
// so only the tail of a longer path or query is lost.
const maxToken = 4096

// Scheme kinds decide how the bytes after "scheme:" are read.
const (
	// kindHost schemes (http, https, ws, wss, ftp) are WHATWG "special":
	// Chromium accepts any run of '/' and '\' after the colon, even none.
	kindHost = iota
	// kindFile is file:, whose slash count is meaningful (file:///etc has
	// an empty host), so the run is kept rather than folded to "//".
	kindFile
	// kindOpaque schemes (chrome, chrome-untrusted, devtools) are refused by
	// the router; they are reported so it gets the chance, but only with a
	// slash, because "chrome:" or "devtools:" without one is far more often
	// an object key than a URL.
	kindOpaque
	// kindViewSource wraps another URL, which the scan finds on its own.
	kindViewSource
)

// Byte classes of the forward token scan; cURL is the hot path.
const (
	cURL = iota
	cTerm
	cBackslash
	cBrace
	cDollar
	cPercent
	cAuthEnd // '/', '?', '#' while the authority is still being read
)

var tokClass = func() (t [256]uint8) {
	for b := 0; b < 0x20; b++ {
		t[b] = cTerm
	}
	t[0x7f] = cTerm
	for _, b := range []byte(" \"'`<>") {
		t[b] = cTerm
	}
	t['\\'] = cBackslash
	t['{'] = cBrace // {x} f-strings, {{x}} templates, and the tail of ${x}
	t['$'] = cDollar
	t['%'] = cPercent
	return t
}()

// authClass is tokClass while reading the authority, where the bytes that
// end it need noticing; once they are seen the scan switches to tokClass.
var authClass = func() (t [256]uint8) {
	t = tokClass
	t['/'], t['?'], t['#'] = cAuthEnd, cAuthEnd, cAuthEnd
	return t
}()

// ScanURLs returns the URL literals in code, in order of first appearance,
// deduplicated. code may be in any language an agent writes (JavaScript,
// TypeScript, Python, Go, shell, JSON, HTML); the scan knows none of them
// and looks only at what surrounds each ':'.
//
// It reports absolute URLs of the schemes http, https, ws, wss, ftp, file,
// chrome, chrome-untrusted, devtools and view-source, in any case, and bare
// host:port tokens whose host is localhost, *.localhost, a dotted IPv4
// literal or a bracketed IPv6 literal (reported as http). Results are
// normalised the way Chromium would read them: the scheme is lower-cased,
// any run of '/' and '\' after it becomes "//", escaped slashes and dots are
// unescaped, a template placeholder ends the URL, and trailing punctuation
// is dropped. A URL whose host is itself a placeholder is not reported,
// because there is no literal host to judge. When a backslash-escaped dot
// sits in the host, both the unescaped URL and the one cut at the backslash
// are reported, since languages disagree about which one the browser gets.
//
// Results are substrings of code wherever no normalisation was needed. It
// returns nil when code holds no URL.
func ScanURLs(code string) []string {
	var out []string
	// noBareUntil keeps a port colon of a reported URL from being reported
	// again as a bare host:port.
	noBareUntil := 0
	for i := 0; ; {
		j := strings.IndexByte(code[i:], ':')
		if j < 0 {
			break
		}
		c := i + j
		i = c + 1
		if c == 0 {
			continue
		}
		// Most colons in code are object keys, annotations and ternaries;
		// testing the byte on either side dismisses them without a call.
		// Every scanned scheme ends in p, s, e or d.
		if last := code[c-1] | 0x20; last == 'p' || last == 's' || last == 'e' || last == 'd' {
			if name, kind := schemeBefore(code, c); name != "" {
				var found bool
				var auth int
				out, auth, found = schemeURL(out, code, c, name, kind)
				if found {
					noBareUntil = max(noBareUntil, auth)
					continue
				}
			}
		}
		if c >= noBareUntil && c+1 < len(code) && isDigit(code[c+1]) {
			out = bareHostPort(out, code, c)
		}
	}
	return dedup(out)
}

// schemeBefore returns the scanned scheme that ends just before the colon
// at c. It matches a suffix of whatever precedes, so "xhttp:" yields http:
// glued prefixes are the scanner failing closed, not a parse of the word.
func schemeBefore(code string, c int) (string, int) {
	if c == 0 {
		return "", 0
	}
	// Dispatch on the last letter so the common colon (an object key, a
	// type annotation) costs one comparison.
	switch code[c-1] | 0x20 {
	case 'p':
		if endsFold(code, c, "http") {
			return "http", kindHost
		}
		if endsFold(code, c, "ftp") {
			return "ftp", kindHost
		}
	case 's':
		if endsFold(code, c, "https") {
			return "https", kindHost
		}
		if endsFold(code, c, "wss") {
			return "wss", kindHost
		}
		if endsFold(code, c, "ws") {
			return "ws", kindHost
		}
		if endsFold(code, c, "devtools") {
			return "devtools", kindOpaque
		}
	case 'e':
		if endsFold(code, c, "file") {
			return "file", kindFile
		}
		if endsFold(code, c, "chrome") {
			return "chrome", kindOpaque
		}
		if endsFold(code, c, "view-source") {
			return "view-source", kindViewSource
		}
	case 'd':
		if endsFold(code, c, "chrome-untrusted") {
			return "chrome-untrusted", kindOpaque
		}
	}
	return "", 0
}

// endsFold reports whether code[:c] ends with the lower-case ASCII word w,
// ignoring the case of letters only (so '\r' never passes for '-').
func endsFold(code string, c int, w string) bool {
	if c < len(w) {
		return false
	}
	s := code[c-len(w) : c]
	for k := 0; k < len(w); k++ {
		b := s[k]
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if b != w[k] {
			return false
		}
	}
	return true
}

// hasFoldAt reports whether code[i:] starts with the lower-case word w.
func hasFoldAt(code string, i int, w string) bool {
	if i < 0 || len(code)-i < len(w) {
		return false
	}
	for k := 0; k < len(w); k++ {
		b := code[i+k]
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if b != w[k] {
			return false
		}
	}
	return true
}

// schemeURL reads the URL whose scheme name ends at the colon c and appends
// what it reports. auth is where the raw authority ends, so the caller can
// skip its port colon; found is false when nothing was reported.
func schemeURL(out []string, code string, c int, name string, kind int) (_ []string, auth int, found bool) {
	st := c - len(name)
	q, slashes := c+1, 0
	if kind != kindViewSource {
		q, slashes = slashRun(code, c+1)
	}
	if slashes == 0 {
		switch kind {
		case kindFile, kindOpaque:
			return out, 0, false
		case kindHost:
			// "http:localhost" is a URL to Chromium, but "fetchHttp:x" in
			// an object literal is not, so without slashes the scheme must
			// stand alone. A letter after a backslash is an escape
			// ("\nhttp:host"), so the word still starts there.
			if st > 0 && isWordByte(code[st-1]) &&
				!(isLetter(code[st-1]) && st >= 2 && code[st-2] == '\\') {
				return out, 0, false
			}
		}
	}

	hs := q
	t := scanToken(code, hs)
	end, cut, esc := t.end, t.cut, t.esc
	if kind == kindViewSource {
		end = trimEnd(code, hs, end)
		if end == hs {
			return out, 0, false
		}
		if !esc && code[st:c] == name {
			return append(out, code[st:end]), 0, true
		}
		return append(out, "view-source:"+unescape(code[hs:end])), 0, true
	}

	auth, ambig := t.auth, t.ambig
	if cut && end <= auth {
		// A placeholder inside the authority: "{user}@host" still has a
		// literal host after the '@', "host:${port}" has one before the
		// port, and "{host}" has none at all.
		if at := userinfoAt(code, end); at >= 0 {
			hs = at + 1
			t = scanToken(code, hs)
			end, cut, esc, auth, ambig = t.end, t.cut, t.esc, t.auth, t.ambig
		}
		if cut && end <= auth {
			pc := portColon(code, hs, end)
			if pc < 0 {
				return out, end, false
			}
			end, auth = pc, pc
		}
	}
	end = trimEnd(code, hs, end)
	if end == hs {
		return out, auth, false
	}
	if auth > end {
		auth = end
	}

	prefix := schemePrefix(name, kind, slashes)
	exact := hs == q && code[st:q] == prefix
	if exact && !esc {
		out = append(out, code[st:end])
	} else {
		out = append(out, prefix+unescape(code[hs:end]))
	}
	if ambig >= 0 && ambig < auth {
		// Python keeps "\." as a backslash, which Chromium reads as the
		// start of the path: http://127.0.0.1\.nip.io is then 127.0.0.1.
		if e := trimEnd(code, hs, ambig); e > hs {
			if exact {
				out = append(out, code[st:e])
			} else {
				out = append(out, prefix+code[hs:e])
			}
		}
	}
	return out, auth, true
}

// schemePrefix is the normalised "scheme://" for a URL.
func schemePrefix(name string, kind, slashes int) string {
	switch {
	case kind == kindFile && slashes >= 3:
		return "file://" + strings.Repeat("/", slashes-2)
	case kind == kindFile:
		// file:/etc and file://etc... both mean a path to Chromium only
		// when the run is short; "file:/x" is file:///x.
		if slashes == 2 {
			return "file://"
		}
		return "file:///"
	}
	switch name {
	case "http":
		return "http://"
	case "https":
		return "https://"
	case "ws":
		return "ws://"
	case "wss":
		return "wss://"
	}
	return name + "://"
}

// slashRun skips the '/' and '\' Chromium accepts after a special scheme,
// including JSON and JavaScript spellings of a slash ("\/", "\u002f",
// "\x2f"), and returns where the host starts and how many slashes the run
// means.
func slashRun(code string, q int) (int, int) {
	n := 0
	for q < len(code) {
		switch code[q] {
		case '/':
			q++
			n++
		case '\\':
			switch {
			case hasFoldAt(code, q+1, "u002f"):
				q += 6
				n++
			case hasFoldAt(code, q+1, "x2f"):
				q += 4
				n++
			default:
				// A backslash run before '/' escapes it; otherwise the
				// backslashes are themselves the slashes, doubled when
				// they sit in a source string literal.
				r := q
				for r < len(code) && code[r] == '\\' {
					r++
				}
				if r < len(code) && code[r] == '/' {
					q = r
					continue
				}
				n += (r - q + 1) / 2
				q = r
			}
		default:
			return q, n
		}
	}
	return q, n
}

// token is one URL read forward from its host: end is where it stops,
// auth where its authority stops, ambig the first backslash-escaped dot in
// the authority (-1 if none); cut says a placeholder stopped it, esc that it
// holds an escape and must be rebuilt.
type token struct {
	end, auth, ambig int
	cut, esc         bool
}

// scanToken reads a URL forward from p, in one pass. It ends at a
// terminator (space, quote, backtick, '<', '>', control byte), at a
// backslash that is not an escape of '.' or '/', or at a placeholder.
func scanToken(code string, p int) token {
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
			if j >= lim || code[j] != '.' && code[j] != '/' {
				return t.stop(i, false)
			}
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
	return t.stop(i, false)
}

func (t token) stop(end int, cut bool) token {
	t.end, t.cut = end, cut
	if t.auth < 0 {
		t.auth = end
	}
	return t
}

// userinfoAt looks past a placeholder for the '@' that would end a
// userinfo, within the authority, and returns its index or -1.
func userinfoAt(code string, i int) int {
	lim := min(len(code), i+256)
	for ; i < lim; i++ {
		switch b := code[i]; {
		case b == '@':
			return i
		case b == '/' || b == '?' || b == '#' || b == '\\' || tokClass[b] == cTerm:
			return -1
		}
	}
	return -1
}

// portColon returns the colon that starts a port whose digits run up to the
// placeholder at end ("localhost:${port}"), or -1 when the placeholder is in
// the host.
func portColon(code string, hs, end int) int {
	if end-hs > 512 {
		return -1
	}
	s := code[hs:end]
	k := strings.LastIndexByte(s, ':')
	if k <= 0 {
		return -1
	}
	if strings.IndexByte(s, '[') >= 0 && strings.IndexByte(s[:k], ']') < 0 {
		return -1 // the colon is inside an IPv6 literal
	}
	for _, b := range []byte(s[k+1:]) {
		if !isDigit(b) {
			return -1
		}
	}
	return hs + k
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

// unescape rebuilds a token: a backslash run before '.' or '/' stands for
// that character alone.
func unescape(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// bareHostPort appends "http://host:port[/path]" when the colon at c joins
// a local-looking host to 1-5 digits: localhost, *.localhost, a dotted IPv4
// literal or a bracketed IPv6 literal. Other names are left alone, because
// "a:1", "foo:80" and "12:30" are everywhere in code.
func bareHostPort(out []string, code string, c int) []string {
	if c == 0 || c+1 >= len(code) || !isDigit(code[c+1]) {
		return out
	}
	d := c + 1
	for d < len(code) && isDigit(code[d]) {
		d++
	}
	if d-c-1 > 5 || d < len(code) && isWordByte(code[d]) && code[d] != '.' && code[d] != '-' {
		return out
	}
	hs := hostBefore(code, c)
	if hs < 0 {
		return out
	}
	end := d
	if d < len(code) && code[d] == '/' {
		end = scanToken(code, d).end
		end = trimEnd(code, d, end)
	}
	return append(out, "http://"+unescape(code[hs:end]))
}

// hostBefore returns where the local-looking host that ends at the colon c
// starts, or -1.
func hostBefore(code string, c int) int {
	b := code[c-1]
	switch {
	case b == ']':
		i := c - 1
		colons := 0
		for i > 0 && c-i < 64 {
			x := code[i-1]
			if x == '[' {
				break
			}
			if x == ':' {
				colons++
			} else if !isHex(x) && x != '.' && x != '%' && !isLetter(x) && !isDigit(x) {
				return -1
			}
			i--
		}
		if i == 0 || code[i-1] != '[' || colons == 0 {
			return -1
		}
		hs := i - 1
		// "a[::1]:" and "f(x)[1:2]:" are indexing, not hosts.
		if hs > 0 {
			if p := code[hs-1]; isWordByte(p) && p != '.' && p != '-' || p == ']' || p == ')' {
				return -1
			}
		}
		return hs
	case isDigit(b):
		i := c
		for i > 0 && c-i <= 15 && (isDigit(code[i-1]) || code[i-1] == '.') {
			i--
		}
		if !looksIPv4(code[i:c]) {
			return -1
		}
		if i > 0 {
			if p := code[i-1]; isDigit(p) || p == '.' || isLetter(p) || p == '_' {
				return -1
			}
		}
		return i
	case b|0x20 == 't':
		if !endsFold(code, c, "localhost") {
			return -1
		}
		i := c - len("localhost")
		if i > 0 && code[i-1] == '.' {
			// *.localhost: walk back over the other labels.
			for i > 0 && c-i < 256 && (isLetter(code[i-1]) || isDigit(code[i-1]) || code[i-1] == '-' || code[i-1] == '.') {
				i--
			}
			if code[i] == '.' {
				return -1
			}
		}
		if i > 0 {
			if p := code[i-1]; isWordByte(p) {
				return -1
			}
		}
		return i
	}
	return -1
}

// looksIPv4 accepts four dot-separated groups of 1-3 digits; values are the
// router's business, shape is enough to know this is an address.
func looksIPv4(s string) bool {
	groups, digits := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			if digits == 0 {
				return false
			}
			groups++
			digits = 0
			continue
		}
		digits++
		if digits > 3 {
			return false
		}
	}
	return digits > 0 && groups == 3
}

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

// dedup keeps the first occurrence of each URL, in place. Small results
// (the usual browser call) compare directly; larger ones use a hash table
// on the stack so the only allocations stay the result and its strings.
func dedup(out []string) []string {
	if len(out) <= 32 {
		k := 0
	next:
		for _, s := range out {
			for _, t := range out[:k] {
				if s == t {
					continue next
				}
			}
			out[k] = s
			k++
		}
		clear(out[k:])
		return out[:k]
	}
	if len(out) > 12000 {
		return dedupMap(out)
	}
	return dedupTable(out)
}

// dedupTable is kept out of dedup so that its table is only zeroed (and the
// stack only grown for it) when a result is large.
//
//go:noinline
func dedupTable(out []string) []string {
	const size = 1 << 14 // power of two, load at most 12000/16384
	var table [size]uint16
	k := 0
	for _, s := range out {
		h := hashString(s) & (size - 1)
		for {
			slot := table[h]
			if slot == 0 {
				table[h] = uint16(k + 1)
				out[k] = s
				k++
				break
			}
			if out[slot-1] == s {
				break
			}
			h = (h + 1) & (size - 1)
		}
	}
	clear(out[k:])
	return out[:k]
}

func dedupMap(out []string) []string {
	seen := make(map[string]struct{}, len(out))
	k := 0
	for _, s := range out {
		if _, dup := seen[s]; dup {
			continue
		}
		seen[s] = struct{}{}
		out[k] = s
		k++
	}
	clear(out[k:])
	return out[:k]
}

// hashString is FNV-1a; URLs are short and this needs no seed.
func hashString(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}
