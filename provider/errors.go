package provider

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hybroute/hybroute/internal/redact"
)

// The errors of the clients: a failed call is an [*Error], which matches
// the sentinel of its status with errors.Is. The sentinels' texts keep the
// library's "hybroute: " prefix, as every error a Router returns.
var (
	// ErrRateLimited is matched by an [*Error] for HTTP 429. Its
	// RetryAfter and Limit carry the window and limit the provider
	// advertised, when it did.
	ErrRateLimited = errors.New("hybroute: cloud browser provider rate limit exceeded")
	// ErrAuth is matched by an [*Error] for HTTP 401 and 403 (but for a
	// billing refusal, which is [ErrPayment]): the API key, the token or
	// the project was refused.
	ErrAuth = errors.New("hybroute: cloud browser provider refused the credentials")
	// ErrPayment is matched by an [*Error] for HTTP 402, and for a 4xx
	// whose code or message is a billing refusal ("insufficient credits",
	// "payment required"): the account is out of credits or its plan does
	// not allow the request. It is the configuration's, not an outage: a
	// Router opens no back-off window for it.
	ErrPayment = errors.New("hybroute: cloud browser provider requires payment")
	// ErrUnavailable is matched by an [*Error] for HTTP 5xx and 408, and
	// for failures with no usable answer: network errors, timeouts and
	// context deadlines, a malformed or oversized answer body. The cause
	// is wrapped, so errors.Is(err, context.DeadlineExceeded) also works.
	ErrUnavailable = errors.New("hybroute: cloud browser provider unavailable")
)

// Error is the error of a provider call that did not succeed: every
// non-2xx answer, and every failure to get or read one.
type Error struct {
	Provider string // the provider's Name()
	Op       string // "create" or "release"
	// Status is the HTTP status, or 0 when no answer arrived (network error,
	// timeout). A 2xx status with a non-nil Err means a malformed answer.
	Status int
	// Code is the provider's machine-readable error code, e.g.
	// "RATE_LIMIT_EXCEEDED", read from the body's "errorCode", "code",
	// "error" or "error.code".
	Code string
	// Message is the provider's human-readable message ("message", "detail",
	// "error.message"), with any credential removed.
	Message string
	// RetryAfter is how long the provider asked us to wait: the larger of
	// the Retry-After header (delta-seconds or HTTP-date) and a "retryAfter"
	// body field in seconds. Zero when it said nothing.
	RetryAfter time.Duration
	// Limit is the advertised limit (body "limit" or X-RateLimit-Limit),
	// zero when none.
	Limit int
	// ExternalCallID is the gateway's x-external-call-id of the failed
	// call, when it sent one.
	ExternalCallID string
	// Err is the underlying cause for failures without a usable answer
	// (transport error, context error, decode error), with credentials
	// removed from its text. Unwrap returns it.
	Err error
}

// Error describes the failure. It never contains an API key or a URL token.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("cloud browser provider ")
	b.WriteString(e.Provider)
	b.WriteString(": ")
	b.WriteString(e.Op)
	b.WriteString(" session failed")
	if e.Status != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.Status)
	}
	if e.Code != "" {
		b.WriteString(" ")
		b.WriteString(e.Code)
	}
	if e.Message != "" && e.Message != e.Code {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	var extra []string
	if e.RetryAfter > 0 {
		extra = append(extra, "retry after "+e.RetryAfter.String())
	}
	if e.Limit > 0 {
		extra = append(extra, "limit "+strconv.Itoa(e.Limit))
	}
	if len(extra) > 0 {
		b.WriteString(" (" + strings.Join(extra, ", ") + ")")
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause, if any.
func (e *Error) Unwrap() error { return e.Err }

// Is matches the sentinels by status: [ErrRateLimited] (429),
// [ErrAuth] (401, 403), [ErrPayment] (402, or a billing
// refusal of another 4xx), [ErrUnavailable] (5xx, 408, or no
// usable answer).
func (e *Error) Is(target error) bool {
	switch target {
	case ErrRateLimited:
		return e.Status == http.StatusTooManyRequests && !e.billing()
	case ErrAuth:
		return (e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden) && !e.billing()
	case ErrPayment:
		return e.Status == http.StatusPaymentRequired || e.billing()
	case ErrUnavailable:
		return e.Status < 300 || e.Status == http.StatusRequestTimeout || e.Status >= 500
	}
	return false
}

// billingWords are what a provider's error code or message says when it
// refuses for money rather than for the key: some answer 403 or 429 with
// them instead of 402.
var billingWords = []string{"payment", "billing", "credits", "insufficient_funds", "insufficient funds",
	"insufficient_balance", "insufficient balance", "subscription"}

// billing reports a 4xx refusal whose code or message is about money.
func (e *Error) billing() bool {
	if e.Status < 400 || e.Status > 499 {
		return false
	}
	text := strings.ToLower(e.Code + " " + e.Message)
	for _, w := range billingWords {
		if strings.Contains(text, w) {
			return true
		}
	}
	return false
}

// redactErr returns err with every secret removed from its text, and the
// URL of a *url.Error in its redacted form, still unwrapping to err (so
// errors.Is finds context.DeadlineExceeded).
func redactErr(err error, secrets redact.Secrets) error {
	if err == nil {
		return nil
	}
	var msg string
	if ue, ok := errors.AsType[*url.Error](err); ok {
		// The URL of a request may carry a token: print its redacted form.
		cp := *ue
		cp.URL = redact.URL(ue.URL)
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
