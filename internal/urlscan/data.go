package urlscan

import (
	"encoding/base64"
	"strings"
	"unicode/utf16"
)

// A data: URL loads nothing from the network itself, but the document it
// holds does: an HTML or SVG payload names images, frames, scripts and
// links like any page. So Scan reports data: URLs as literals, and
// ExpandData decodes them and scans what they hold as the code of a call.

const (
	// maxData bounds a data: URL read from code. A longer one is reported
	// as unreadable: its tail, which the scan did not read, could name
	// anything.
	maxData = 1 << 20
	// maxDataDepth bounds how deep data: URLs nest inside data: URLs.
	maxDataDepth = 4
	// maxDataBytes bounds what ExpandData decodes for one list, all
	// depths and readings together.
	maxDataBytes = 4 << 20
)

// The readings that stand for a data: URL whose content was not read.
// Each parses as a URL with an invalid port, so its verdict fails and the
// call is refused rather than planned on what was not seen.
const (
	dataUnreadable = "http://data-url:undecodable"
	dataTooDeep    = "http://data-url:nested-too-deep"
	dataTooLarge   = "http://data-url:too-large"
)

// dataURL reads the data: URL whose scheme, spelled by code[start:c], ends
// at the colon code[c:ce], and reports it as the browser gets it (string
// escapes and character references decoded). A data: URL ends with the
// string it sits in; outside a string, at whitespace, a quote or '>'.
// Without a comma it loads nothing and is not reported.
func (s *scanner) dataURL(start, c, ce int) bool {
	code := s.code
	if ce <= s.dataUntil {
		// Inside a data: URL already reported: ExpandData reads it
		// there, decoded as the browser decodes it.
		return false
	}
	if start > 0 && isWordByte(code[start-1]) &&
		!(isLetter(code[start-1]) && start >= 2 && code[start-2] == '\\') {
		return false // "metadata:", "userdata:"
	}
	var end int
	if q, qesc := s.openerAt(start); q != 0 {
		end = closerAfter(code, ce, q, qesc)
	} else {
		// Outside a string "data: x" is an object key; a data: URL
		// starts right after its colon.
		if ce >= len(code) || tokClass[code[ce]] == cTerm {
			return false
		}
		end = ce
		for end < len(code) && end-ce <= maxData && !isDataTerm(code[end]) {
			end++
		}
		end = trimEnd(code, ce, end)
	}
	if end-ce > maxData {
		s.dataUntil = end
		if !s.dataTooLarge {
			s.dataTooLarge = true
			s.out = append(s.out, dataTooLarge)
		}
		return true
	}
	// The URL as the browser gets it: escapes and references decoded.
	u := code[start:end]
	if code[start:ce] != "data:" || strings.IndexByte(code[ce:end], '\\') >= 0 || strings.IndexByte(code[ce:end], '&') >= 0 {
		u = "data:" + decodeToken(code[ce:end], end-ce)
	}
	comma := strings.IndexByte(u, ',')
	if comma < 0 {
		return false
	}
	if isBase64Header(u[:comma]) {
		if p := cutBase64AtPlaceholder(u[comma+1:]); len(p) < len(u)-comma-1 {
			u = u[:comma+1] + p
		}
	}
	s.dataUntil = end
	s.out = append(s.out, u)
	return true
}

// closerAfter is where the string that a quote q opened before i closes:
// the next q that no backslash escapes (for an escaped opener, the next
// backslash-escaped q). It looks no further than maxData.
func closerAfter(code string, i int, q byte, qesc bool) int {
	lim := min(len(code), i+maxData+1)
	for i < lim {
		k := strings.IndexByte(code[i:lim], q)
		if k < 0 {
			return lim
		}
		k += i
		bs := 0
		for bs < k-i && code[k-1-bs] == '\\' {
			bs++
		}
		if qesc && bs%2 == 1 || !qesc && bs%2 == 0 {
			if qesc {
				return k - 1
			}
			return k
		}
		i = k + 1
	}
	return lim
}

// isDataTerm ends a data: URL outside a string.
func isDataTerm(b byte) bool {
	switch b {
	case '"', '\'', '`', '>', ' ', 0x7f:
		return true
	}
	return b < 0x20
}

// isBase64Header reports whether the part of a data: URL before its comma
// asks for base64: one of its ';'-separated parameters is "base64" (in any
// case, spaces around it allowed). That is looser than the standard's "ends
// with ;base64", so a payload the browser decodes is never read as text.
func isBase64Header(h string) bool {
	for {
		k := strings.IndexByte(h, ';')
		if k < 0 {
			return false
		}
		h = h[k+1:]
		p := h
		if e := strings.IndexByte(p, ';'); e >= 0 {
			p = p[:e]
		}
		if strings.EqualFold(strings.Trim(p, " \t\n\r\f"), "base64") {
			return true
		}
	}
}

// cutBase64AtPlaceholder ends a base64 payload written in code at its first
// placeholder ("data:image/png;base64,${b64}" is decoded at run time), and
// drops a last character that could not complete a byte, so that the
// literal part decodes.
func cutBase64AtPlaceholder(p string) string {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '{':
		case '$':
			if i+1 >= len(p) || !isPlaceholderAfterDollar(p[i+1]) {
				continue
			}
		case '%':
			if i+2 < len(p) && isHex(p[i+1]) && isHex(p[i+2]) {
				continue
			}
		default:
			continue
		}
		p = p[:i]
		n := 0
		for k := 0; k < len(p); k++ {
			if isBase64Byte(p[k]) {
				n++
			}
		}
		if n%4 == 1 {
			p = p[:strings.LastIndexFunc(p, func(r rune) bool { return r < 0x80 && isBase64Byte(byte(r)) })]
		}
		return p
	}
	return p
}

func isBase64Byte(b byte) bool {
	return isLetter(b) || isDigit(b) || b == '+' || b == '/'
}

// ExpandData returns urls with, after each data: URL among them, the URLs
// that the document it holds names: its payload is decoded (percent-escapes,
// and base64 where its header asks for it) and scanned like the code of a
// call, and data: URLs found there are expanded in turn. A data: URL whose
// base64 does not decode, that nests more than a few levels deep, or whose
// payloads together pass a few MiB, adds a reading whose verdict fails, so
// the call fails closed rather than run on what was not read.
//
// urls is returned as it is when it holds no data: URL; otherwise the
// result is a new, deduplicated slice. The data: URLs themselves stay in
// it: they load nothing from the network, their contents do.
func ExpandData(urls []string) []string {
	k := 0
	for k < len(urls) && !isDataURL(urls[k]) {
		k++
	}
	if k == len(urls) {
		return urls
	}
	e := expander{budget: maxDataBytes}
	out := make([]string, 0, len(urls)+4)
	out = append(out, urls[:k]...)
	for _, u := range urls[k:] {
		out = append(out, u)
		out = e.expand(out, u, 0)
	}
	return dedup(out)
}

// expander is one ExpandData call: what it may still decode.
type expander struct {
	budget int
}

func (e *expander) expand(out []string, u string, depth int) []string {
	header, body, ok := dataParts(u)
	if !ok {
		return out
	}
	if depth >= maxDataDepth {
		return append(out, dataTooDeep)
	}
	readings, ok := dataReadings(header, body)
	if !ok {
		return append(out, dataUnreadable)
	}
	for _, r := range readings {
		if len(r) > e.budget {
			return append(out, dataTooLarge)
		}
		e.budget -= len(r)
		for _, v := range Scan(r) {
			out = append(out, v)
			out = e.expand(out, v, depth+1)
		}
	}
	return out
}

// isDataURL reports whether u, as Chromium trims it, has the scheme data.
func isDataURL(u string) bool {
	_, _, ok := dataScheme(u)
	return ok
}

// dataScheme finds the scheme of u as the URL parser does (leading and
// trailing C0 controls and spaces trimmed, tabs and newlines dropped) and
// returns what follows "data:", and whether it was a tab-free spelling.
func dataScheme(u string) (rest string, tabs, ok bool) {
	u = strings.TrimFunc(u, func(r rune) bool { return r <= ' ' })
	i, k := 0, 0
	for i < len(u) && k < len("data") {
		switch b := u[i]; {
		case b == '\t' || b == '\n' || b == '\r':
			tabs = true
		case b|0x20 == "data"[k]:
			k++
		default:
			return "", false, false
		}
		i++
	}
	for i < len(u) && (u[i] == '\t' || u[i] == '\n' || u[i] == '\r') {
		tabs = true
		i++
	}
	if k < len("data") || i >= len(u) || u[i] != ':' {
		return "", false, false
	}
	return u[i+1:], tabs, true
}

// dataParts splits a data: URL into the header before its first comma and
// the body after it. ok is false for a URL that is no data: URL, or has no
// comma (Chromium then loads nothing).
func dataParts(u string) (header, body string, ok bool) {
	rest, tabs, ok := dataScheme(u)
	if !ok {
		return "", "", false
	}
	if tabs {
		// Chromium drops tabs and newlines everywhere when the scheme
		// held one; it keeps them when the URL starts with "data:".
		rest = strings.Map(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' {
				return -1
			}
			return r
		}, rest)
	}
	header, body, ok = strings.Cut(rest, ",")
	return header, body, ok
}

// dataReadings decodes the body of a data: URL into the texts to scan: the
// payload, and, where it may be in an encoding that is not ASCII-compatible,
// its transcodings. ok is false when base64 was asked for and the payload
// is not base64.
func dataReadings(header, body string) ([]string, bool) {
	header = percentDecode(header)
	p := body
	if isBase64Header(header) {
		if f := strings.IndexByte(body, '#'); f >= 0 {
			body = body[:f]
		}
		var ok bool
		if p, ok = forgivingBase64(percentDecode(body)); !ok {
			return nil, false
		}
	} else {
		// The fragment is scanned too: it costs a false positive at most.
		p = percentDecode(body)
	}
	if isRasterImage(header) {
		// A browser shows these as an image and loads nothing more;
		// their bytes are scanned as they are, never transcoded, so a
		// large photo does not use up what one call may decode.
		return []string{p}, true
	}
	return transcodings(p), true
}

// isRasterImage reports whether the media type of a data: URL's header is
// a raster image format, which no browser renders as a document.
func isRasterImage(header string) bool {
	mt, _, _ := strings.Cut(header, ";")
	switch strings.ToLower(strings.TrimSpace(mt)) {
	case "image/png", "image/jpeg", "image/jpg", "image/gif", "image/webp", "image/avif", "image/bmp", "image/x-icon", "image/vnd.microsoft.icon":
		return true
	}
	return false
}

// transcodings is p and, where a browser could decode p as something other
// than an ASCII-compatible encoding, the text it would then get: UTF-16 (a
// byte-order mark or a NUL byte gives it away) in both byte orders, and
// ISO-2022-JP, whose escape sequences a browser drops (so "ht\x1b(Btp:" is
// "http:" to it).
func transcodings(p string) []string {
	out := []string{p}
	if strings.IndexByte(p, 0) >= 0 || strings.HasPrefix(p, "\xfe\xff") || strings.HasPrefix(p, "\xff\xfe") {
		out = append(out, fromUTF16(p, false), fromUTF16(p, true))
	}
	if strings.IndexByte(p, 0x1b) >= 0 {
		var b strings.Builder
		for i := 0; i < len(p); i++ {
			if p[i] == 0x1b && i+2 < len(p) && (p[i+1] == '(' || p[i+1] == '$') {
				i += 2
				continue
			}
			b.WriteByte(p[i])
		}
		out = append(out, b.String())
	}
	return out
}

// fromUTF16 reads p as UTF-16 in the given byte order, as UTF-8.
func fromUTF16(p string, bigEndian bool) string {
	u := make([]uint16, 0, len(p)/2)
	for i := 0; i+1 < len(p); i += 2 {
		if bigEndian {
			u = append(u, uint16(p[i])<<8|uint16(p[i+1]))
		} else {
			u = append(u, uint16(p[i+1])<<8|uint16(p[i]))
		}
	}
	var b strings.Builder
	for _, r := range utf16.Decode(u) {
		if r == 0xfeff {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// percentDecode decodes %HH escapes and keeps a '%' that starts none.
func percentDecode(s string) string {
	if strings.IndexByte(s, '%') < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(byte(hexVal(s[i+1])<<4 | hexVal(s[i+2])))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// forgivingBase64 is the WHATWG forgiving-base64 decode: ASCII whitespace
// is dropped, padding is optional, anything else outside the alphabet
// fails.
func forgivingBase64(s string) (string, bool) {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t', '\n', '\r', '\f':
		default:
			b = append(b, c)
		}
	}
	if len(b)%4 == 0 {
		for k := 0; k < 2 && len(b) > 0 && b[len(b)-1] == '='; k++ {
			b = b[:len(b)-1]
		}
	}
	if len(b)%4 == 1 {
		return "", false
	}
	for _, c := range b {
		if !isBase64Byte(c) {
			return "", false
		}
	}
	dec, err := base64.RawStdEncoding.DecodeString(string(b))
	if err != nil {
		return "", false
	}
	return string(dec), true
}
