package hybroute

import (
	"errors"
	"net/url"

	"github.com/hybroute/hybroute/internal/redact"
)

// Redaction: API keys, signing keys and URL tokens never appear in an error
// or a log line, in any of the forms a URL or an error quotes them
// (internal/redact lists the spellings), and a URL is printed only through
// redact.Display (a refusal prints it so, netpolicy.BlockedError) or, for a
// provider's CDP URL, redactURL.

// redactErr returns err with every secret removed from its text, and the
// URL of a *url.Error in its redacted form, still unwrapping to err (so
// errors.Is finds context.DeadlineExceeded).
func redactErr(err error, secrets redact.Secrets) error {
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
	return &redactedError{msg: secrets.Scrub(msg), err: err}
}

// redactedError is an error whose text had its secrets removed.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactURL returns a provider's CDP URL fit for a log line: userinfo and
// fragment dropped, every query value (tokens, API keys, signing keys,
// session ids) replaced by REDACTED. A string that does not parse as a URL
// comes back as "[unparseable URL]".
func redactURL(s string) string { return redact.URL(s) }
