package cdpconn

import (
	"cmp"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// This file keeps the credentials of a CDP URL out of every error the
// package returns. Provider URLs carry keys in the query (signingKey=,
// apiKey=, token=), and the libraries underneath quote the URL they were
// given: net/http's *url.Error prints the request URL, and the websocket
// library wraps that text. A key can appear raw, query-escaped or
// path-escaped depending on who printed it, so each secret is listed in all
// of those spellings.

// minSecretLen is the shortest query value treated as a secret on its own.
// Shorter values ("1", "true") are not credentials, and scrubbing them would
// wreck the error text; they are still hidden wherever the whole query is
// printed, because the raw query is a secret too.
const minSecretLen = 4

// redacted replaces a secret in error texts.
const redacted = "REDACTED"

// secrets holds the spellings of the credentials of one URL, longest first,
// with the replacement of each.
type secrets struct {
	pairs []pair
}

type pair struct{ old, new string }

// urlSecrets lists the credentials rawURL carries: the userinfo, every
// query value (and a query key without a value), and the whole query, each in
// every spelling a library may print it in. It parses the query by hand, so
// a value with a malformed escape is still found.
func urlSecrets(rawURL string) secrets {
	var s secrets
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
		s.addValue(u.User.Username())
		if p, ok := u.User.Password(); ok {
			s.addValue(p)
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

// sort puts the longest spellings first, so a longer one is replaced whole
// before a shorter one inside it could break it up.
func (s *secrets) sort() {
	slices.SortStableFunc(s.pairs, func(a, b pair) int { return cmp.Compare(len(b.old), len(a.old)) })
}

// addEncoded adds a value as it appears in a URL: raw, and decoded.
func (s *secrets) addEncoded(raw string) {
	s.addValue(raw)
	if v, err := url.QueryUnescape(raw); err == nil {
		s.addValue(v)
	}
	if v, err := url.PathUnescape(raw); err == nil {
		s.addValue(v)
	}
}

// addValue adds v and its escaped spellings.
func (s *secrets) addValue(v string) {
	if len(v) < minSecretLen {
		return
	}
	for _, f := range [...]string{v, url.QueryEscape(v), url.PathEscape(v), quoted(v)} {
		s.add(f, redacted)
	}
}

func (s *secrets) add(old, new string) {
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

// scrub returns text with every secret replaced. Matching ignores ASCII
// case, so "%2b" is found as well as "%2B"; over-matching costs nothing.
func (s secrets) scrub(text string) string {
	for _, p := range s.pairs {
		text = replaceFold(text, p.old, p.new)
	}
	return text
}

// clean reports whether text holds none of the secrets.
func (s secrets) clean(text string) bool {
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

// redactURL returns rawURL fit for an error text: userinfo and fragment
// dropped, every query value replaced by REDACTED, query keys kept when
// they look like names. A string that does not parse comes back as
// "[unparseable URL]".
func redactURL(rawURL string) string {
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
		b.WriteString(redacted)
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

// connError is an error of this package. Its text has had the URL's
// credentials removed. errors.Is matches its kind (a sentinel of this
// package) and anything the original cause matches (context.Canceled,
// context.DeadlineExceeded), while Unwrap only exposes a cause whose own
// text is clean: nobody can print a key by walking the chain.
type connError struct {
	kind  error
	msg   string
	cause error // the original cause, for errors.Is only
	next  error // what Unwrap returns: a clean cause, or nil
}

func (e *connError) Error() string { return e.msg }

func (e *connError) Unwrap() error { return e.next }

func (e *connError) Is(target error) bool {
	if target == nil {
		return false
	}
	if e.kind != nil && target == e.kind {
		return true
	}
	return e.cause != nil && errors.Is(e.cause, target)
}

// fail builds a connError of the kind: "msg: <cause, scrubbed>". msg is
// the caller's text, which must already be clean (it names URLs through
// redactURL only).
func (s secrets) fail(kind error, msg string, cause error) error {
	e := &connError{kind: kind, msg: msg, cause: cause}
	if cause == nil {
		return e
	}
	e.msg = msg + ": " + s.scrub(cause.Error())
	// net/http's *url.Error is what quotes the URL; a copy with the URL
	// redacted keeps errors.As(err, **url.Error) useful.
	next := cause
	if ue, ok := errors.AsType[*url.Error](cause); ok {
		cp := *ue
		cp.URL = redactURL(ue.URL)
		next = &cp
	}
	if s.clean(next.Error()) {
		e.next = next
	}
	return e
}
