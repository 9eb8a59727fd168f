package hybroute

import (
	"strings"
	"unicode/utf8"

	"github.com/hybroute/hybroute/internal/whatwg"
)

// The scanner runs in front of every browser call, so it is one forward pass
// that jumps between ':' bytes (and "//" pairs) with strings.IndexByte and
// strings.Index and inspects only the few bytes around each. There is no
// regexp and no backtracking: every look-back and look-ahead is bounded, and
// the one long look-ahead (past the length cap) is memoised so that no byte
// is read by it twice.
//
// Its bias is fail-closed. A false positive only makes a call run locally or
// be refused; a miss can send a private URL to the cloud. Where the source
// language is ambiguous (a `\.` means "." in JavaScript but stays a backslash
// in Python, and Chromium treats that backslash as the end of the host), the
// scanner reports every reading. Where the bytes in the source are not the
// bytes the browser gets, it decodes them: string escapes (\xHH, \uHHHH,
// \u{H…}, \UHHHHHHHH, three-digit octal) anywhere in a URL, HTML character
// references (&#58;, &#x3a;, &colon;, &commat;, …) in its authority, and
// ASCII tab and newline, which Chromium strips anywhere in a URL.
//
// When a URL stops inside its authority on a byte that does not close the
// string it sits in (a space, another quote, '<', an escaped quote, a tab),
// the browser may well receive more: Chromium percent-encodes a space, '"',
// '<' or '>' in a userinfo and keeps going. The scanner then looks a bounded
// distance ahead on the same line for the '@' that would end such a
// userinfo and reports the URL of the host after it as well. A URL that hits
// the length cap inside its authority is handled the same way with a longer
// reach, and if no '@' turns up it is reported with an invalid port so that
// its verdict fails rather than passing a truncated host as public.
//
// What a literal scanner cannot see, it does not guess: a URL assembled at
// run time ("http://" + host, a host in a placeholder, "%s") has no literal
// host, so nothing is reported for it ("http://" alone included). Those are
// caught, as far as they are caught today, by the in-browser guard (guard.go:
// it pauses every document request and every request whose URL looks like a
// metadata address, and re-decides it) and by the check of the URL the
// browser landed on after the call. Connect-time enforcement on the dialled
// IP of the local browser is future work, not a layer that exists yet.
//
// A placeholder that follows a complete literal host ("http://127.0.0.1${p}",
// f"http://localhost{path}", "http://localhost%s") cuts the URL there and the
// literal host is reported. A placeholder right after a '.' or '-' of a name
// ("http://api.${region}.example.com") is a host being assembled and nothing
// is reported, unless what precedes it is numeric ("http://127.0.0.${n}"
// reports http://127.0.0, which Chromium reads as 127.0.0.0: still private).
// A placeholder glued to a label ("http://api${n}.example.com") reports the
// literal label, "http://api": a harmless public name, kept because the same
// shape is how "http://169.254.169.254${path}" looks.
//
// Without slashes, a scheme glued to an identifier ("useHttp:true") is not
// a URL to any parser and is not reported; with slashes it is, failing
// closed. Bare host:port is limited to local-looking hosts, since "name:80"
// is indistinguishable from an object key, and so are scheme-relative URLs
// ("//169.254.169.254/x"), since "// comment" and "//example.com" are
// everywhere in code.

// maxToken bounds how far one URL is read past its scheme. It keeps the scan
// linear on hostile input (a megabyte of "http:" with no terminator would
// otherwise be read once per colon). Hosts live in the first bytes of a URL,
// so only the tail of a longer path or query is lost; an authority longer
// than this is handled by farLook.
const maxToken = 4096

// maxRebuiltPath bounds the path and query kept in a reading that had to be
// rebuilt (normalised or decoded) rather than returned as a substring.
const maxRebuiltPath = 256

// nearLook is how far past an unclean stop in the authority the scan looks
// for the '@' of a userinfo; farLook is how far past the length cap.
const (
	nearLook = 256
	farLook  = 64 << 10
)

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
	cAmp     // '&' while the authority is still being read
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
// HTML character references are decoded in the authority only: in a path
// or query "&amp;" is everyday HTML and changes no host.
var authClass = func() (t [256]uint8) {
	t = tokClass
	t['/'], t['?'], t['#'] = cAuthEnd, cAuthEnd, cAuthEnd
	t['&'] = cAmp
	return t
}()

// scanState is what one ScanURLs call remembers between URLs so that the
// look-aheads stay linear in total.
type scanState struct {
	// farLo..farHi was read by the last long look-ahead; farDone says it
	// reached a decision there (farRes: host start after an '@', or -1).
	farLo, farHi, farRes int
	farDone              bool
	// joinedUntil is the end of the last tab/newline-joined reading; a URL
	// starting inside it was already covered by that reading.
	joinedUntil int
	// truncated says an authority longer than the cap was already reported
	// in a form whose verdict fails.
	truncated bool
}

// ScanURLs returns the URL literals in code, in order of first appearance,
// deduplicated. code may be in any language an agent writes (JavaScript,
// TypeScript, Python, Go, shell, JSON, HTML); the scan knows none of them
// and looks only at what surrounds each ':' and each "//".
//
// It reports absolute URLs of the schemes http, https, ws, wss, ftp, file,
// chrome, chrome-untrusted, devtools and view-source, in any case; bare
// host:port tokens whose host is localhost, *.localhost, a dotted IPv4
// literal or a bracketed IPv6 literal (reported as http); and
// scheme-relative "//host..." URLs whose host is an IPv4 or bracketed IPv6
// literal, localhost, *.localhost or a metadata name (reported as http).
// Results are normalised the way Chromium would read them: the scheme is
// lower-cased, any run of '/' and '\' after it becomes "//", string escapes
// and (in the authority) HTML character references are decoded, a template
// placeholder ends the URL, and trailing punctuation is dropped. A URL whose
// host is itself a placeholder is not reported, because there is no literal
// host to judge. When the source is ambiguous (a backslash-escaped dot or
// letter in the host, a tab or newline inside the authority, a userinfo the
// browser would read past a space or quote) every reading is reported.
//
// Results are substrings of code wherever no normalisation was needed. It
// returns nil when code holds no URL.
func ScanURLs(code string) []string {
	var out []string
	var st scanState
	// noBareUntil is where the authority of the last reported URL ends.
	// A colon before it that no slash follows is not looked at again: a
	// port colon would be reported again as a bare host:port, and a
	// slashless scheme inside an authority ("http:http:…", "http://u:http:p@h")
	// names either the same host (the one after the last '@') or sits in an
	// authority Chromium refuses (its port is not a number), which already
	// blocks the call. Skipping them keeps a megabyte of "http:" from
	// costing a 4 KiB reading per colon. A colon followed by a slash ends
	// the outer authority with an empty port ("http:http://127.0.0.1/" is
	// host "http" to Chromium), so the URL after it is read as usual.
	noBareUntil := 0
	ss := nextSlashSlash(code, 0)
	for i := 0; ; {
		j := strings.IndexByte(code[i:], ':')
		c := len(code)
		if j >= 0 {
			c = i + j
		}
		for ss >= 0 && ss < c {
			out = schemeRelative(out, code, ss)
			ss = nextSlashSlash(code, ss+2)
		}
		if j < 0 {
			break
		}
		i = c + 1
		if c == 0 || c < noBareUntil && c+1 < len(code) && code[c+1] != '/' && code[c+1] != '\\' {
			continue
		}
		// Most colons in code are object keys, annotations and ternaries;
		// testing the byte on either side dismisses them without a call.
		// Every scanned scheme ends in p, s, e or d.
		if last := code[c-1] | 0x20; last == 'p' || last == 's' || last == 'e' || last == 'd' {
			if name, kind := schemeBefore(code, c); name != "" {
				var found bool
				var auth int
				out, auth, found = schemeURL(out, code, c, name, kind, &st)
				if found {
					noBareUntil = max(noBareUntil, auth)
					continue
				}
			}
		}
		if c+1 < len(code) && isDigit(code[c+1]) {
			out = bareHostPort(out, code, c)
		}
	}
	return dedup(out)
}

// nextSlashSlash is the index of the next "//" at or after i, or -1.
func nextSlashSlash(code string, i int) int {
	if i >= len(code) {
		return -1
	}
	j := strings.Index(code[i:], "//")
	if j < 0 {
		return -1
	}
	return i + j
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
func schemeURL(out []string, code string, c int, name string, kind int, st *scanState) (_ []string, auth int, found bool) {
	start := c - len(name)
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
			if start > 0 && isWordByte(code[start-1]) &&
				!(isLetter(code[start-1]) && start >= 2 && code[start-2] == '\\') {
				return out, 0, false
			}
		}
	}

	hs := q
	t := scanToken(code, hs)
	if kind == kindViewSource {
		end := trimEnd(code, hs, t.end)
		if end == hs {
			return out, 0, false
		}
		if !t.esc && code[start:c] == name {
			return append(out, code[start:end]), 0, true
		}
		return append(out, "view-source:"+decodeToken(code[hs:end], min(t.auth, end)-hs)), 0, true
	}

	prefix := schemePrefix(name, kind, slashes)
	n0 := len(out)
	if t.cut && t.inAuth {
		// A placeholder inside the authority: "{user}@host" still has a
		// literal host after the '@', "host:${port}" and "host${path}"
		// have one before the placeholder, and "{host}" has none at all.
		if at := userinfoAt(code, t.end); at >= 0 {
			hs = at + 1
			t = scanToken(code, hs)
		}
		if t.cut && t.inAuth && !literalHostBefore(code, hs, t.end) {
			return out, t.end, false
		}
	}
	exact := hs == q && code[start:q] == prefix
	out = emitURL(out, code, start, hs, t, prefix, exact)

	if t.inAuth && !t.cut {
		// The token stopped inside the authority: the browser may see more.
		qt, qesc := openerAt(code, start)
		if t.capped {
			// An authority longer than the cap: find the host after an '@'
			// beyond it, or make sure the truncated one fails its verdict.
			if h := st.far(code, t.end); h >= 0 {
				out = emitURL(out, code, -1, h, scanToken(code, h), prefix, false)
			} else if !st.truncated {
				// One unparseable reading blocks the whole call, so it is
				// reported once: a megabyte of "http:" must not allocate
				// a truncated copy per colon.
				st.truncated = true
				out = append(out, prefix+decodeToken(code[hs:t.end], t.end-hs)+":truncated-authority")
			}
		} else {
			if isBreakStop(code, t, qt) && hs >= st.joinedUntil {
				out = st.join(out, code, hs, t, qt, prefix)
			}
			if !cleanStop(code, t.end, qt, qesc) {
				if h := atAhead(code, t.end, t.end+nearLook, qt, qesc); h >= 0 {
					out = emitURL(out, code, -1, h, scanToken(code, h), prefix, false)
				}
			}
		}
	}
	return out, t.auth, len(out) > n0
}

// emitURL appends the reading of the token t that starts at hs, and the cut
// reading at an ambiguous escape in its host. start is where the scheme
// starts in code when exact says code[start:hs] is already prefix, so the
// result can be a substring.
func emitURL(out []string, code string, start, hs int, t token, prefix string, exact bool) []string {
	end := trimEnd(code, hs, t.end)
	if end == hs {
		return out
	}
	auth := min(t.auth, end)
	if exact && !t.esc {
		out = append(out, code[start:end])
	} else {
		if end-auth > maxRebuiltPath {
			// A rebuilt reading is a copy; its path decides nothing, and
			// a megabyte of "http:/" must not copy 4 KiB per colon.
			end = trimEnd(code, hs, auth+maxRebuiltPath)
		}
		out = append(out, prefix+decodeToken(code[hs:end], auth-hs))
	}
	if t.ambig >= 0 && t.ambig < auth {
		// Python keeps "\." as a backslash, which Chromium reads as the
		// start of the path: http://127.0.0.1\.nip.io is then 127.0.0.1.
		if e := trimEnd(code, hs, t.ambig); e > hs {
			if exact && strings.IndexAny(code[hs:e], `\&`) < 0 {
				out = append(out, code[start:e])
			} else {
				out = append(out, prefix+decodeToken(code[hs:e], e-hs))
			}
		}
	}
	return out
}

// literalHostBefore reports whether code[hs:end], the literal text before a
// placeholder in an authority, is a host worth reporting (see the rules in
// the comment at the top of this file).
func literalHostBefore(code string, hs, end int) bool {
	s := code[hs:end]
	if at := strings.LastIndexByte(s, '@'); at >= 0 {
		s = s[at+1:]
	}
	if s == "" {
		return false
	}
	if strings.IndexByte(s, '[') >= 0 && strings.IndexByte(s, ']') < 0 {
		return false // the placeholder is inside an IPv6 literal
	}
	switch s[len(s)-1] {
	case '.', '-':
		// A name being assembled ("api.${region}"): only an address being
		// assembled ("127.0.0.${n}") says anything about the host.
		h := strings.TrimRight(s, ".-")
		if k := strings.LastIndexByte(h, ':'); k >= 0 {
			h = h[:k]
		}
		return endsInNumericLabel(h)
	}
	return true
}

// endsInNumericLabel is the WHATWG "ends in a number" test: the last label
// is decimal digits or 0x-hex, so the host parses as IPv4 (or fails).
func endsInNumericLabel(h string) bool {
	h = strings.TrimSuffix(h, ".")
	if k := strings.LastIndexByte(h, '.'); k >= 0 {
		h = h[k+1:]
	}
	if h == "" {
		return false
	}
	if len(h) >= 2 && h[0] == '0' && h[1]|0x20 == 'x' {
		for i := 2; i < len(h); i++ {
			if !isHex(h[i]) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(h); i++ {
		if !isDigit(h[i]) {
			return false
		}
	}
	return true
}

// openerAt is the quote that opens the string a URL starting at st sits in
// (0 when the byte before it is not a quote), and whether that quote is
// itself escaped (a string inside a string).
func openerAt(code string, st int) (byte, bool) {
	if st == 0 {
		return 0, false
	}
	switch b := code[st-1]; b {
	case '"', '\'', '`':
		return b, st >= 2 && code[st-2] == '\\'
	}
	return 0, false
}

// cleanStop reports whether the byte a token stopped on at e closes the
// URL for sure: the quote that opened its string, or, outside a string,
// whitespace and '>'.
func cleanStop(code string, e int, q byte, qesc bool) bool {
	if e >= len(code) {
		return true
	}
	b := code[e]
	if q != 0 {
		if qesc {
			return b == '\\' && e+1 < len(code) && code[e+1] == q
		}
		return b == q
	}
	switch b {
	case '"', '\'', '`', '<', '\\':
		return false
	}
	return true
}

// isBreakStop reports whether t stopped inside its authority on an ASCII
// tab or newline that Chromium would strip: an escaped one (\t, \u000a,
// &Tab;) anywhere, a raw one only inside a quoted string (outside one, raw
// whitespace separates words).
func isBreakStop(code string, t token, q byte) bool {
	if !t.inAuth || t.cut || t.end >= len(code) {
		return false
	}
	if t.brk > 0 {
		return true
	}
	b := code[t.end]
	return q != 0 && (b == '\t' || b == '\n' || b == '\r')
}

// breakLen is the length of the tab/newline (raw, escaped or a character
// reference) at i, or 0.
func breakLen(code string, i int) int {
	switch code[i] {
	case '\t', '\n', '\r':
		return 1
	case '\\':
		if r, n := escapeAt(code, i); n > 0 && isTabOrNewline(r) {
			return n
		}
	case '&':
		if r, n := entityAt(code, i); n > 0 && isTabOrNewline(r) {
			return n
		}
	}
	return 0
}

func isTabOrNewline(r rune) bool { return r == '\t' || r == '\n' || r == '\r' }

// join appends the reading of the URL at hs with the tabs and newlines in
// its authority removed, as Chromium reads it ("metadata.google\t.internal"
// is metadata.google.internal). The reading is kept only if it parses: a
// joined string Chromium refuses is not one the browser can open, and the
// reading cut at the break is reported anyway.
func (st *scanState) join(out []string, code string, hs int, t token, q byte, prefix string) []string {
	var b strings.Builder
	b.WriteString(prefix)
	b.WriteString(decodeToken(code[hs:t.end], t.end-hs))
	p := t.end
	for p < len(code) && p-hs < maxToken {
		for p < len(code) && p-hs < maxToken {
			n := breakLen(code, p)
			if n == 0 {
				break
			}
			p += n
		}
		if p >= len(code) {
			break
		}
		t2 := scanToken(code, p)
		if t2.end == p {
			break
		}
		b.WriteString(decodeToken(code[p:t2.end], min(t2.auth, t2.end)-p))
		p = t2.end
		if !isBreakStop(code, t2, q) {
			break
		}
	}
	st.joinedUntil = p
	u := b.String()
	u = u[:trimEnd(u, len(prefix), len(u))]
	if len(u) == len(prefix) {
		return out
	}
	if _, err := whatwg.Parse(u); err != nil {
		return out
	}
	return append(out, u)
}

// atAhead looks from i, up to lim and on the same line, for the '@' that
// would end a userinfo and returns where the host after it starts, or -1.
// It stops where the authority would end for Chromium ('/', '?', '#', a
// backslash that is not an escape) and at the unescaped quote q that closes
// the string (q == 0: no string to close). Escapes and character
// references are decoded on the way, so "\u0040" and "&#64;" count.
func atAhead(code string, i, lim int, q byte, qesc bool) int {
	h, _, _ := atAheadEnd(code, i, lim, q, qesc)
	return h
}

// atAheadEnd is atAhead that also returns where it stopped and whether it
// decided (false: it reached lim).
func atAheadEnd(code string, i, lim int, q byte, qesc bool) (host, stop int, decided bool) {
	lim = min(lim, len(code))
	for i < lim {
		switch b := code[i]; b {
		case '@':
			return i + 1, i, true
		case '/', '?', '#', '\n':
			return -1, i, true
		case '\\':
			if r, n := escapeAt(code, i); n > 0 {
				switch r {
				case '@':
					return i + n, i, true
				case '/', '?', '#', '\\':
					return -1, i, true
				}
				i += n
				continue
			}
			if i+1 < len(code) {
				switch x := code[i+1]; {
				case x == '"' || x == '\'' || x == '`':
					if qesc && x == q {
						return -1, i, true
					}
					i += 2
					continue
				case isIdentityEscape(x):
					i += 2
					continue
				}
			}
			return -1, i, true
		case '&':
			if r, n := entityAt(code, i); n > 0 {
				switch r {
				case '@':
					return i + n, i, true
				case '/', '?', '#', '\\':
					return -1, i, true
				}
				i += n
				continue
			}
			i++
		default:
			if b == q && q != 0 {
				return -1, i, true // the string closes (or, for an escaped opener, the one around it)
			}
			i++
		}
	}
	return -1, i, false
}

// far is atAhead with the long reach used past the length cap. The reads
// are memoised: a later call that starts inside the span an earlier one
// read gets its answer, or carries on from where it stopped, so hostile
// input with many capped URLs is still read once.
func (st *scanState) far(code string, from int) int {
	lim := min(len(code), from+farLook)
	if from >= st.farLo && from < st.farHi {
		if st.farDone {
			return st.farRes
		}
		from = st.farHi
	} else {
		st.farLo = from
	}
	h, stop, done := atAheadEnd(code, from, lim, 0, false)
	st.farRes, st.farDone = h, done
	st.farHi = stop
	if done {
		st.farHi = stop + 1
	}
	return h
}

// schemeRelative appends "http://host..." for the "//" at s when what
// follows is a scheme-relative URL whose host is a local-looking literal:
// an IPv4 address (in the forms Chromium reads: 127.0.0.1, 0x7f.1,
// 2130706433), a bracketed IPv6 literal, localhost, *.localhost or a
// metadata name. Any other "//" is a comment, a path or a public name that
// must not change where a call runs.
func schemeRelative(out []string, code string, s int) []string {
	if s > 0 {
		switch p := code[s-1]; {
		case p == ':' || p == '/' || p == '\\' || p == ')' || p == ']':
			return out
		case isWordByte(p):
			return out
		}
	}
	hs := s + 2
	for hs < len(code) && code[hs] == '/' {
		hs++
	}
	if hs >= len(code) {
		return out
	}
	if b := code[hs]; !isDigit(b) && b != '[' && !isLetter(b) {
		return out
	}
	t := scanToken(code, hs)
	end := trimEnd(code, hs, t.end)
	auth := min(t.auth, end)
	if auth <= hs {
		return out
	}
	host := decodeToken(code[hs:auth], auth-hs)
	if at := strings.LastIndexByte(host, '@'); at >= 0 {
		host = host[at+1:]
	}
	var after byte
	if auth < len(code) {
		after = code[auth]
	}
	if !localLiteralHost(host, after) {
		return out
	}
	if !t.esc {
		return append(out, "http:"+code[s:end])
	}
	return append(out, "http://"+decodeToken(code[hs:end], auth-hs))
}

// localLiteralHost reports whether host (with an optional port) names a
// literal that no DNS answer can change and that is local, metadata, or an
// IP address: see schemeRelative. after is the byte after the authority;
// a short numeric host ("//1.5 seconds") counts only when a path, query
// or port follows it.
func localLiteralHost(host string, after byte) bool {
	if strings.HasPrefix(host, "[") {
		return strings.IndexByte(host, ']') > 1
	}
	port := false
	if k := strings.LastIndexByte(host, ':'); k >= 0 {
		for _, b := range []byte(host[k+1:]) {
			if !isDigit(b) {
				return false
			}
		}
		host, port = host[:k], true
	}
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	switch h {
	case "localhost", "metadata.google.internal", "metadata.goog", "metadata", "instance-data":
		return true
	}
	if strings.HasSuffix(h, ".localhost") {
		return true
	}
	parts, hex := 0, false
	for _, p := range strings.Split(h, ".") {
		parts++
		switch {
		case len(p) >= 2 && p[0] == '0' && p[1] == 'x':
			hex = true
			for i := 2; i < len(p); i++ {
				if !isHex(p[i]) {
					return false
				}
			}
		case p == "":
			return false
		default:
			for i := 0; i < len(p); i++ {
				if !isDigit(p[i]) {
					return false
				}
			}
		}
	}
	switch {
	case parts > 4:
		return false
	case parts == 4 || hex:
		return true
	case parts == 1:
		return len(h) >= 8 || port
	}
	return port || after == '/' || after == '?' || after == '#'
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
// including JSON, JavaScript and HTML spellings of a slash ("\/", "\u002f",
// "\x2f", "&#47;"), and returns where the host starts and how many slashes
// the run means.
func slashRun(code string, q int) (int, int) {
	n := 0
	for q < len(code) {
		switch code[q] {
		case '/':
			q++
			n++
		case '&':
			r, k := entityAt(code, q)
			if k == 0 || r != '/' && r != '\\' {
				return q, n
			}
			q += k
			n++
		case '\\':
			if r, k := escapeAt(code, q); k > 0 {
				if r != '/' && r != '\\' {
					return q, n
				}
				q += k
				n++
				continue
			}
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
		default:
			return q, n
		}
	}
	return q, n
}

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

// scanToken reads a URL forward from p, in one pass. It ends at a
// terminator (space, quote, backtick, '<', '>', control byte), at a
// backslash that is not an escape the scanner decodes, at an escaped tab
// or newline, or at a placeholder.
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
			if r, n := escapeAt(code, i); n > 0 && i+n <= lim {
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
			if n == 0 || i+n > lim {
				i++
				continue
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

// escapeAt decodes the source-string escape that starts with the single
// backslash at code[i]: \t \n \r, \xHH, \uHHHH, \u{H…}, \UHHHHHHHH and
// three-digit octal \ooo (JavaScript, Python, Go, C). n is its length, 0
// when there is none.
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
			for k < len(code) && k-(i+3) < 6 && isHex(code[k]) {
				v = v<<4 | hexVal(code[k])
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
// that matters in an authority.
var namedRefs = map[string]rune{
	"colon": ':', "period": '.', "commat": '@', "sol": '/', "bsol": '\\',
	"quest": '?', "num": '#', "percnt": '%', "lsqb": '[', "rsqb": ']',
	"lbrack": '[', "rbrack": ']', "Tab": '\t', "NewLine": '\n', "amp": '&',
	"hyphen": '-', "dash": '-', "lowbar": '_', "excl": '!', "dollar": '$',
}

// entityAt decodes the HTML character reference at code[i] == '&':
// &#DDD;, &#xHH; or one of namedRefs, with its semicolon. n is its length,
// 0 when there is none.
func entityAt(code string, i int) (r rune, n int) {
	j := i + 1
	if j < len(code) && code[j] == '#' {
		j++
		hex := j < len(code) && code[j]|0x20 == 'x'
		if hex {
			j++
		}
		v, k := 0, j
		for k < len(code) && k-j < 7 {
			b := code[k]
			if hex && isHex(b) {
				v = v<<4 | hexVal(b)
			} else if !hex && isDigit(b) {
				v = v*10 + int(b-'0')
			} else {
				break
			}
			k++
		}
		if k == j || k >= len(code) || code[k] != ';' || v > utf8.MaxRune {
			return 0, 0
		}
		return rune(v), k + 1 - i
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
	return append(out, "http://"+decodeToken(code[hs:end], d-hs))
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
