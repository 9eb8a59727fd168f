// Package outage reads a cloud provider's failure for the router: the
// short, key-free account a Result carries, whether the failure is the
// configuration's (it does not heal by waiting) and what to fix then, and
// how long a provider may take before the local floor must start.
package outage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/hybroute/hybroute/internal/health"
	"github.com/hybroute/hybroute/internal/redact"
	"github.com/hybroute/hybroute/provider"
)

// ErrProviderFellBack is the cause of a session the provider returned
// already marked FallbackFromCloud: it has told us the cloud is not there.
var ErrProviderFellBack = errors.New("provider session came back marked fallback from cloud")

// Budget is how long the provider may take to create a session: the
// creation timeout, or half of what the caller has left when that is
// less, so the local floor can still start in time for it; never less than
// MinBudget (an impatient caller must not turn a normal provider into an
// "outage").
func Budget(ctx context.Context, createTimeout time.Duration) time.Duration {
	b := createTimeout
	if dl, ok := ctx.Deadline(); ok {
		b = min(b, max(time.Until(dl)/2, MinBudget))
	}
	return b
}

// MinBudget is the least a provider is given to create a session.
const MinBudget = 5 * time.Second

// Attrs are the log attributes of a provider's error: its status, code
// and the call id its support asks for; none for another error.
func Attrs(err error) []slog.Attr {
	var pe *provider.Error
	if !errors.As(err, &pe) {
		return nil
	}
	attrs := []slog.Attr{slog.Int("status", pe.Status)}
	if pe.Code != "" {
		attrs = append(attrs, slog.String("code", pe.Code))
	}
	if pe.ExternalCallID != "" {
		attrs = append(attrs, slog.String("external_call_id", pe.ExternalCallID))
	}
	return attrs
}

// DroppedParams names the session params of p that the local floor does
// without, for the outage's log line; none when p has none.
func DroppedParams(p provider.Provider) []slog.Attr {
	if l, ok := p.(provider.SessionParamLister); ok {
		if keys := l.SessionParamKeys(); len(keys) > 0 {
			return []slog.Attr{slog.String("dropped_params", fmt.Sprint(slices.Sorted(slices.Values(keys))))}
		}
	}
	return nil
}

// Explain reads a provider's failure for internal/health: its account
// (reason), the window it asked for, and whether it is the
// configuration's.
func Explain(reason func(error) string) func(error) health.Failure {
	return func(err error) health.Failure {
		f := health.Failure{Reason: reason(err), Config: IsConfigError(err)}
		var pe *provider.Error
		if errors.As(err, &pe) {
			f.RetryAfter = pe.RetryAfter
		}
		return f
	}
}

// IsConfigError reports a failure that is the configuration's, not an outage:
// the key, the project or the plan was refused, or the provider's URL
// (cleartext, a private or metadata address).
func IsConfigError(err error) bool {
	return errors.Is(err, provider.ErrAuth) || errors.Is(err, provider.ErrPayment) || errors.Is(err, provider.ErrInvalidParam) ||
		errors.Is(err, provider.ErrCleartext) || errors.Is(err, provider.ErrPrivateEndpoint)
}

// ConfigFix says what to fix for a configuration error.
func ConfigFix(err error) string {
	if errors.Is(err, provider.ErrCleartext) {
		return "the provider's URL would carry its key unencrypted: use an https URL (http only to a loopback address)"
	}
	if errors.Is(err, provider.ErrPrivateEndpoint) {
		return "the provider's URL is a metadata or private address: point it at the provider, or allow a provider on the LAN explicitly (provider.WithPrivateEndpoint)"
	}
	if errors.Is(err, provider.ErrPayment) {
		return "the provider's account is out of credits or its plan does not allow the session: check the plan and billing, or the session params"
	}
	var pe *provider.Error
	if errors.As(err, &pe) && errors.Is(err, provider.ErrInvalidParam) {
		if pe.Param != "" {
			return "the provider refused the session parameter " + strconv.Quote(pe.Param) + ": change it in the session params (WithSessionParams) or the provider's options"
		}
		return "the provider refused a session parameter: check the session params (WithSessionParams) and the provider's options"
	}
	return "the provider refused the credentials: check the API key (and the project id, for Browserbase) given to the provider client"
}

// Reason is the short, key-free account of a failure of the provider
// named name, e.g. "provider Browserbase: HTTP 429 RATE_LIMIT_EXCEEDED
// (retry after 17s)".
func Reason(name string, err error) string {
	var pe *provider.Error
	if errors.As(err, &pe) {
		s := "provider " + name + ":"
		if pe.Status != 0 {
			s += fmt.Sprintf(" HTTP %d", pe.Status)
		}
		if pe.Code != "" {
			s += " " + pe.Code
		}
		if pe.Message != "" && pe.Message != pe.Code && (pe.Code == "" || pe.Status != http.StatusTooManyRequests) {
			// The provider's own words where its status and code do not
			// say it all: a limit answered 403 says which limit.
			s += ": " + redact.Cut(pe.Message, 160, len(pe.Message))
		}
		if pe.Status == 0 || (pe.Status < 300 && pe.Err != nil) {
			s += " " + shortCause(pe.Err)
		}
		if pe.RetryAfter > 0 {
			s += " (retry after " + pe.RetryAfter.String() + ")"
		}
		return s
	}
	return "provider " + name + ": " + shortCause(err)
}

// shortCause is the last part of an error chain's text, bounded: the part
// that says what went wrong, without the URL and the path to it.
func shortCause(err error) string {
	if err == nil {
		return "no answer"
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer in time"
	case errors.Is(err, ErrProviderFellBack):
		return err.Error()
	}
	s := err.Error()
	const limit = 160
	if len(s) > limit {
		i := limit
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		s = s[:i] + "…"
	}
	return s
}
