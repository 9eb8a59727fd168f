// Package redact keeps credentials out of error texts and log lines.
//
// Two kinds of text need it. A CDP URL of a cloud provider is a credential
// as a whole (signingKey=, apiKey=, token= in the query): [URL] prints it
// with every query value replaced, and [Secrets] removes its values from
// the text of the errors the libraries underneath return, in every spelling
// a library may print them (raw, query-escaped, path-escaped, quoted, either
// case of hex). A URL a page or a caller asked for is not a credential as a
// whole, but may carry one: [Display] prints it with its userinfo password
// and its credential-named parameters replaced, cut to a bounded length,
// and [Credential] names the credential it carries, for the rule that keeps
// such URLs off cloud browsers.
package redact

import (
	"bytes"
	"cmp"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Redacted replaces a secret in texts.
const Redacted = "REDACTED"

// minSecretLen is the shortest query value treated as a secret on its own.
// Shorter values ("1", "true") are not credentials, and scrubbing them would
// wreck the error text; they are still hidden wherever the whole query is
// printed, because the raw query is a secret too.
const minSecretLen = 4

// Secrets holds the spellings of some credentials, longest first, with the
// replacement of each. The zero value holds none.
type Secrets struct {
	pairs []pair
}

type pair struct{ old, new string }

// FromURL lists the credentials rawURL carries: the userinfo, every query
// value (and a query key without a value), and the whole query, each in
// every spelling a library may print it in. It parses the query by hand, so
// a value with a malformed escape is still found.
func FromURL(rawURL string) Secrets {
	var s Secrets
	u, err := url.Parse(rawURL)
	if err != nil {
		// Unparseable: the whole string is the only spelling we know.
		s.add(rawURL, "[unparseable URL]")
		return s
	}
	if u.RawQuery != "" {
		s.add("?"+u.RawQuery, "?"+redactQuery(u.RawQuery))
	}
	if u.User != nil {
		s.Add(u.User.Username())
		if p, ok := u.User.Password(); ok {
			s.Add(p)
		}
	}
	for kv := range strings.SplitSeq(u.RawQuery, "&") {
		k, v, hasValue := strings.Cut(kv, "=")
		if !hasValue || !plainName(k) {
			s.addEncoded(k) // a bare token (?TOKEN), or a key that may be one
		}
		if hasValue {
			s.addEncoded(v)
		}
	}
	s.sort()
	return s
}

// Values lists the secrets vs (API keys), each in every spelling.
func Values(vs ...string) Secrets {
	var s Secrets
	for _, v := range vs {
		s.Add(v)
	}
	s.sort()
	return s
}

// With returns the secrets of s and o together, longest first.
func (s Secrets) With(o Secrets) Secrets {
	if len(o.pairs) == 0 {
		return s
	}
	if len(s.pairs) == 0 {
		return o
	}
	var m Secrets
	for _, p := range s.pairs {
		m.add(p.old, p.new)
	}
	for _, p := range o.pairs {
		m.add(p.old, p.new)
	}
	m.sort()
	return m
}

// sort puts the longest spellings first, so a longer one is replaced whole
// before a shorter one inside it could break it up.
func (s *Secrets) sort() {
	slices.SortStableFunc(s.pairs, func(a, b pair) int { return cmp.Compare(len(b.old), len(a.old)) })
}

// addEncoded adds a value as it appears in a URL: raw, and decoded.
func (s *Secrets) addEncoded(raw string) {
	s.Add(raw)
	if v, err := url.QueryUnescape(raw); err == nil {
		s.Add(v)
	}
	if v, err := url.PathUnescape(raw); err == nil {
		s.Add(v)
	}
}

// Add adds v and its escaped spellings (values shorter than four bytes are
// not secrets on their own and are skipped). Call it before the Secrets is
// used: the spellings are kept longest first by FromURL, Values and With.
func (s *Secrets) Add(v string) {
	if len(v) < minSecretLen {
		return
	}
	for _, f := range [...]string{v, url.QueryEscape(v), url.PathEscape(v), quoted(v)} {
		s.add(f, Redacted)
	}
}

func (s *Secrets) add(old, new string) {
	if old == "" {
		return
	}
	for _, p := range s.pairs {
		if p.old == old {
			return
		}
	}
	s.pairs = append(s.pairs, pair{old, new})
}

// quoted is v as %q prints it, without the quotes.
func quoted(v string) string {
	q := strconv.Quote(v)
	return q[1 : len(q)-1]
}

// Scrub returns text with every secret replaced. Matching ignores ASCII
// case, so "%2b" is found as well as "%2B"; over-matching costs nothing.
func (s Secrets) Scrub(text string) string {
	for _, p := range s.pairs {
		text = replaceFold(text, p.old, p.new)
	}
	return text
}

// Clean reports whether text holds none of the secrets.
func (s Secrets) Clean(text string) bool {
	lt := lowerASCII(text)
	for _, p := range s.pairs {
		if strings.Contains(lt, lowerASCII(p.old)) {
			return false
		}
	}
	return true
}

// replaceFold replaces every ASCII-case-insensitive match of old in s.
func replaceFold(s, old, new string) string {
	ls, lo := lowerASCII(s), lowerASCII(old)
	i := strings.Index(ls, lo)
	if i < 0 {
		return s
	}
	var b strings.Builder
	start := 0
	for i >= 0 {
		b.WriteString(s[start : start+i])
		b.WriteString(new)
		start += i + len(old)
		i = strings.Index(ls[start:], lo)
	}
	b.WriteString(s[start:])
	return b.String()
}

// lowerASCII lowercases ASCII letters only, so byte offsets stay valid.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; 'A' <= c && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// URL returns rawURL, a URL that is a credential as a whole (a provider's
// CDP URL), fit for an error text: userinfo and fragment dropped, every
// query value replaced by REDACTED, query keys kept when they look like
// names. A string that does not parse comes back as "[unparseable URL]".
func URL(rawURL string) string {
	if rawURL == "" {
		return ""
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return "[unparseable URL]"
	}
	u.User = nil
	u.Fragment, u.RawFragment = "", ""
	u.RawQuery = redactQuery(u.RawQuery)
	return u.String()
}

// redactQuery keeps the keys of a raw query that look like names and
// replaces every value, and anything else, by REDACTED.
func redactQuery(raw string) string {
	if raw == "" {
		return ""
	}
	var b strings.Builder
	for kv := range strings.SplitSeq(raw, "&") {
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		k, _, hasValue := strings.Cut(kv, "=")
		if hasValue && plainName(k) {
			b.WriteString(k)
			b.WriteByte('=')
		}
		b.WriteString(Redacted)
	}
	return b.String()
}

// plainName reports whether a query key is a short plain name
// (signingKey, apiKey, sessionId, token) rather than something that may
// itself be a credential.
func plainName(k string) bool {
	if k == "" || len(k) > 40 {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// MaxDisplay is how many bytes of a URL [Display] keeps: enough to read
// any real address, short of turning a 1 MiB URL into a 1 MiB error.
const MaxDisplay = 512

// Display returns rawURL fit for an error or a log line: the password of
// its userinfo and the values of its credential-named parameters (in the
// query and in a fragment shaped like one, as OAuth's implicit flow puts
// access_token there) replaced by REDACTED, and the whole cut to
// [MaxDisplay] bytes with its real length noted ("…(1048576 bytes)"). It
// works on the text, not on a parse, so a URL that does not parse (the
// ones that get refused) is redacted too.
func Display(rawURL string) string {
	s := rawURL
	if p, ok := credentialSpans(s); ok {
		var b strings.Builder
		b.Grow(len(s))
		prev := 0
		for _, sp := range p {
			b.WriteString(s[prev:sp[0]])
			b.WriteString(Redacted)
			prev = sp[1]
		}
		b.WriteString(s[prev:])
		s = b.String()
	}
	return Cut(s, MaxDisplay, len(rawURL))
}

// Cut returns s cut to at most max bytes (on a character boundary), with
// the real length n noted when it was cut.
func Cut(s string, max, n int) string {
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…(" + strconv.Itoa(n) + " bytes)"
}

// Credential names the credential rawURL carries, if any: the first
// credential-named parameter with a non-empty value (as its name is
// written), or "password" for a userinfo password. The check is on the
// text, allocation-free for the common URL, and case-insensitive.
func Credential(rawURL string) (string, bool) {
	name := ""
	found := false
	scan(rawURL, func(kind int, key string, _, _ int) bool {
		if kind == spanPassword {
			name = "password"
		} else {
			name = key
		}
		found = true
		return false
	})
	return name, found
}

const (
	spanPassword = iota
	spanParam
)

// credentialSpans lists the byte ranges of rawURL that hold credentials.
func credentialSpans(rawURL string) ([][2]int, bool) {
	var spans [][2]int
	scan(rawURL, func(_ int, _ string, from, to int) bool {
		spans = append(spans, [2]int{from, to})
		return true
	})
	return spans, len(spans) > 0
}

// scan calls f for each credential of s, in order, with the byte range of
// its value, until f returns false. The userinfo is what comes between
// "//" and the last "@" before the path; the parameters are the "&"-lists
// after "?" and after "#". Backslashes count as slashes, as Chromium
// reads them in special URLs.
func scan(s string, f func(kind int, key string, from, to int) bool) {
	rest := 0
	qi := strings.IndexAny(s, "?#")
	if qi < 0 {
		qi = len(s)
	}
	if i := doubleSlash(s[:qi]); i >= 0 {
		start := i + 2
		end := len(s)
		if j := strings.IndexAny(s[start:], "/\\?#"); j >= 0 {
			end = start + j
		}
		if at := strings.LastIndexByte(s[start:end], '@'); at >= 0 {
			if c := strings.IndexByte(s[start:start+at], ':'); c >= 0 && c+1 < at {
				if !f(spanPassword, "", start+c+1, start+at) {
					return
				}
			}
		}
		rest = end
	}
	for rest < len(s) {
		q := strings.IndexAny(s[rest:], "?#")
		if q < 0 {
			return
		}
		start := rest + q + 1
		end := len(s)
		if s[rest+q] == '?' {
			if h := strings.IndexByte(s[start:], '#'); h >= 0 {
				end = start + h
			}
		}
		for p := start; p < end; {
			n := strings.IndexByte(s[p:end], '&')
			kvEnd := end
			if n >= 0 {
				kvEnd = p + n
			}
			if eq := strings.IndexByte(s[p:kvEnd], '='); eq > 0 && p+eq+1 < kvEnd && CredentialName(s[p:p+eq]) {
				if !f(spanParam, s[p:p+eq], p+eq+1, kvEnd) {
					return
				}
			}
			p = kvEnd + 1
		}
		rest = end
	}
}

// doubleSlash is the index of the first "//" of s, with either slash
// spelled as a backslash; -1 if none.
func doubleSlash(s string) int {
	for i := 0; i+1 < len(s); i++ {
		if (s[i] == '/' || s[i] == '\\') && (s[i+1] == '/' || s[i+1] == '\\') {
			return i
		}
	}
	return -1
}

// credentialNames are the parameter names that carry credentials, lower
// case: API keys, tokens, signatures of signed URLs (S3, GCS), passwords,
// session ids, OAuth codes. CredentialName also matches any name ending in
// _token, -token, _key or -key, or holding "secret" or "password". It is
// the one list: the redaction of messages and the rule that keeps such URLs
// off cloud browsers both read it.
var credentialNames = map[string]struct{}{
	"token": {}, "access_token": {}, "api_key": {}, "apikey": {}, "api-key": {}, "key": {},
	"signature": {}, "sig": {}, "x-amz-signature": {}, "x-amz-credential": {},
	"x-amz-security-token": {}, "x-goog-signature": {}, "x-goog-credential": {},
	"password": {}, "passwd": {}, "pwd": {}, "secret": {}, "client_secret": {}, "auth": {},
	"authorization": {}, "session": {}, "sessionid": {}, "session_id": {}, "jwt": {}, "code": {},
	"signingkey": {}, "accesstoken": {}, "authtoken": {}, "refresh_token": {}, "id_token": {},
	"private_token": {},
}

// CredentialName reports whether the query parameter name k (as written in
// a URL, percent-escapes allowed) names a credential, ignoring case.
func CredentialName(k string) bool {
	if strings.IndexByte(k, '%') >= 0 || strings.IndexByte(k, '+') >= 0 {
		if d, err := url.QueryUnescape(k); err == nil {
			k = d
		}
	}
	var buf [64]byte
	if len(k) > len(buf) {
		return CredentialName(k[:len(buf)]) || containsFold(k, "secret") || containsFold(k, "password") ||
			hasSuffixFold(k, "_token") || hasSuffixFold(k, "-token") || hasSuffixFold(k, "_key") || hasSuffixFold(k, "-key")
	}
	b := buf[:len(k)]
	for i := 0; i < len(k); i++ {
		c := k[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b[i] = c
	}
	if _, ok := credentialNames[string(b)]; ok {
		return true
	}
	return bytes.HasSuffix(b, []byte("_token")) || bytes.HasSuffix(b, []byte("-token")) ||
		bytes.HasSuffix(b, []byte("_key")) || bytes.HasSuffix(b, []byte("-key")) ||
		bytes.Contains(b, []byte("secret")) || bytes.Contains(b, []byte("password"))
}

func hasSuffixFold(s, suffix string) bool {
	return len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix)
}

func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// DisplayText returns text (a console message, an exception's stack, a
// script's result: text a page wrote) with every URL in it redacted as
// [Display] redacts a URL, without the cut. A URL is found as a word:
// text between blanks, quotes and angle brackets, so "at f
// (http://h/app.js?token=T:1:33)" and "WebSocket connection to
// 'ws://h/?token=T' failed" lose T. A stack frame's line and column and
// the closing punctuation after a URL are kept. It finds URLs written
// out; one the page re-encoded (spaced out, base64) is not found.
func DisplayText(text string) string {
	if !strings.ContainsAny(text, "?#@") {
		return text
	}
	var b strings.Builder
	prev := 0
	for i := 0; i < len(text); {
		for i < len(text) && textBreak(text[i]) {
			i++
		}
		j := i
		for j < len(text) && !textBreak(text[j]) {
			j++
		}
		word := text[i:j]
		core := trimTail(word)
		if spans, ok := credentialSpans(core); ok {
			b.WriteString(text[prev:i])
			at := 0
			for _, sp := range spans {
				b.WriteString(core[at:sp[0]])
				b.WriteString(Redacted)
				at = sp[1]
			}
			b.WriteString(core[at:])
			b.WriteString(word[len(core):])
			prev = j
		}
		i = j
	}
	if prev == 0 {
		return text
	}
	b.WriteString(text[prev:])
	return b.String()
}

// textBreak reports whether c ends a word that may be a URL.
func textBreak(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\f', '\v', '"', '\'', '`', '<', '>':
		return true
	}
	return false
}

// trimTail is w without what follows a URL in a text: closing
// punctuation, an escaping backslash, and a stack frame's ":line:col".
func trimTail(w string) string {
	w = strings.TrimRight(w, ")]},;.\\")
	if i := strings.LastIndexByte(w, ':'); i > 0 && digits(w[i+1:]) {
		if j := strings.LastIndexByte(w[:i], ':'); j > 0 && digits(w[j+1:i]) {
			return w[:j]
		}
	}
	return w
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
