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
	// ErrRateLimited is matched by an [*Error] for HTTP 429, and for a
	// 402 or 403 whose words are a limit (a plan's concurrent-browser
	// limit, a quota): a limit to wait out, not a key to fix. Its
	// RetryAfter and Limit carry the window and limit the provider
	// advertised, when it did; its Message the provider's words.
	ErrRateLimited = errors.New("hybroute: cloud browser provider rate limit exceeded")
	// ErrAuth is matched by an [*Error] for HTTP 401, and for a 403 that
	// is neither a limit, a billing refusal ([ErrPayment]) nor a refused
	// parameter ([ErrInvalidParam]): the API key, the token, its scope or
	// the project was refused.
	ErrAuth = errors.New("hybroute: cloud browser provider refused the credentials")
	// ErrInvalidParam is matched by an [*Error] for a 400 or 422 that
	// names a field of the request, and for a 403 that says a field of
	// the request is over a limit (Browser Use's "Session timeout limit
	// exceeded"): the configuration's to fix. Param names the field.
	ErrInvalidParam = errors.New("hybroute: cloud browser provider refused a session parameter")
	// ErrPayment is matched by an [*Error] for HTTP 402, and for a 4xx
	// whose code or message is a billing refusal ("insufficient credits",
	// "payment required"): the account is out of credits or its plan does
	// not allow the request. It is the configuration's, not an outage: a
	// Router opens no back-off window for it.
	ErrPayment = errors.New("hybroute: cloud browser provider requires payment")
	// ErrUnavailable is matched by an [*Error] for HTTP 5xx and 408, and
	// for failures with no usable answer: network errors, timeouts and
	// context deadlines, a malformed or oversized answer body; not for a
	// request refused before it was sent ([ErrCleartext],
	// [ErrPrivateEndpoint]), which is the configuration's. The cause
	// is wrapped, so errors.Is(err, context.DeadlineExceeded) also works.
	ErrUnavailable = errors.New("hybroute: cloud browser provider unavailable")
	// ErrNoReplay is matched by the error of a replay asked of a session
	// that has none: its provider makes no replay URL (Steel records
	// events, Camofox traces; Browser.cash and browserless record
	// nothing), the session was not recorded (Browser Use's
	// enableRecording, Hyperbrowser's enableWebRecording, a Kernel replay
	// never started), or the recording is not ready yet.
	ErrNoReplay = errors.New("hybroute: the cloud browser session has no replay")
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
	// Param is the field of the request the provider refused, when its
	// answer names one: FastAPI's detail[].loc ("timeout"), a validator's
	// path ("body/projectId", "property 'projectId'"), or a field the
	// request sent named in the message. Empty when none is named.
	Param string
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
	if e.Param != "" {
		extra = append(extra, "parameter "+strconv.Quote(e.Param))
	}
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

// Is matches the sentinels by what the answer says, not by its status
// alone ([Error.Refusal]): [ErrRateLimited] (429, or a limit answered 402
// or 403), [ErrAuth] (401, another 403), [ErrPayment] (402, or a billing
// refusal of another 4xx), [ErrInvalidParam] (a refused field),
// [ErrUnavailable] (5xx, 408, or no usable answer).
func (e *Error) Is(target error) bool {
	switch target {
	case ErrRateLimited, ErrAuth, ErrPayment, ErrInvalidParam:
		return e.Refusal() == target
	case ErrUnavailable:
		if e.Status == 0 && refusedEndpoint(e.Err) {
			// Nothing was sent: the configuration's URL is refused, no
			// outage to wait out.
			return false
		}
		return e.Status < 300 || e.Status == http.StatusRequestTimeout || e.Status >= 500
	}
	return false
}

// Refusal is the sentinel of a 4xx refusal by what it says: a billing
// refusal is [ErrPayment] whatever its status; a field named in a 400,
// 422, or in a 403 about a limit, [ErrInvalidParam]; a 429, or a 402 or
// 403 about a limit, [ErrRateLimited]; a 401 or another 403, [ErrAuth]; a
// plain 402, [ErrPayment]. Nil for any other answer.
func (e *Error) Refusal() error {
	if e.Status < 400 || e.Status > 499 {
		return nil
	}
	limit := e.says(limitWords)
	switch {
	case e.says(billingWords):
		return ErrPayment
	case e.Param != "" && (e.Status == http.StatusBadRequest || e.Status == http.StatusUnprocessableEntity ||
		e.Status == http.StatusForbidden && limit):
		return ErrInvalidParam
	case e.Status == http.StatusTooManyRequests:
		return ErrRateLimited
	case (e.Status == http.StatusForbidden || e.Status == http.StatusPaymentRequired) && limit:
		return ErrRateLimited
	case e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden:
		return ErrAuth
	case e.Status == http.StatusPaymentRequired:
		return ErrPayment
	}
	return nil
}

// limitWords are what a refusal says when it is a limit to wait out:
// Browser.cash's 403 "Session or account limit reached: the plan's
// concurrent-browser limit", a quota, a rate.
var limitWords = []string{"limit", "quota", "concurrent", "concurrency", "too many", "maximum number"}

// says reports a code or message that holds one of words.
func (e *Error) says(words []string) bool {
	text := strings.ToLower(e.Code + " " + e.Message)
	for _, w := range words {
		if strings.Contains(text, w) {
			return true
		}
	}
	return false
}

// MissingScope reports a 403 that says the key lacks a scope (Browser
// Use's {"detail": "API key is missing required scope: ..."}, answered
// when a key is scoped to another API version).
func (e *Error) MissingScope() bool {
	return e.Status == http.StatusForbidden && strings.Contains(strings.ToLower(e.Code+" "+e.Message), "missing required scope")
}

// billingWords are what a provider's error code or message says when it
// refuses for money rather than for the key: some answer 403 or 429 with
// them instead of 402.
var billingWords = []string{"payment", "billing", "credits", "insufficient_funds", "insufficient funds",
	"insufficient_balance", "insufficient balance", "subscription"}

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
