// Package urlscan finds the URL literals in the code of a browser call, so
// that every URL the call names is decided before any browser sees it. The
// code may be in any language an agent writes (JavaScript, TypeScript,
// Python, Go, shell, JSON, HTML); the scan knows none of them and looks only
// at what surrounds each ':' and each "//", and at the '\' and '&' that may
// spell one.
//
// The scan runs in front of every browser call, so it is one forward pass
// that jumps between those bytes with strings.IndexByte and strings.Index
// and inspects only the few bytes around each. There is no regexp and no
// backtracking: every look-back and look-ahead is bounded, and the one long
// look-ahead (past the length cap) is memoised so that no byte is read by it
// twice.
//
// Its bias is fail-closed (docs/decisions/2026-12-01-the-scanner-reports-every-reading.md):
// where the source language is ambiguous (a `\.` means "." in JavaScript but
// stays a backslash in Python, and Chromium treats that backslash as the end
// of the host), the scanner reports every reading. Where the bytes in the
// source are not the bytes the browser gets, it decodes them: string escapes
// (\xHH, \uHHHH, \u{H…} with any number of digits, \UHHHHHHHH, three-digit
// octal) anywhere in a URL, HTML character references (&#58;, &#x3a;,
// &#0000058 without its ';', &colon;, &commat;, …) in its scheme, its slashes
// and its authority, and ASCII tab and newline, which Chromium strips
// anywhere in a URL, the scheme name included ("\x68ttp:", "ht&Tab;tp:",
// "http&colon;" are all http:). An escape too long to read to its end is
// treated as the length cap.
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
// met by the layers behind the scan: the in-browser guard, the check of the
// URL the browser landed on, and, on the local browser, the connect-time
// check of every dialled address.
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
// is indistinguishable from an object key. A scheme-relative URL ("//host",
// or "\\host", "/\host", "\/\/host", which Chromium folds to it) that opens
// a string or an attribute value is reported whatever its host; elsewhere
// only with a local-looking host, since "// comment" and "//example.com"
// are everywhere in code.
//
// A data: URL is reported whole: it loads nothing from the network, but the
// document it holds does. ExpandData decodes it and scans that document.
package urlscan

import (
	"strings"
)

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

// schemeKind decides how the bytes after "scheme:" are read.
type schemeKind uint8

const (
	// kindHost schemes (http, https, ws, wss, ftp) are WHATWG "special":
	// Chromium accepts any run of '/' and '\' after the colon, even none.
	kindHost schemeKind = iota
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
	// kindData is data:, reported whole for ExpandData to read.
	kindData
)

// scheme is one scanned scheme: its lower-case name, how the rest of its
// URL is read, and the "name://" a reading of it starts with.
type scheme struct {
	name   string
	kind   schemeKind
	prefix string
}

// schemes are the scanned schemes.
var schemes = [...]scheme{
	{"http", kindHost, "http://"},
	{"https", kindHost, "https://"},
	{"ws", kindHost, "ws://"},
	{"wss", kindHost, "wss://"},
	{"ftp", kindHost, "ftp://"},
	{"file", kindFile, "file://"},
	{"chrome", kindOpaque, "chrome://"},
	{"chrome-untrusted", kindOpaque, "chrome-untrusted://"},
	{"devtools", kindOpaque, "devtools://"},
	{"view-source", kindViewSource, "view-source:"},
	{"data", kindData, "data:"},
}

// endingIn indexes schemes by the last letter of the name, lower-cased, so
// the common colon (an object key, a type annotation) costs one load.
var endingIn = func() (t [256][]*scheme) {
	for i := range schemes {
		s := &schemes[i]
		last := s.name[len(s.name)-1]
		t[last] = append(t[last], s)
	}
	return t
}()

// beforeLast holds, for the last letter of each scanned scheme name (in
// either case), the letters that come before it in a name, as bit l-'a'
// for letter l. A colon whose two bytes before fit no name is dismissed
// with two loads, unless a tab, newline or escape sits there.
var beforeLast = func() (t [256]uint32) {
	for _, sch := range schemes {
		n := sch.name
		last, prev := n[len(n)-1], n[len(n)-2]
		t[last] |= 1 << (prev - 'a')
		t[last&^0x20] |= 1 << (prev - 'a')
	}
	return t
}()

// mayEndName reports whether the two bytes before a colon, b and the p
// before it, can end a scheme name in plain letters or across a raw tab
// or newline.
func mayEndName(p, b byte) bool {
	return isBreak(b) || isBreak(p) || isLetter(p) && beforeLast[b]>>(p|0x20-'a')&1 != 0
}

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

// scanner is one Scan call: the code, what it has reported so far, and what
// it remembers between URLs so that the look-aheads stay linear in total.
type scanner struct {
	code string
	out  []string

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
	noBareUntil int
	// relUntil is where the host of the last scheme-relative URL looked
	// at starts: an anchor inside its slash run was already read with it.
	relUntil int
	// spellColon is the one place after the last escape or character
	// reference read where a colon can end a scheme name spelled with it
	// (see nameTailEnd).
	spellColon int

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

	// dataUntil is where the last data: URL reported ends; a data: URL
	// inside it is read by ExpandData, as the browser decodes it.
	dataUntil int
	// dataTooLarge says a data: URL longer than maxData was reported.
	dataTooLarge bool
}

// Scan returns the URL literals in code, in order of first appearance,
// deduplicated.
//
// It reports absolute URLs of the schemes http, https, ws, wss, ftp, file,
// chrome, chrome-untrusted, devtools and view-source, in any case and in any
// spelling of the scheme name and its colon; data: URLs, whole; bare
// host:port tokens whose host is localhost, *.localhost, a dotted IPv4
// literal or a bracketed IPv6 literal (reported as http); and
// scheme-relative URLs (reported as http): any host where the slashes open
// a string or an attribute value, otherwise a host that is an IPv4 or
// bracketed IPv6 literal, localhost, *.localhost or a metadata name.
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
func Scan(code string) []string {
	s := scanner{code: code}
	s.run()
	return dedup(s.out)
}

func (s *scanner) run() {
	code := s.code
	a := anchors{ss: nextSlashSlash(code, 0), bs: nextByte(code, 0, '\\'), amp: nextByte(code, 0, '&')}
	next := a.first()
	for i := 0; ; {
		j := strings.IndexByte(code[i:], ':')
		c := len(code)
		if j >= 0 {
			c = i + j
		}
		if next < c {
			next = s.anchorsBefore(c, &a)
		}
		if j < 0 {
			break
		}
		i = c + 1
		if c == 0 || c < s.noBareUntil && s.inReadAuthority(c, c+1) {
			continue
		}
		// Most colons in code are object keys, annotations and ternaries:
		// the two bytes before dismiss them.
		if c == s.spellColon || c >= 2 && mayEndName(code[c-2], code[c-1]) {
			if s.colon(c, c+1) {
				continue
			}
		}
		if c+1 < len(code) && isDigit(code[c+1]) {
			s.bareHostPort(c)
		}
	}
}

// anchors are the next "//" pair, '\\' and '&' of the scan (noAnchor when
// there is none).
type anchors struct{ ss, bs, amp int }

const noAnchor = int(^uint(0) >> 1)

func (a *anchors) first() int { return min(a.ss, a.bs, a.amp) }

// anchorsBefore reads, in order, the anchors before the colon at c: "//"
// pairs, and the '\\' and '&' that may spell a colon or a slash. It
// returns the first anchor after them.
func (s *scanner) anchorsBefore(c int, a *anchors) int {
	code := s.code
	for {
		switch e := a.first(); {
		case e >= c:
			return e
		case e == a.ss:
			s.relative(e)
			a.ss = nextSlashSlash(code, e+2)
		case e == a.bs:
			s.escape(e)
			a.bs = nextByte(code, e+1, '\\')
		default:
			s.escape(e)
			a.amp = nextByte(code, e+1, '&')
		}
	}
}

// colon reads the URL, if any, whose scheme ends at the colon code[c:ce]
// (a ':' or a spelling of one), and reports whether it found one.
func (s *scanner) colon(c, ce int) bool {
	code := s.code
	if c == 0 {
		return false
	}
	var sch *scheme
	brk := false
	start := 0
	b := code[c-1]
	if cands := endingIn[b|0x20]; cands != nil {
		if sch, brk = schemeBefore(code, c, cands); sch != nil {
			start = c - len(sch.name)
		}
	}
	if sch == nil {
		if !brk && !isBreak(b) && c != s.spellColon {
			return false
		}
		if sch, start = spelledSchemeBefore(code, c); sch == nil {
			return false
		}
	}
	if sch.kind == kindData {
		return s.dataURL(start, c, ce)
	}
	auth, found := s.schemeURL(start, c, ce, sch)
	if found {
		s.noBareUntil = max(s.noBareUntil, auth)
	}
	return found
}

// inReadAuthority reports whether the colon code[c:ce] sits in the
// authority of a URL already reported, with no slash after it (see
// noBareUntil).
func (s *scanner) inReadAuthority(c, ce int) bool {
	if c >= s.noBareUntil || ce >= len(s.code) {
		return false
	}
	switch s.code[ce] {
	case '/':
		return false
	case '\\', '&':
		r, n := decodedAt(s.code, ce)
		return n > 0 && r != '/' && r != '\\' || n == 0 && s.code[ce] == '&'
	}
	return true
}

// escape looks at the '\\' or '&' at e: a spelled colon may end a scheme
// name, and a spelled slash (or, in an attribute, any backslash) may start
// a scheme-relative URL. A backslash can be both: "/\u003a@host" is a
// colon in a string literal and "/\" before a host in an attribute.
func (s *scanner) escape(e int) {
	code := s.code
	r, n := decodedAt(code, e)
	if n > 0 && r == ':' && !s.inReadAuthority(e, e+n) {
		s.colon(e, e+n)
	}
	switch {
	case n > 0 && r >= 0:
		s.spellColon = nameTailEnd(code, e+n)
	case code[e] == '\\' && e+1 < len(code) && isLetter(code[e+1]):
		s.spellColon = nameTailEnd(code, e+2) // an identity escape ("\h")
	}
	// A scheme-relative run needs two slashes: this backslash (or what it
	// spells) and a slash before it or a slash-like byte after it.
	if code[e] == '\\' && (e > 0 && code[e-1] == '/' || e+1 < len(code) && (code[e+1] == '\\' || code[e+1] == '/' || code[e+1] == '&') || n > 0 && (r == '/' || r == '\\')) ||
		code[e] == '&' && n > 0 && (r == '/' || r == '\\') {
		if e > 0 && code[e-1] == '/' {
			e--
		}
		s.relative(e)
	}
}

// nextByte is the index of the next b at or after i, or noAnchor.
func nextByte(code string, i int, b byte) int {
	if i >= len(code) {
		return noAnchor
	}
	j := strings.IndexByte(code[i:], b)
	if j < 0 {
		return noAnchor
	}
	return i + j
}

// nextSlashSlash is the index of the next "//" at or after i, or noAnchor.
func nextSlashSlash(code string, i int) int {
	if i >= len(code) {
		return noAnchor
	}
	j := strings.Index(code[i:], "//")
	if j < 0 {
		return noAnchor
	}
	return i + j
}

// schemeBefore returns the scanned scheme among cands whose name ends just
// before the colon at c in plain letters, of any case ('\r' never passes
// for '-'). It matches a suffix of whatever precedes, so "xhttp:" yields
// http: glued prefixes are the scanner failing closed, not a parse of the
// word. When none matches, brk says that a raw tab or newline sits before
// the plain letters that end one of the names: Chromium strips it, so the
// name may still be spelled across it.
func schemeBefore(code string, c int, cands []*scheme) (sch *scheme, brk bool) {
	if c < 2 {
		return nil, false
	}
	// Every name has two letters or more, and most colons fail on the
	// letter before the last.
	prev := code[c-2]
	if 'A' <= prev && prev <= 'Z' {
		prev += 'a' - 'A'
	}
	for _, cand := range cands {
		name := cand.name
		if prev != name[len(name)-2] {
			continue
		}
		k := 2
		for k < len(name) && k < c {
			b := code[c-1-k]
			if 'A' <= b && b <= 'Z' {
				b += 'a' - 'A'
			}
			if b != name[len(name)-1-k] {
				break
			}
			k++
		}
		if k == len(name) {
			return cand, false
		}
		if k < c && isBreak(code[c-1-k]) {
			brk = true
		}
	}
	return nil, brk || isBreak(code[c-2])
}

// endsFold reports whether code[:c] ends with the lower-case ASCII word w,
// ignoring the case of letters only.
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

// schemeURL reads the URL whose scheme name, spelled by code[start:c],
// ends at the colon code[c:ce], and reports what it finds. auth is where the raw authority ends, so the caller can
// skip its port colon; found is false when nothing was reported.
func (s *scanner) schemeURL(start, c, ce int, sch *scheme) (auth int, found bool) {
	code := s.code
	q, slashes := ce, 0
	if sch.kind != kindViewSource {
		q, slashes = slashRun(code, ce)
	}
	if slashes == 0 {
		switch sch.kind {
		case kindFile, kindOpaque:
			return 0, false
		case kindHost:
			// "http:localhost" is a URL to Chromium, but "fetchHttp:x" in
			// an object literal is not, so without slashes the scheme must
			// stand alone. A letter after a backslash is an escape
			// ("\nhttp:host"), so the word still starts there.
			if start > 0 && isWordByte(code[start-1]) &&
				!(isLetter(code[start-1]) && start >= 2 && code[start-2] == '\\') {
				return 0, false
			}
		}
	}

	if sch.kind == kindHost && q < len(code) && code[q] == '\\' {
		// "http:\127.0.0.1" is an octal escape ("W.0.0.1") in a string
		// literal and a slash before the host in an attribute, where
		// Chromium reads 127.0.0.1: the second reading as well.
		if q+1 < len(code) && isOctal(code[q+1]) {
			s.emit(-1, q+1, s.token(q+1), sch.prefix, false)
		}
	}
	hs := q
	t := s.token(hs)
	if sch.kind == kindViewSource {
		end := trimEnd(code, hs, t.end)
		if end == hs {
			return 0, false
		}
		if !t.esc && code[start:hs] == sch.prefix {
			s.out = append(s.out, code[start:end])
		} else {
			s.out = append(s.out, sch.prefix+decodeToken(code[hs:end], min(t.auth, end)-hs))
		}
		return 0, true
	}

	prefix := schemePrefix(sch, slashes)
	n0 := len(s.out)
	if t.cut && t.inAuth {
		// A placeholder inside the authority: "{user}@host" still has a
		// literal host after the '@', "host:${port}" and "host${path}"
		// have one before the placeholder, and "{host}" has none at all.
		if at := s.userinfoAt(t.end); at >= 0 {
			hs = at + 1
			t = s.token(hs)
		}
		if t.cut && t.inAuth && !literalHostBefore(code, hs, t.end) {
			return t.end, false
		}
	}
	exact := hs == q && code[start:q] == prefix
	s.emit(start, hs, t, prefix, exact)

	if t.inAuth && !t.cut {
		// The token stopped inside the authority: the browser may see more.
		qt, qesc := s.openerAt(start)
		if t.capped {
			// An authority longer than the cap: find the host after an '@'
			// beyond it, or make sure the truncated one fails its verdict.
			if h := s.far(t.end); h >= 0 {
				s.emit(-1, h, s.token(h), prefix, false)
			} else if !s.truncated {
				// One unparseable reading blocks the whole call, so it is
				// reported once: a megabyte of "http:" must not allocate
				// a truncated copy per colon.
				s.truncated = true
				s.out = append(s.out, prefix+decodeToken(code[hs:t.end], t.end-hs)+":truncated-authority")
			}
		} else {
			if s.isBreakStop(t, qt) && hs >= s.joinedUntil {
				s.join(hs, t, qt, prefix)
			}
			if !s.cleanStop(t.end, qt, qesc) {
				if h := s.atAhead(t.end, t.end+nearLook, qt, qesc); h >= 0 {
					s.emit(-1, h, s.token(h), prefix, false)
				}
			}
		}
	}
	return t.auth, len(s.out) > n0
}

// emit reports the reading of the token t that starts at hs, and the cut
// reading at an ambiguous escape in its host. start is where the scheme
// starts in the code when exact says code[start:hs] is already prefix, so
// the result can be a substring.
func (s *scanner) emit(start, hs int, t token, prefix string, exact bool) {
	code := s.code
	end := trimEnd(code, hs, t.end)
	if end == hs {
		return
	}
	auth := min(t.auth, end)
	if exact && !t.esc {
		s.out = append(s.out, code[start:end])
	} else {
		if end-auth > maxRebuiltPath {
			// A rebuilt reading is a copy; its path decides nothing, and
			// a megabyte of "http:/" must not copy 4 KiB per colon.
			end = trimEnd(code, hs, auth+maxRebuiltPath)
		}
		s.out = append(s.out, prefix+decodeToken(code[hs:end], auth-hs))
	}
	if t.ambig >= 0 && t.ambig < auth {
		// Python keeps "\." as a backslash, which Chromium reads as the
		// start of the path: http://127.0.0.1\.nip.io is then 127.0.0.1.
		if e := trimEnd(code, hs, t.ambig); e > hs {
			if exact && !strings.ContainsAny(code[hs:e], `\&`) {
				s.out = append(s.out, code[start:e])
			} else {
				s.out = append(s.out, prefix+decodeToken(code[hs:e], e-hs))
			}
		}
	}
}

// literalHostBefore reports whether code[hs:end], the literal text before a
// placeholder in an authority, is a host worth reporting (see the package
// documentation for the rules).
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

// schemePrefix is the normalised "scheme://" for a URL.
func schemePrefix(sch *scheme, slashes int) string {
	if sch.kind != kindFile {
		return sch.prefix
	}
	switch {
	case slashes >= 3:
		return "file://" + strings.Repeat("/", slashes-2)
	case slashes == 2:
		return "file://"
	}
	// file:/etc and file://etc... both mean a path to Chromium only
	// when the run is short; "file:/x" is file:///x.
	return "file:///"
}

// slashRun skips the '/' and '\' Chromium accepts after a special scheme,
// including JSON, JavaScript and HTML spellings of a slash ("\/", "\u002f",
// "\x2f", "&#47;") and the tabs and newlines Chromium strips, and returns
// where the host starts and how many slashes the run means.
func slashRun(code string, q int) (int, int) {
	n := 0
	for q < len(code) {
		switch code[q] {
		case '/':
			q++
			n++
		case '\t', '\n', '\r':
			q++
		case '&':
			r, k := entityAt(code, q)
			if k == 0 || r != '/' && r != '\\' && !isTabOrNewline(r) {
				return q, n
			}
			q += k
			if !isTabOrNewline(r) {
				n++
			}
		case '\\':
			if r, k := escapeAt(code, q); k > 0 {
				if r != '/' && r != '\\' && !isTabOrNewline(r) {
					return q, n
				}
				q += k
				if !isTabOrNewline(r) {
					n++
				}
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
