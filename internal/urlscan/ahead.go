package urlscan

import (
	"strings"

	"github.com/hybroute/hybroute/internal/whatwg"
)

// What the scan does when a URL stops on a byte that may not end it for the
// browser: look ahead for a userinfo's '@', and join readings across the
// tabs and newlines Chromium strips.

// userinfoAt looks past a placeholder for the '@' that would end a
// userinfo, within the authority, and returns its index or -1.
func (s *scanner) userinfoAt(i int) int {
	code := s.code
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

// openerAt is the quote that opens the string a URL starting at st sits in
// (0 when the byte before it is not a quote), and whether that quote is
// itself escaped (a string inside a string).
func (s *scanner) openerAt(st int) (byte, bool) {
	if st == 0 {
		return 0, false
	}
	switch b := s.code[st-1]; b {
	case '"', '\'', '`':
		return b, st >= 2 && s.code[st-2] == '\\'
	}
	return 0, false
}

// cleanStop reports whether the byte a token stopped on at e closes the
// URL for sure: the quote that opened its string, or, outside a string,
// whitespace and '>'.
func (s *scanner) cleanStop(e int, q byte, qesc bool) bool {
	code := s.code
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
func (s *scanner) isBreakStop(t token, q byte) bool {
	if !t.inAuth || t.cut || t.end >= len(s.code) {
		return false
	}
	if t.brk > 0 {
		return true
	}
	b := s.code[t.end]
	return q != 0 && (b == '\t' || b == '\n' || b == '\r')
}

// breakLen is the length of the tab/newline (raw, escaped or a character
// reference) at i, or 0.
func breakLen(code string, i int) int {
	switch code[i] {
	case '\t', '\n', '\r':
		return 1
	case '\\', '&':
		if r, n := decodedAt(code, i); n > 0 && isTabOrNewline(r) {
			return n
		}
	}
	return 0
}

// join reports the reading of the URL at hs with the tabs and newlines in
// its authority removed, as Chromium reads it ("metadata.google\t.internal"
// is metadata.google.internal). The reading is kept only if it parses: a
// joined string Chromium refuses is not one the browser can open, and the
// reading cut at the break is reported anyway.
func (s *scanner) join(hs int, t token, q byte, prefix string) {
	code := s.code
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
		t2 := s.token(p)
		if t2.end == p {
			break
		}
		b.WriteString(decodeToken(code[p:t2.end], min(t2.auth, t2.end)-p))
		p = t2.end
		if !s.isBreakStop(t2, q) {
			break
		}
	}
	s.joinedUntil = p
	u := b.String()
	u = u[:trimEnd(u, len(prefix), len(u))]
	if len(u) == len(prefix) {
		return
	}
	if _, err := whatwg.Parse(u); err != nil {
		return
	}
	s.out = append(s.out, u)
}

// atAhead looks from i, up to lim and on the same line, for the '@' that
// would end a userinfo and returns where the host after it starts, or -1.
// It stops where the authority would end for Chromium ('/', '?', '#', a
// backslash that is not an escape) and at the unescaped quote q that closes
// the string (q == 0: no string to close). Escapes and character
// references are decoded on the way, so "\u0040" and "&#64;" count.
func (s *scanner) atAhead(i, lim int, q byte, qesc bool) int {
	h, _, _ := s.atAheadEnd(i, lim, q, qesc)
	return h
}

// atAheadEnd is atAhead that also returns where it stopped and whether it
// decided (false: it reached lim).
func (s *scanner) atAheadEnd(i, lim int, q byte, qesc bool) (host, stop int, decided bool) {
	code := s.code
	lim = min(lim, len(code))
	for i < lim {
		switch b := code[i]; b {
		case '@':
			return i + 1, i, true
		case '/', '?', '#', '\n':
			return -1, i, true
		case '\\', '&':
			if r, n := decodedAt(code, i); n > 0 {
				switch r {
				case '@':
					return i + n, i, true
				case '/', '?', '#', '\\':
					return -1, i, true
				}
				i += n
				continue
			}
			if b == '&' {
				i++
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
func (s *scanner) far(from int) int {
	lim := min(len(s.code), from+farLook)
	if from >= s.farLo && from < s.farHi {
		if s.farDone {
			return s.farRes
		}
		from = s.farHi
	} else {
		s.farLo = from
	}
	h, stop, done := s.atAheadEnd(from, lim, 0, false)
	s.farRes, s.farDone = h, done
	s.farHi = stop
	if done {
		s.farHi = stop + 1
	}
	return h
}
