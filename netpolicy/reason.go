package netpolicy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hybroute/hybroute/internal/redact"
)

// The security rules. A refused URL's error is a [*BlockedError], which
// wraps one of these. Their text is the rule in the words of the security
// rules (docs/security.md), after the "hybroute: " every error of the
// library starts with.
var (
	// ErrMetadata is wrapped by the error of a URL that targets a cloud
	// metadata endpoint.
	ErrMetadata = errors.New("hybroute: URL targets a cloud metadata endpoint")
	// ErrPrivate is wrapped by the error of a private URL that the options
	// do not let through.
	ErrPrivate = errors.New("hybroute: URL targets a private or internal address")
	// ErrLookupTimeout is wrapped by the error of a request the browser's
	// guard refused because the lookup of its host name timed out: an
	// address it cannot see is one it cannot allow.
	ErrLookupTimeout = errors.New("hybroute: the lookup of the URL's host timed out")
	// ErrInvalidURL is wrapped by the error of a URL that cannot be routed.
	ErrInvalidURL = errors.New("hybroute: invalid URL")
	// ErrSecretInURL is wrapped by the error of a URL literal that carries a
	// credential (a credential-named query parameter with a value, or a
	// userinfo password) and would be opened by a remote browser: with
	// hybrid routing such a call runs on the local browser instead; with
	// auto-local off or a CDP override it is refused, unless the policy
	// lets secrets reach remote browsers ([Policy].SecretsOnCloud).
	ErrSecretInURL = errors.New("hybroute: URL carries a credential; it is not sent to a cloud browser")
	// ErrHostRule is wrapped by the error of a URL or connection an operator
	// rule refused ([ReasonHostBlocked], [ReasonHostNotAllowed]), and by
	// [ParseHostRules]'s error for a pattern it cannot read.
	ErrHostRule = errors.New("hybroute: refused by an operator host rule")
)

// Reason names why a URL or a connection was refused. Its String is the
// name logs and errors use.
type Reason int

const (
	// ReasonMetadata is a cloud metadata endpoint: refused on every route,
	// whatever the options.
	ReasonMetadata Reason = iota + 1
	// ReasonPrivate is a private address on the local browser of a policy
	// that lets no private URL run there ([Policy].PrivateOnLocal off: with
	// auto-local off, a cloud session's local fallback refuses them too).
	ReasonPrivate
	// ReasonPrivateOnRemote is a private address that would be opened by a
	// remote browser (a cloud session or a CDP override) by a policy that
	// does not allow it ([Policy].PrivateOnCloud off).
	ReasonPrivateOnRemote
	// ReasonRedirectToPrivate is a redirect from a public address to a
	// private one: refused, not followed, on every route.
	ReasonRedirectToPrivate
	// ReasonInvalidURL is a URL Chromium would refuse to parse, or one with
	// no host to decide on.
	ReasonInvalidURL
	// ReasonSchemeNotAllowed is a URL of a scheme hybroute does not route
	// (javascript:, chrome:, file: unless the [Classifier] allows it, …).
	ReasonSchemeNotAllowed
	// ReasonLookupTimeout is a request the browser's guard paused whose
	// host name did not resolve within the guard's limit: refused (fail
	// closed), since its address, and so its class, is unknown.
	ReasonLookupTimeout
	// ReasonSecretInURL is a URL literal that carries a credential (see
	// [Verdict].Credential) and would be opened by a remote browser. With
	// hybrid routing such a URL does not meet it: it takes the call local,
	// as a private one does. Only literals are held to it: a page that
	// redirects to a URL with a token (an OAuth flow) is normal web
	// behaviour, and neither the guard nor the landed-URL check refuses it.
	ReasonSecretInURL
	// ReasonHostBlocked is a host an operator rule blocks ([HostRules]).
	ReasonHostBlocked
	// ReasonHostNotAllowed is a host the operator's allow list does not
	// name ([HostRules]).
	ReasonHostNotAllowed
	// ReasonPrivateNotNamed is a connection of the local browser to a
	// private address that no call of its session named: a private
	// address is reached only by the session whose call named that host,
	// and only while its pages stay on the hosts the call named. A public
	// page on the local browser (a URL with a token, a fallback, a page a
	// call or a link went to) reaches public addresses only.
	ReasonPrivateNotNamed
)

// reasons are the name of each reason and the sentinel errors.Is finds.
var reasons = [...]struct {
	name     string
	sentinel error
}{
	ReasonMetadata:          {"metadata", ErrMetadata},
	ReasonPrivate:           {"private", ErrPrivate},
	ReasonPrivateOnRemote:   {"private_on_remote", ErrPrivate},
	ReasonRedirectToPrivate: {"redirect_to_private", ErrPrivate},
	ReasonInvalidURL:        {"invalid_url", ErrInvalidURL},
	ReasonSchemeNotAllowed:  {"scheme_not_allowed", ErrInvalidURL},
	ReasonLookupTimeout:     {"lookup_timeout", ErrLookupTimeout},
	ReasonSecretInURL:       {"secret_in_url", ErrSecretInURL},
	ReasonHostBlocked:       {"host_blocked", ErrHostRule},
	ReasonHostNotAllowed:    {"host_not_allowed", ErrHostRule},
	ReasonPrivateNotNamed:   {"private_not_named", ErrPrivate},
}

func (r Reason) known() bool { return r > 0 && int(r) < len(reasons) }

// String returns the reason's name, as logs and errors print it.
func (r Reason) String() string {
	if r.known() {
		return reasons[r].name
	}
	return fmt.Sprintf("Reason(%d)", int(r))
}

// sentinel is the error errors.Is finds for the reason; an unknown reason
// is an invalid URL (fail closed).
func (r Reason) sentinel() error {
	if r.known() {
		return reasons[r].sentinel
	}
	return ErrInvalidURL
}

// Phrase is what the reason means, in the words of the security rules
// (docs/security.md): the text of its sentinel without the package
// prefix, e.g. "URL targets a cloud metadata endpoint". An unknown reason
// reads as an invalid URL.
func (r Reason) Phrase() string {
	return strings.TrimPrefix(r.sentinel().Error(), "hybroute: ")
}

// BlockedError is the error of a URL that must not be opened. It wraps the
// sentinel of its reason: [ErrMetadata], [ErrPrivate], [ErrInvalidURL] or
// [ErrSecretInURL]. Its text shows the URL with its credentials redacted
// and cut to a bounded length; the URL field holds it as given.
type BlockedError struct {
	URL    string
	Class  Class
	Reason Reason // why, by name
	Detail error  // what the parser or resolver said, if anything
}

func (e *BlockedError) Error() string {
	if e.Detail != nil {
		return fmt.Sprintf("hybroute: blocked (%s): %s: %q: %s", e.Reason, e.Reason.Phrase(), redact.Display(e.URL), shownDetail(e.Detail))
	}
	return fmt.Sprintf("hybroute: blocked (%s): %s: %q", e.Reason, e.Reason.Phrase(), redact.Display(e.URL))
}

// Unwrap returns the reason's sentinel and the detail, so errors.Is finds
// both.
func (e *BlockedError) Unwrap() []error {
	if e.Detail != nil {
		return []error{e.Reason.sentinel(), e.Detail}
	}
	return []error{e.Reason.sentinel()}
}

// shownDetail is the text of a refusal's detail, bounded: a parser's error
// may quote the whole input.
func shownDetail(err error) string {
	msg := err.Error()
	return redact.Cut(msg, 2*redact.MaxDisplay, len(msg))
}

// Block is the refusal of v for reason, with what was wrong (detail may
// be nil). A guard or an egress check that refuses for a reason of its own
// ([ReasonLookupTimeout], [ReasonPrivateNotNamed]) builds its error here,
// so every refusal reads alike.
func Block(v Verdict, reason Reason, detail error) *BlockedError {
	return &BlockedError{URL: v.URL, Class: v.Class, Reason: reason, Detail: detail}
}

// ReasonOf is the reason of a refusal by name, for a log attribute; ""
// when err is no [*BlockedError].
func ReasonOf(err error) string {
	if be, ok := errors.AsType[*BlockedError](err); ok {
		return be.Reason.String()
	}
	return ""
}
