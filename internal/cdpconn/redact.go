package cdpconn

import (
	"errors"
	"net/url"

	"github.com/hybroute/hybroute/internal/redact"
)

// This file keeps the credentials of a CDP URL out of every error the
// package returns. Provider URLs carry keys in the query (signingKey=,
// apiKey=, token=), and the libraries underneath quote the URL they were
// given: net/http's *url.Error prints the request URL, and the websocket
// library wraps that text. A key can appear raw, query-escaped or
// path-escaped depending on who printed it, so each secret is listed in all
// of those spellings.

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
	// status is the HTTP status of the answer that failed, 0 if none.
	status int
}

// HTTPStatus is the HTTP status of the answer that made err (a failed
// /json/version or websocket upgrade), or 0 when no answer came.
func HTTPStatus(err error) int {
	if ce, ok := errors.AsType[*connError](err); ok {
		return ce.status
	}
	return 0
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
func fail(s redact.Secrets, kind error, msg string, cause error) error {
	e := &connError{kind: kind, msg: msg, cause: cause}
	if cause == nil {
		return e
	}
	e.msg = msg + ": " + s.Scrub(cause.Error())
	// net/http's *url.Error is what quotes the URL; a copy with the URL
	// redacted keeps errors.As(err, **url.Error) useful.
	next := cause
	if ue, ok := errors.AsType[*url.Error](cause); ok {
		cp := *ue
		cp.URL = redact.URL(ue.URL)
		next = &cp
	}
	if s.Clean(next.Error()) {
		e.next = next
	}
	return e
}

// withStatus records the HTTP status of the answer that made err.
func withStatus(err error, status int) error {
	if ce, ok := err.(*connError); ok {
		ce.status = status
	}
	return err
}
