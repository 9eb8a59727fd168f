package urlscan

// A scheme name need not be spelled in plain letters for the browser to
// read it: "\x68ttp:" is http: in a JavaScript string, "&#104;ttp:" in an
// HTML attribute, and Chromium strips a tab or newline anywhere in a URL,
// so "ht\ttp:" and "ht&Tab;tp:" are http: as well. The colon can be spelled
// too ("http&colon;", "http\u003a"). This file reads such a name backwards
// from its colon.

// unit is one character of the source as a string or an HTML attribute
// reads it: r, spelled by code[j:i] for the i it was found before.
type unit struct {
	r rune
	j int
}

// units holds the candidates unitsBefore finds; there are never more than
// a few.
type units struct {
	buf [6]unit
	n   int
}

func (us *units) list() []unit { return us.buf[:us.n] }

func (us *units) add(r rune, j int) {
	if us.n < len(us.buf) {
		us.buf[us.n] = unit{r, j}
		us.n++
	}
}

// try adds the escape or reference at j if the forward decoder reads it
// as ending exactly at i, so a backwards guess never invents a character.
func (us *units) try(code string, j, i int) {
	if j < 0 || j >= i {
		return
	}
	if r, n := decodedAt(code, j); n == i-j && r >= 0 {
		us.add(r, j)
	}
}

// unitsBefore finds every way the source can spell one character that
// ends at i: the byte itself, or a string escape or character reference
// that ends there.
func unitsBefore(code string, i int, us *units) {
	us.n = 0
	if i <= 0 {
		return
	}
	b := code[i-1]
	us.add(rune(b), i-1)
	if i >= 2 && code[i-2] == '\\' {
		if isIdentityEscape(b) {
			us.add(rune(b), i-2)
		} else {
			us.try(code, i-2, i) // \t \n \r
		}
	}
	switch {
	case b == '}':
		// \u{…}: back over the digits to the brace.
		us.try(code, hexRunBack(code, i-1)-3, i)
	case b == ';':
		// &name; &#DDD; &#xHH;
		k := i - 1
		for k > 0 && i-k <= 10 && isLetter(code[k-1]) {
			k--
		}
		if k > 0 && code[k-1] == '&' {
			us.try(code, k-1, i)
			break
		}
		us.refBefore(code, hexRunBack(code, i-1), i)
	case isHex(b):
		us.try(code, i-4, i)  // \xHH and octal \ooo
		us.try(code, i-6, i)  // \uHHHH
		us.try(code, i-10, i) // \UHHHHHHHH
		// &#DDD and &#xHH without the semicolon.
		us.refBefore(code, hexRunBack(code, i), i)
	}
}

// hexRunBack is where the run of hex digits that ends at i starts, looked
// for no further back than an escape can be long: a longer run is no
// escape the forward decoders read, and the bound keeps every look-back
// short.
func hexRunBack(code string, i int) int {
	k := i
	for k > 0 && i-k < maxEscape && isHex(code[k-1]) {
		k--
	}
	return k
}

// refBefore tries the numeric character reference whose digits start at k
// and that ends at i.
func (us *units) refBefore(code string, k, i int) {
	switch {
	case k >= 2 && code[k-1] == '#' && code[k-2] == '&':
		us.try(code, k-2, i)
	case k >= 3 && code[k-1]|0x20 == 'x' && code[k-2] == '#' && code[k-3] == '&':
		us.try(code, k-3, i)
	}
}

// mayEndSpelling marks the bytes a spelled scheme name (or the tabs and
// newlines around it) can end with: the last byte of an escape or a
// character reference, a tab or newline, or the backslash of an identity
// escape before a letter.
var mayEndSpelling = func() (t [256]bool) {
	for _, b := range []byte("0123456789abcdefABCDEF};\\\t\n\r") {
		t[b] = true
	}
	return t
}()

// maxSpelledTail is how far past the end of its last escape or reference
// a spelled scheme name can reach its colon: the plain letters of the
// longest name, with room for tabs and newlines.
const maxSpelledTail = 48

// spelledSchemeBefore finds a scanned scheme whose name, spelled in any of
// the ways above, ends at the colon at c, and where that spelling starts.
// It is only asked when the plain-letter match failed, and only when a
// spelling can sit before c: an escape whose name tail ends at c
// (nameTailEnd), or a raw tab or newline before it or before the plain
// letters that end a name (schemeBefore).
func spelledSchemeBefore(code string, c int) (*scheme, int) {
	i := skipBreaksBack(code, c)
	var us units
	unitsBefore(code, i, &us)
	for _, u := range us.list() {
		if u.r >= 0x80 {
			continue
		}
		for _, sch := range endingIn[byte(u.r)|0x20] {
			if len(sch.name) == 1 {
				return sch, u.j
			}
			if j := matchBack(code, skipBreaksBack(code, u.j), sch.name[:len(sch.name)-1]); j >= 0 {
				return sch, j
			}
		}
	}
	return nil, -1
}

// nameTailEnd is where the run of letters, '-', tabs and newlines that
// starts at i ends: the only place a colon can end a scheme name whose last
// escape or reference ends at i. A run longer than maxSpelledTail ends
// nowhere (-1).
func nameTailEnd(code string, i int) int {
	for k := i; k < len(code) && k-i <= maxSpelledTail; k++ {
		if b := code[k]; !isLetter(b) && b != '-' && !isBreak(b) {
			return k
		}
	}
	return -1
}

func isBreak(b byte) bool { return b == '\t' || b == '\n' || b == '\r' }

// matchBack returns where a spelling of name that ends at i starts, or -1.
// Tabs and newlines between its characters are skipped, as Chromium
// strips them; letters match in any case.
func matchBack(code string, i int, name string) int {
	want := rune(name[len(name)-1])
	var us units
	unitsBefore(code, i, &us)
	for _, u := range us.list() {
		r := u.r
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		if r != want {
			continue
		}
		if len(name) == 1 {
			return u.j
		}
		if j := matchBack(code, skipBreaksBack(code, u.j), name[:len(name)-1]); j >= 0 {
			return j
		}
	}
	return -1
}

// skipBreaksBack moves i back over the tabs and newlines, in any spelling,
// that end at it.
func skipBreaksBack(code string, i int) int {
	for i > 0 && (mayEndSpelling[code[i-1]] || i > 1 && code[i-2] == '\\') {
		var us units
		unitsBefore(code, i, &us)
		moved := false
		for _, u := range us.list() {
			if isTabOrNewline(u.r) {
				i, moved = u.j, true
				break
			}
		}
		if !moved {
			return i
		}
	}
	return i
}
