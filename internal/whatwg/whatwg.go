// Package whatwg parses the scheme, host and port of a URL the way Chromium
// does (the WHATWG URL standard's basic URL parser, with Chromium's
// deviations), so that a caller can decide on the host that the browser will
// really contact.
//
// Only what determines scheme, host and port is parsed: path, query and
// fragment are skipped (Chromium never refuses a URL because of them). Every
// input that Chromium's `new URL(input)` refuses is refused here, and when
// this package cannot be sure it computes the same host as Chromium it
// refuses as well (fail closed).
//
// Chromium deviations from the standard that are reproduced (all confirmed
// against the recorded table in testdata/url-hosts.chromium.json):
//   - an ASCII-only host (after percent-decoding) is never passed through
//     UTS-46, so "xn--a" (invalid punycode) and "-leading" are kept as they are;
//   - in a special host ' ' is kept as "%20" and '*' as "%2A" instead of
//     failing, and U+00A0 / U+3000 (which UTS-46 maps to ' ') become "%20";
//   - file: URLs keep "localhost" as the host (the standard empties it);
//   - the IPv4 part of an IPv6 literal is read with the IPv4 number parser, so
//     "[::1.2.3.0x4]" and "[::1.2.3.04]" are accepted (4 parts are required).
package whatwg

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// HostKind says what kind of host a URL has.
type HostKind uint8

const (
	// HostNone: the URL has no host or an empty one (file:///x, about:blank,
	// javascript:..., foo:///x).
	HostNone HostKind = iota
	// HostDomain: a special-scheme host that is a domain name (lower-case
	// ASCII, IDN labels as punycode).
	HostDomain
	// HostIPv4: an IPv4 address, in any of the forms Chromium accepts; Host is
	// dotted decimal and Addr holds it.
	HostIPv4
	// HostIPv6: an IPv6 literal; Host is the bracketed canonical form and Addr
	// holds it (never with a zone: Chromium refuses zones).
	HostIPv6
	// HostOpaque: the host of a non-special scheme (foo://Host/), kept as
	// written apart from percent-encoding. An IPv6 literal in a non-special URL
	// is reported as HostIPv6.
	HostOpaque
)

func (k HostKind) String() string {
	switch k {
	case HostNone:
		return "none"
	case HostDomain:
		return "domain"
	case HostIPv4:
		return "ipv4"
	case HostIPv6:
		return "ipv6"
	case HostOpaque:
		return "opaque"
	}
	return fmt.Sprintf("HostKind(%d)", uint8(k))
}

// URL is the part of a parsed URL that decides where a request goes.
type URL struct {
	Scheme  string     // lower-case, without ':'
	Special bool       // http https ws wss ftp file
	Host    string     // exactly what Chromium's new URL(raw).hostname gives
	Kind    HostKind   // what Host is
	Addr    netip.Addr // set for HostIPv4 / HostIPv6 (IPv6 without zone)
	Port    int        // -1 when absent or the scheme's default
}

// ErrInvalid is wrapped by every error that Parse returns.
var ErrInvalid = errors.New("whatwg: invalid URL")

func fail(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// idnaProfile is UTS-46 ToASCII with the options of the WHATWG "domain to
// ASCII" algorithm (beStrict false), which are also Chromium's ICU options.
var idnaProfile = idna.New(
	idna.MapForLookup(),
	idna.Transitional(false),
	idna.CheckHyphens(false),
	idna.CheckJoiners(true),
	idna.BidiRule(),
	idna.StrictDomainName(false), // UseSTD3ASCIIRules false
	idna.VerifyDNSLength(false),
)

// idnaMapper only maps (its validation errors are ignored by the caller).
var idnaMapper = idna.New(
	idna.MapForLookup(),
	idna.Transitional(false),
	idna.CheckHyphens(false),
	idna.StrictDomainName(false),
	idna.VerifyDNSLength(false),
)

// isLabelSeparator: the code points that UTS-46 maps to a FULL STOP and that
// Chromium accepts (the other ones are refused, see unsureRune).
func isLabelSeparator(r rune) bool {
	return r == '.' || r == 0x3002 || r == 0xff0e || r == 0xff61
}

// Parse parses raw as Chromium's `new URL(raw)` would (no base URL) and
// returns its scheme, host and port. Every error wraps ErrInvalid.
//
// Parse does not allocate for inputs that are already canonical ASCII (the
// Host is then a substring of raw).
func Parse(raw string) (URL, error) {
	s := trimC0Space(raw)
	var u URL
	retry, err := parse(&u, s, raw)
	if retry && !(len(raw) > 5 && strings.EqualFold(raw[:5], "data:")) {
		// A tab or newline inside the part that decides scheme, host and
		// port: remove them all (as the standard does everywhere) and parse
		// again. Only such inputs pay for the copy.
		u = URL{}
		_, err = parse(&u, removeTabOrNewline(s), raw)
	} else if retry {
		// Chromium does not remove tabs and newlines from a URL that starts
		// with "data:" (any case), before any trimming: they stay, and in
		// the host or port they make it invalid.
		u = URL{}
		err = parseKeepingTabs(&u, s, raw)
	}
	if err != nil {
		return URL{Port: -1}, err
	}
	return u, nil
}

func isTabOrNewline(c byte) bool { return c == '\t' || c == '\n' || c == '\r' }

// authorityEnd returns the index in s of the first authority terminator ('/',
// '?', '#', and '\\' when backslash is set), or len(s); retry reports a tab
// or newline before it.
func authorityEnd(s string, backslash bool) (end int, retry bool) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '/', '?', '#':
			return i, false
		case '\\':
			if backslash {
				return i, false
			}
		case '\t', '\n', '\r':
			return i, true
		}
	}
	return len(s), false
}

// parseKeepingTabs parses a "data:" URL in which tabs and newlines are
// ordinary characters: a non-special authority that contains one is invalid
// unless it sits in the userinfo.
func parseKeepingTabs(u *URL, s, raw string) error {
	u.Port, u.Scheme = -1, "data"
	rest := s[5:]
	if !strings.HasPrefix(rest, "//") {
		return nil
	}
	auth := rest[2:]
	if j := strings.IndexAny(auth, "/?#"); j >= 0 {
		auth = auth[:j]
	}
	if at := strings.LastIndexByte(auth, '@'); at >= 0 {
		if strings.ContainsAny(auth[at+1:], "\t\n\r") {
			return fail("tab or newline in the host or port of %q", raw)
		}
	} else if strings.ContainsAny(auth, "\t\n\r") {
		return fail("tab or newline in the host or port of %q", raw)
	}
	return parseAuthority(u, auth, -1, raw)
}

// parse parses s (trimmed) into u. retry is true when s has a tab or newline
// in the scheme or authority; the caller then removes them and calls again.
func parse(u *URL, s, raw string) (retry bool, err error) {
	u.Port = -1
	// Scheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":".
	colon := -1
	lower := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ':' {
			colon = i
			break
		}
		switch {
		case 'a' <= c && c <= 'z':
		case 'A' <= c && c <= 'Z':
			lower = false
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case isTabOrNewline(c):
			return true, nil
		default:
			return false, fail("no valid scheme (a relative URL needs a base) in %q", raw)
		}
	}
	if colon <= 0 {
		return false, fail("no scheme in %q", raw)
	}
	scheme := s[:colon]
	rest := s[colon+1:]
	def, special := specialScheme(scheme)
	if special {
		scheme = def.name // constant: no allocation for upper-case input
	} else if !lower {
		scheme = strings.ToLower(scheme)
	}
	u.Scheme = scheme
	u.Special = special

	// Leading slashes (and, for special schemes, backslashes).
	n, i := 0, 0
	for ; i < len(rest); i++ {
		c := rest[i]
		if c == '/' || special && c == '\\' {
			n++
			continue
		}
		if isTabOrNewline(c) {
			return true, nil
		}
		break
	}
	switch {
	case special && def.port < 0: // file
		// Chromium takes a host only after exactly two slashes, with no
		// userinfo and no port, and keeps "localhost".
		if n != 2 {
			return false, nil
		}
		// The host runs to the next slash: '?' and '#' do not end it (so
		// they make it invalid), unlike in other special URLs.
		h := rest[2:]
		end := len(h)
		for k := 0; k < len(h); k++ {
			if c := h[k]; c == '/' || c == '\\' {
				end = k
				break
			} else if isTabOrNewline(c) {
				return true, nil
			}
		}
		if end == 0 {
			return false, nil
		}
		return false, canonSpecialHost(u, h[:end], raw)
	case special:
		// Any number of slashes, even none, before the authority.
		auth := rest[i:]
		end, retry := authorityEnd(auth, true)
		if retry {
			return true, nil
		}
		return false, parseAuthority(u, auth[:end], def.port, raw)
	default:
		if n < 2 || rest[1] != '/' {
			return false, nil // e.g. javascript:, data:, about:, mailto:
		}
		auth := rest[2:]
		end, retry := authorityEnd(auth, false)
		if retry {
			return true, nil
		}
		return false, parseAuthority(u, auth[:end], -1, raw)
	}
}

type schemeInfo struct {
	name string
	port int // default port; -1 for file (no port at all)
}

var (
	schemeHTTP  = schemeInfo{"http", 80}
	schemeHTTPS = schemeInfo{"https", 443}
	schemeWS    = schemeInfo{"ws", 80}
	schemeWSS   = schemeInfo{"wss", 443}
	schemeFTP   = schemeInfo{"ftp", 21}
	schemeFile  = schemeInfo{"file", -1}
)

// specialScheme recognizes the special schemes in any case. s holds only
// scheme characters, and |0x20 lower-cases letters without turning a digit,
// '+', '-' or '.' into a letter.
func specialScheme(s string) (schemeInfo, bool) {
	eq := func(name string) bool {
		for i := 0; i < len(name); i++ {
			if s[i]|0x20 != name[i] {
				return false
			}
		}
		return true
	}
	switch len(s) {
	case 2:
		if eq("ws") {
			return schemeWS, true
		}
	case 3:
		if eq("wss") {
			return schemeWSS, true
		}
		if eq("ftp") {
			return schemeFTP, true
		}
	case 4:
		if eq("http") {
			return schemeHTTP, true
		}
		if eq("file") {
			return schemeFile, true
		}
	case 5:
		if eq("https") {
			return schemeHTTPS, true
		}
	}
	return schemeInfo{}, false
}

// trimC0Space strips leading and trailing C0 controls and spaces.
func trimC0Space(s string) string {
	i, j := 0, len(s)
	for i < j && s[i] <= ' ' {
		i++
	}
	for j > i && s[j-1] <= ' ' {
		j--
	}
	return s[i:j]
}

func removeTabOrNewline(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '\t' && c != '\n' && c != '\r' {
			b = append(b, c)
		}
	}
	return string(b)
}

// parseAuthority splits userinfo@host:port the way Chromium does: the
// userinfo ends at the last '@'; the port starts at the last ':' that comes
// after the last ']' (or, when the host starts with '[' and has no ']', never).
func parseAuthority(u *URL, auth string, defPort int, raw string) error {
	at, term, colon := -1, -1, -1
	for i := 0; i < len(auth); i++ {
		switch auth[i] {
		case '@':
			at, term, colon = i, -1, -1
		case ']':
			term = i
		case ':':
			colon = i
		}
	}
	hostport := auth[at+1:]
	if term < 0 && hostport != "" && hostport[0] == '[' {
		term = len(auth)
	}
	host, port, hasPort := hostport, "", false
	if colon > term {
		host, port, hasPort = auth[at+1:colon], auth[colon+1:], true
	}
	if hasPort && port != "" {
		p := 0
		for i := 0; i < len(port); i++ {
			c := port[i]
			if c < '0' || c > '9' {
				return fail("port %q is not a number in %q", port, raw)
			}
			p = p*10 + int(c-'0')
			if p > 65535 {
				return fail("port %q is out of range in %q", port, raw)
			}
		}
		if p != defPort {
			u.Port = p
		}
	}
	if !u.Special {
		if host == "" {
			if at >= 0 || hasPort {
				return fail("userinfo or port without a host in %q", raw)
			}
			return nil
		}
		return canonOpaqueHost(u, host, raw)
	}
	if host == "" {
		return fail("empty host in %q", raw)
	}
	return canonSpecialHost(u, host, raw)
}

// Values of hostTable: 0 means the character is refused, esc that it is kept
// percent-encoded, anything else is its canonical (lower-case) form. This is
// Chromium's kHostCharLookup: ' ' and '*' are escaped rather than refused.
const esc = 0xff

var hostTable = func() (t [128]byte) {
	for c := 0x21; c < 0x7f; c++ {
		t[c] = byte(c)
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = byte(c + 'a' - 'A')
	}
	for _, c := range "#%/<>?@\\^|" {
		t[c] = 0
	}
	t[' '], t['*'] = esc, esc
	return t
}()

const hexUpper = "0123456789ABCDEF"

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// simpleHost is Chromium's DoSimpleHost: it percent-decodes, checks every
// ASCII character against hostTable (lower-casing, escaping ' ' and '*') and
// passes other bytes through. It reports whether non-ASCII bytes remain.
func simpleHost(h string) (string, bool, error) {
	b := make([]byte, 0, len(h))
	nonASCII := false
	for i := 0; i < len(h); i++ {
		c := h[i]
		if c == '%' {
			if i+2 >= len(h) {
				return "", false, fail("bad percent-encoding in host %q", h)
			}
			hi, ok1 := unhex(h[i+1])
			lo, ok2 := unhex(h[i+2])
			if !ok1 || !ok2 {
				return "", false, fail("bad percent-encoding in host %q", h)
			}
			c = hi<<4 | lo
			i += 2
		}
		if c >= 0x80 {
			nonASCII = true
			b = append(b, c)
			continue
		}
		switch t := hostTable[c]; t {
		case 0:
			return "", false, fail("forbidden code point %q in host %q", c, h)
		case esc:
			b = append(b, '%', hexUpper[c>>4], hexUpper[c&15])
		default:
			b = append(b, t)
		}
	}
	return string(b), nonASCII, nil
}

// canonSpecialHost canonicalizes the host of a special URL (Chromium's
// DoHost), then classifies it as IPv4, IPv6 or domain.
func canonSpecialHost(u *URL, h, raw string) error {
	nonASCII, pct, changed, v6 := false, false, false, false
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case c >= 0x80:
			nonASCII = true
		case c == '%':
			pct = true
		default:
			t := hostTable[c]
			if t == 0 {
				return fail("forbidden code point %q in host of %q", c, raw)
			}
			if t != c {
				changed = true
			}
			if c == '[' || c == ']' || c == ':' {
				v6 = true
			}
		}
	}
	host := h
	if nonASCII || pct {
		var err error
		var stillNonASCII bool
		host, stillNonASCII, err = simpleHost(h)
		if err != nil {
			return fmt.Errorf("%w (in %q)", err, raw)
		}
		if stillNonASCII {
			host, err = idnHost(host)
			if err != nil {
				return fmt.Errorf("%w (in %q)", err, raw)
			}
		}
		v6 = hasIPv6Char(host)
	} else if changed {
		host, _, _ = simpleHost(h) // cannot fail: every byte was checked
	}
	if host == "" {
		return fail("host is empty after canonicalization in %q", raw)
	}
	return classify(u, host, v6, raw)
}

func hasIPv6Char(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '[' || c == ']' || c == ':' {
			return true
		}
	}
	return false
}

// maxIDNHost is Chromium's kMaxHostBufferLength (253*5 UTF-16 units): a
// longer host that needs IDN processing is refused.
const maxIDNHost = 253 * 5

// maxPunycodeLabel is ICU's limit on the code points of one label that it
// encodes as punycode.
const maxPunycodeLabel = 1000

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// idnHost runs UTS-46 ToASCII on a host that still has non-ASCII characters
// and canonicalizes the ASCII result again (Chromium's DoIDNHost).
func idnHost(h string) (string, error) {
	if !utf8.ValidString(h) {
		return "", fail("host %q is not valid UTF-8", h)
	}
	n := 0
	for _, r := range h {
		n++
		if r > 0xffff {
			n++
		}
		if unsureRune(r) {
			// x/net/idna (Unicode 15.0) and Chromium's ICU disagree here.
			return "", fail("host %q has code point %U that Chromium refuses", h, r)
		}
	}
	if n > maxIDNHost {
		return "", fail("host %q is too long for IDN processing", h)
	}
	h = newerUTS46(h)
	// ICU refuses a label that starts with "xn--" after mapping but is not
	// all ASCII (it cannot be punycode); x/net/idna decodes such a label
	// leniently ("xn--\u00fc\u00df-10x" becomes "xn--zca1d390n"). Map every
	// label on its own (behind an "a", so that it is not decoded) and refuse.
	for label := range strings.FieldsFuncSeq(h, isLabelSeparator) {
		if isASCII(label) {
			// ICU (UTS-46 since Unicode 15.1) also refuses an "xn--" label
			// that decodes to nothing or to ASCII only; x/net/idna drops or
			// keeps it.
			if strings.HasPrefix(label, "xn--") {
				d, err := idnaMapper.ToUnicode(label)
				if err != nil || isASCII(d) {
					return "", fail("punycode label %q is empty, invalid or ASCII", label)
				}
			}
			continue
		}
		m, _ := idnaMapper.ToUnicode("a" + label)
		if strings.HasPrefix(m, "axn--") {
			if !isASCII(m) {
				return "", fail("label %q maps to a non-ASCII \"xn--\" label", label)
			}
			d, err := idnaMapper.ToUnicode(m[1:])
			if err != nil || isASCII(d) {
				return "", fail("label %q maps to a punycode label that is empty, invalid or ASCII", label)
			}
		}
	}
	out, err := idnaProfile.ToASCII(h)
	if err != nil {
		return "", fail("IDNA: %v", err)
	}
	for i := 0; i < len(out); i++ {
		if out[i] >= 0x80 {
			return "", fail("IDNA left non-ASCII in host %q", h)
		}
	}
	// x/net/idna decides whether the Bidi Rule applies from the input before
	// mapping, so "a\u2135b" (U+2135 maps to HEBREW LETTER ALEF) passes there
	// and fails in Chromium. Validating the result again, with the labels
	// decoded from punycode, applies the rules to the mapped text.
	uni, err := idnaProfile.ToUnicode(out)
	if err != nil {
		return "", fail("IDNA validation of the mapped host: %v", err)
	}
	outLabels, uniLabels := strings.Split(out, "."), strings.Split(uni, ".")
	if len(outLabels) != len(uniLabels) {
		return "", fail("IDNA changed the labels of host %q", h)
	}
	for i, label := range uniLabels {
		// ICU's punycode encoder refuses a label of more than 1000 code
		// points (MAX_CP_COUNT), so Chromium refuses such a host.
		if len(label) > maxPunycodeLabel && utf8.RuneCountInString(label) > maxPunycodeLabel && !isASCII(label) {
			return "", fail("IDN label of more than %d code points in host %q", maxPunycodeLabel, h)
		}
		// UTS-46 since Unicode 15.1 (Chromium's ICU) refuses an "xn--" label
		// that decodes to nothing or to ASCII only ("xn--" itself); x/net/idna
		// accepts it. (An ASCII-only host never gets here: Chromium keeps it.)
		if strings.HasPrefix(outLabels[i], "xn--") && isASCII(label) {
			return "", fail("punycode label %q decodes to ASCII in host %q", outLabels[i], h)
		}
	}
	host, nonASCII, err := simpleHost(out)
	if err != nil {
		return "", err
	}
	if nonASCII {
		return "", fail("IDNA produced an escape of non-ASCII in host %q", h)
	}
	return host, nil
}

// unsureRune lists code points for which golang.org/x/net/idna (Unicode 15.0
// tables, as selected for this Go version) and Chromium's ICU (a newer
// UTS-46) are known to differ. Unicode 15.1 made the compatibility
// characters whose mapping contains a FULL STOP disallowed, so Chromium
// refuses them while x/net/idna maps them to a '.'-containing string, which
// would produce a different host. They are refused (fail closed).
func unsureRune(r rune) bool {
	switch {
	case r == 0x2024 || r == 0x2025 || r == 0x2026: // ONE/TWO DOT LEADER, ELLIPSIS
		return true
	case 0x2488 <= r && r <= 0x249b: // DIGIT ONE FULL STOP .. NUMBER TWENTY FULL STOP
		return true
	case r == 0xfe52: // SMALL FULL STOP
		return true
	case r == 0x1f100: // DIGIT ZERO FULL STOP
		return true
	}
	return false
}

// newerUTS46 applies the UTS-46 mapping changes made after Unicode 15.0
// (the tables x/net/idna uses with this Go version) that Chromium's ICU
// applies, as verified against Chromium code point by code point: U+1E9E
// LATIN CAPITAL LETTER SHARP S maps to U+00DF (15.0: "ss"), and the Hangul
// fillers, Khmer inherent vowels, invisible math operators, deprecated format
// characters and U+180E MONGOLIAN VOWEL SEPARATOR are ignored (15.0 refused
// them). Code points that only became valid or got other new mappings are
// still refused by x/net/idna, which is the safe direction.
func newerUTS46(h string) string {
	found := false
	for _, r := range h {
		if r == 0x1e9e || ignoredSince15(r) {
			found = true
			break
		}
	}
	if !found {
		return h
	}
	var b strings.Builder
	for _, r := range h {
		switch {
		case r == 0x1e9e:
			b.WriteRune(0xdf)
		case ignoredSince15(r):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func ignoredSince15(r rune) bool {
	switch {
	case r == 0x115f || r == 0x1160 || r == 0x17b4 || r == 0x17b5 || r == 0x180e:
		return true
	case 0x2061 <= r && r <= 0x2063, 0x206a <= r && r <= 0x206f:
		return true
	case r == 0x3164 || r == 0xffa0:
		return true
	}
	return false
}

// classify decides whether a canonical special host is an IPv6 literal, an
// IPv4 address (WHATWG "ends in a number") or a domain.
func classify(u *URL, host string, v6 bool, raw string) error {
	if v6 {
		if len(host) < 2 || host[0] != '[' || host[len(host)-1] != ']' {
			return fail("'[', ']' or ':' outside an IPv6 literal in host of %q", raw)
		}
		a, ok := parseIPv6(host[1 : len(host)-1])
		if !ok {
			return fail("invalid IPv6 address %q in %q", host, raw)
		}
		u.Kind, u.Addr = HostIPv6, a
		u.Host = canonicalIPv6(host, a)
		return nil
	}
	if endsInNumber(host) {
		v, canonical, ok := parseIPv4(host, false)
		if !ok {
			return fail("invalid IPv4 address %q in %q", host, raw)
		}
		a := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
		u.Kind, u.Addr = HostIPv4, a
		if canonical {
			u.Host = host // already dotted decimal: no allocation
		} else {
			u.Host = a.String()
		}
		return nil
	}
	u.Kind, u.Host = HostDomain, host
	return nil
}

// endsInNumber is the WHATWG "ends in a number checker".
func endsInNumber(h string) bool {
	// One trailing dot is ignored ("1.2.3.4." is an address, "1.2.3.4.." a
	// name).
	if h != "" && h[len(h)-1] == '.' {
		h = h[:len(h)-1]
	}
	last := h[strings.LastIndexByte(h, '.')+1:]
	if last == "" {
		return false
	}
	allDigits := true
	for i := 0; i < len(last); i++ {
		if last[i] < '0' || last[i] > '9' {
			allDigits = false
			break
		}
	}
	if allDigits {
		return true
	}
	_, ok := parseIPv4Number(last)
	return ok
}

// parseIPv4Number is the WHATWG IPv4 number parser: 0x/0X for hex, a leading
// 0 for octal. Values above 2^32 are reported as 1<<32 (too big anyway).
func parseIPv4Number(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	base := uint64(10)
	if len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		base, s = 16, s[2:]
	} else if len(s) >= 2 && s[0] == '0' {
		base, s = 8, s[1:]
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		d, ok := unhex(s[i])
		if !ok || uint64(d) >= base {
			return 0, false
		}
		v = v*base + uint64(d)
		if v > 1<<32 {
			v = 1 << 32
		}
	}
	return v, true
}

// parseIPv4 is the WHATWG IPv4 parser (1 to 4 parts, last part fills the
// remaining bytes). With exact4, exactly four parts and no trailing dot are
// required (the IPv4 part of an IPv6 literal in Chromium). canonical reports
// that h is already dotted decimal (four decimal parts without leading
// zeros, no trailing dot).
func parseIPv4(h string, exact4 bool) (v uint32, canonical, ok bool) {
	canonical = true
	if h != "" && h[len(h)-1] == '.' {
		if exact4 {
			return 0, false, false
		}
		h = h[:len(h)-1]
		canonical = false
	}
	var nums [4]uint64
	n := 0
	start := 0
	for i := 0; i <= len(h); i++ {
		if i < len(h) && h[i] != '.' {
			continue
		}
		if n == 4 {
			return 0, false, false
		}
		part := h[start:i]
		if len(part) == 0 || len(part) > 3 || len(part) > 1 && part[0] == '0' {
			canonical = false
		}
		num, ok := parseIPv4Number(part)
		if !ok {
			return 0, false, false
		}
		nums[n] = num
		n++
		start = i + 1
	}
	if exact4 && n != 4 {
		return 0, false, false
	}
	for i := 0; i < n-1; i++ {
		if nums[i] > 255 {
			return 0, false, false
		}
	}
	if nums[n-1] >= 1<<(8*(5-n)) {
		return 0, false, false
	}
	sum := nums[n-1]
	for i := 0; i < n-1; i++ {
		sum += nums[i] << (8 * (3 - i))
	}
	return uint32(sum), canonical && n == 4, true
}

// parseIPv6 parses the inside of an IPv6 literal: hex pieces of 1 to 4
// digits, at most one "::", optionally ending in a 4-part IPv4 address.
func parseIPv6(s string) (netip.Addr, bool) {
	var a [16]byte
	maxPieces := 8
	if strings.IndexByte(s, '.') >= 0 {
		i := strings.LastIndexByte(s, ':')
		if i < 0 {
			return netip.Addr{}, false
		}
		v4, _, ok := parseIPv4(s[i+1:], true)
		if !ok {
			return netip.Addr{}, false
		}
		a[12], a[13], a[14], a[15] = byte(v4>>24), byte(v4>>16), byte(v4>>8), byte(v4)
		if i >= 1 && s[i-1] == ':' {
			s = s[:i+1]
		} else {
			s = s[:i]
		}
		maxPieces = 6
	}
	var left, right [8]uint16
	nl, nr := 0, 0
	compress := false
	if j := strings.Index(s, "::"); j >= 0 {
		compress = true
		var ok bool
		if nl, ok = hexPieces(s[:j], left[:]); !ok {
			return netip.Addr{}, false
		}
		if nr, ok = hexPieces(s[j+2:], right[:]); !ok {
			return netip.Addr{}, false
		}
		if nl+nr >= maxPieces {
			return netip.Addr{}, false
		}
	} else {
		var ok bool
		if nl, ok = hexPieces(s, left[:]); !ok || nl != maxPieces {
			return netip.Addr{}, false
		}
	}
	for k := 0; k < nl; k++ {
		a[2*k], a[2*k+1] = byte(left[k]>>8), byte(left[k])
	}
	if compress {
		off := maxPieces - nr
		for k := 0; k < nr; k++ {
			a[2*(off+k)], a[2*(off+k)+1] = byte(right[k]>>8), byte(right[k])
		}
	}
	return netip.AddrFrom16(a), true
}

// hexPieces parses "h:h:h" (possibly empty) into dst.
func hexPieces(s string, dst []uint16) (int, bool) {
	if s == "" {
		return 0, true
	}
	n := 0
	for {
		i := strings.IndexByte(s, ':')
		p := s
		if i >= 0 {
			p = s[:i]
		}
		if p == "" || len(p) > 4 || n == len(dst) {
			return 0, false
		}
		var v uint16
		for k := 0; k < len(p); k++ {
			d, ok := unhex(p[k])
			if !ok {
				return 0, false
			}
			v = v<<4 | uint16(d)
		}
		dst[n] = v
		n++
		if i < 0 {
			return n, true
		}
		s = s[i+1:]
	}
}

// canonicalIPv6 serializes a as the WHATWG IPv6 serializer does (lower-case
// hex, the first longest run of two or more zero pieces as "::", no embedded
// dotted IPv4), in brackets. It returns host itself when that is already the
// canonical form, so that canonical input does not allocate.
func canonicalIPv6(host string, a netip.Addr) string {
	b16 := a.As16()
	var p [8]uint16
	for i := range p {
		p[i] = uint16(b16[2*i])<<8 | uint16(b16[2*i+1])
	}
	bestStart, bestLen := -1, 1
	for i := 0; i < 8; {
		if p[i] != 0 {
			i++
			continue
		}
		j := i
		for j < 8 && p[j] == 0 {
			j++
		}
		if j-i > bestLen {
			bestStart, bestLen = i, j-i
		}
		i = j
	}
	var buf [41]byte
	b := append(buf[:0], '[')
	for i := 0; i < 8; i++ {
		if i == bestStart {
			b = append(b, ':', ':')
			i += bestLen - 1
			continue
		}
		if i > 0 && b[len(b)-1] != ':' {
			b = append(b, ':')
		}
		b = appendHex16(b, p[i])
	}
	b = append(b, ']')
	if string(b) == host {
		return host
	}
	return string(b)
}

func appendHex16(b []byte, v uint16) []byte {
	const hexLower = "0123456789abcdef"
	started := false
	for shift := 12; shift >= 0; shift -= 4 {
		d := (v >> uint(shift)) & 15
		if d != 0 || started || shift == 0 {
			b = append(b, hexLower[d])
			started = true
		}
	}
	return b
}

// opaqueRuneRefused reproduces a Chromium quirk: its opaque-host parser
// checks each UTF-16 code unit of the host against the forbidden host code
// points after truncating it to 8 bits, so a code point such as U+3000
// (low byte 0x00), U+200D (0x0D), U+013A (':') or an astral code point whose
// high surrogate ends in such a byte (U+10000..U+103FF: 0xD800) makes new
// URL() throw.
func opaqueRuneRefused(r rune) bool {
	forbiddenLow := func(u rune) bool {
		switch byte(u) {
		case 0x00, '\t', '\n', '\r', ' ', '#', '/', ':', '<', '>', '?', '@', '[', '\\', ']', '^', '|':
			return true
		}
		return false
	}
	if r < 0x10000 {
		return forbiddenLow(r)
	}
	// Only the high surrogate is checked: percent-encoding the code point
	// consumes the low one.
	return forbiddenLow(0xd800 + (r-0x10000)>>10)
}

// canonOpaqueHost is the WHATWG opaque-host parser as Chromium runs it for
// non-special URLs: forbidden host code points fail, C0 controls, DEL and
// non-ASCII are UTF-8 percent-encoded, and a bracketed host must be IPv6.
func canonOpaqueHost(u *URL, h, raw string) error {
	needEnc := false
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case c == 0 || c == ' ' || c == '#' || c == '/' || c == '<' || c == '>' ||
			c == '?' || c == '@' || c == '\\' || c == '^' || c == '|':
			return fail("forbidden code point %q in host of %q", c, raw)
		case c < 0x20 || c >= 0x7f:
			needEnc = true
		}
	}
	if needEnc {
		if !utf8.ValidString(h) {
			return fail("host of %q is not valid UTF-8", raw)
		}
		for _, r := range h {
			if r >= 0x100 && opaqueRuneRefused(r) {
				return fail("code point %U in the host of %q is refused by Chromium", r, raw)
			}
		}
	}
	host := h
	if needEnc {
		b := make([]byte, 0, len(h)*3)
		for i := 0; i < len(h); i++ {
			if c := h[i]; c < 0x20 || c >= 0x7f {
				b = append(b, '%', hexUpper[c>>4], hexUpper[c&15])
			} else {
				b = append(b, c)
			}
		}
		host = string(b)
	}
	if hasIPv6Char(host) {
		if len(host) < 2 || host[0] != '[' || host[len(host)-1] != ']' {
			return fail("'[', ']' or ':' outside an IPv6 literal in host of %q", raw)
		}
		a, ok := parseIPv6(strings.ToLower(host[1 : len(host)-1]))
		if !ok {
			return fail("invalid IPv6 address %q in %q", host, raw)
		}
		u.Kind, u.Addr = HostIPv6, a
		u.Host = canonicalIPv6(host, a)
		return nil
	}
	u.Kind, u.Host = HostOpaque, host
	return nil
}
