package hybroute

import (
	"errors"
	"net/url"
	"strings"
)

// Redaction: API keys, signing keys and URL tokens never appear in an error
// or a log line, in any of the forms a URL or an error quotes them.

// redactErr returns err with every secret removed from its text, and the
// URL of a *url.Error in its redacted form, still unwrapping to err (so
// errors.Is finds context.DeadlineExceeded).
func redactErr(err error, secrets []string) error {
	if err == nil {
		return nil
	}
	var msg string
	if ue, ok := errors.AsType[*url.Error](err); ok {
		// The URL of a request may carry a token: log its redacted form.
		cp := *ue
		cp.URL = redactURL(ue.URL)
		msg = cp.Error()
	} else {
		msg = err.Error()
	}
	return &redactedError{msg: scrub(msg, secrets), err: err}
}

// redactURLErr removes a CDP URL and its credentials from err's text:
// chromedp's dial errors quote the whole URL, and cloud URLs carry API keys,
// signing keys and tokens.
func redactURLErr(err error, rawURL string) error {
	secrets := []string{rawURL}
	if u, perr := url.Parse(rawURL); perr == nil {
		secrets = append(secrets, urlSecrets(u)...)
	}
	return redactErr(err, secrets)
}

// redactedError is an error whose text had its secrets removed.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// scrub replaces every secret in s.
func scrub(s string, secrets []string) string {
	for _, sec := range secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, "[REDACTED]")
		}
	}
	return s
}

// urlSecrets lists the credentials a URL carries: the userinfo password and
// every query value.
func urlSecrets(u *url.URL) []string {
	var s []string
	if u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			s = append(s, p)
		}
	}
	for _, vs := range u.Query() {
		for _, v := range vs {
			if len(v) >= 4 {
				s = append(s, v)
			}
		}
	}
	return s
}

// redactURL returns s fit for a log line: userinfo dropped, every query value
// (tokens, API keys, signing keys, session ids) replaced by REDACTED, the
// fragment dropped. A string that does not parse as a URL comes back as
// "[unparseable URL]".
func redactURL(s string) string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil {
		return "[unparseable URL]"
	}
	u.User = nil
	u.Fragment = ""
	u.RawFragment = ""
	if u.RawQuery != "" {
		q, _ := url.ParseQuery(u.RawQuery)
		for k := range q {
			q[k] = []string{"REDACTED"}
		}
		if len(q) == 0 {
			u.RawQuery = "REDACTED"
		} else {
			u.RawQuery = q.Encode()
		}
	}
	return u.String()
}
