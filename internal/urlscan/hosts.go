package urlscan

import (
	"strings"

	"github.com/hybroute/hybroute/internal/metadata"
)

// The URLs without a scheme: scheme-relative "//host" and bare host:port.

// relative reports "http://host..." for the scheme-relative URL whose
// slash run starts at rs: two or more of '/' and '\' in any spelling
// ("//", "\\", "/\", JSON's "\/\/", "&sol;&sol;"), which Chromium folds to
// "//" against an http or https page. Inside a string or an attribute value
// (a quote or '=' before the run) any host is reported, for the verdict to
// judge. Elsewhere "//" is mostly a comment or a path, and only a host that
// is a local-looking literal is reported: an IPv4 address (in the forms
// Chromium reads: 127.0.0.1, 0x7f.1, 2130706433), a bracketed IPv6
// literal, localhost, *.localhost or a metadata name.
//
// A backslash reads differently in a string literal (an escape) and in an
// HTML attribute (a slash), so the run is read both ways, and each reading
// that is a scheme-relative URL is reported.
func (s *scanner) relative(rs int) {
	if rs < s.relUntil {
		return
	}
	code := s.code
	str := false
	if rs > 0 {
		switch p := code[rs-1]; {
		case p == ':' || p == '/' || p == '\\' || p == ')' || p == ']':
			return
		case isWordByte(p):
			return
		}
		str = s.inString(rs)
	}
	hs, n := relSlashRun(code, rs, str, false)
	ha, na := relSlashRun(code, rs, str, true)
	s.relUntil = max(hs, ha)
	if n >= 2 {
		s.relativeAt(rs, hs, str)
	}
	if na >= 2 && (ha != hs || n < 2) {
		s.relativeAt(rs, ha, str)
	}
}

// relativeAt reports the scheme-relative URL whose slash run code[rs:hs]
// has been read, if its host is one to report.
func (s *scanner) relativeAt(rs, hs int, str bool) {
	code := s.code
	if hs >= len(code) {
		return
	}
	if b := code[hs]; !str && !isDigit(b) && b != '[' && !isLetter(b) {
		return
	}
	t := s.token(hs)
	end := trimEnd(code, hs, t.end)
	auth := min(t.auth, end)
	if auth <= hs {
		return
	}
	host := decodeToken(code[hs:auth], auth-hs)
	if at := strings.LastIndexByte(host, '@'); at >= 0 {
		host = host[at+1:]
	}
	if str {
		if host == "" {
			return
		}
	} else {
		var after byte
		if auth < len(code) {
			after = code[auth]
		}
		if !localLiteralHost(host, after) {
			return
		}
	}
	if !t.esc && strings.Count(code[rs:hs], "/") == hs-rs {
		s.out = append(s.out, "http:"+code[rs:end])
		return
	}
	s.out = append(s.out, "http://"+decodeToken(code[hs:end], auth-hs))
}

// inString reports whether the slash run at rs opens a string or an
// attribute value: a quote (in any spelling), an '=' (an unquoted
// attribute) or CSS's "url(" right before it.
func (s *scanner) inString(rs int) bool {
	code := s.code
	i := rs
	switch code[i-1] {
	case '"', '\'', '`', '=':
		return true
	case '(':
		return i >= 4 && strings.EqualFold(code[i-4:i-1], "url")
	case ';':
		var us units
		unitsBefore(code, i, &us)
		for _, u := range us.list() {
			if u.r == '"' || u.r == '\'' {
				return true
			}
		}
	}
	return false
}

// relSlashRun reads the slash run of a scheme-relative URL at q and
// returns where the host starts and how many slashes the run means, read
// as a string literal (attr false: escapes decoded, "\\" one backslash) or
// as an HTML attribute (every backslash a slash). Character references
// count in both. Tabs and newlines are skipped inside a string only;
// elsewhere they end the run.
func relSlashRun(code string, q int, str, attr bool) (int, int) {
	n := 0
	for q < len(code) {
		switch b := code[q]; b {
		case '/':
			q++
			n++
		case '\\':
			if attr {
				q++
				n++
				continue
			}
			r, k := escapeAt(code, q)
			switch {
			case k > 0 && (r == '/' || r == '\\'):
				n++
			case k > 0 && str && isTabOrNewline(r):
			case k == 0 && q+1 < len(code) && (code[q+1] == '\\' || code[q+1] == '/'):
				n, k = n+1, 2
			default:
				return q, n
			}
			q += k
		case '&':
			r, k := entityAt(code, q)
			switch {
			case k > 0 && (r == '/' || r == '\\'):
				n++
			case k > 0 && str && isTabOrNewline(r):
			default:
				return q, n
			}
			q += k
		case '\t', '\n', '\r':
			if !str {
				return q, n
			}
			q++
		default:
			return q, n
		}
	}
	return q, n
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
	if h == "localhost" || metadata.IsName(h) {
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

// bareHostPort reports "http://host:port[/path]" when the colon at c joins
// a local-looking host to 1-5 digits: localhost, *.localhost, a dotted IPv4
// literal or a bracketed IPv6 literal. Other names are left alone, because
// "a:1", "foo:80" and "12:30" are everywhere in code.
func (s *scanner) bareHostPort(c int) {
	code := s.code
	if c == 0 || c+1 >= len(code) || !isDigit(code[c+1]) {
		return
	}
	d := c + 1
	for d < len(code) && isDigit(code[d]) {
		d++
	}
	if d-c-1 > 5 || d < len(code) && isWordByte(code[d]) && code[d] != '.' && code[d] != '-' {
		return
	}
	hs := hostBefore(code, c)
	if hs < 0 {
		return
	}
	end := d
	if d < len(code) && code[d] == '/' {
		end = s.token(d).end
		end = trimEnd(code, d, end)
	}
	s.out = append(s.out, "http://"+decodeToken(code[hs:end], d-hs))
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
