package egress

import (
	"slices"
	"time"

	"github.com/hybroute/hybroute/internal/whatwg"
)

// The causes of network failures. The local browser's connections go
// through the proxy, which answers one it does not make with a failure
// Chromium reports only as net::ERR_TUNNEL_CONNECTION_FAILED (a tunnel) or
// net::ERR_EMPTY_RESPONSE (a plain-HTTP request); the door of the session's
// browser context keeps why, and these carry it back to the caller. The
// cloud browser says net::ERR_NAME_NOT_RESOLVED itself, which is read the
// same way.

// proxyShaped are the browser's texts for a connection the proxy did not
// make: only those are explained by its failures, so a load the browser
// itself gave up on (net::ERR_ABORTED) is not blamed on one.
var proxyShaped = []string{"net::ERR_TUNNEL_CONNECTION_FAILED", "net::ERR_EMPTY_RESPONSE",
	"net::ERR_PROXY_CONNECTION_FAILED", "net::ERR_CONNECTION_CLOSED", "net::ERR_CONNECTION_RESET"}

// nameNotResolved is the browser's text for a name it could not resolve.
const nameNotResolved = "net::ERR_NAME_NOT_RESOLVED"

// Cause is why a URL did not load, as far as a door knows more than the
// browser's text: Kind says which (Unresolved with no Addr: the browser
// itself could not resolve Host), Err is the failure's error.
type Cause struct {
	URL  string // the URL that did not load ("" when unknown)
	Host string // its host
	Addr string // the host:port the door did not connect
	Kind FailureKind
	Err  error
}

// CauseOf is why rawURL did not load at or after since, as far as d (nil on
// any browser but the local one) knows more than the browser's text
// errText says (errText "": the browser's text is unknown): d's failure of
// its connection, or a name that does not resolve. false when nothing more
// is known.
func CauseOf(d *Door, rawURL, errText string, since time.Time) (Cause, bool) {
	u, err := whatwg.Parse(rawURL)
	if err != nil {
		return Cause{}, false
	}
	port := 80
	switch u.Scheme {
	case "https", "wss":
		port = 443
	case "http", "ws":
	default:
		return Cause{}, false
	}
	if u.Port >= 0 {
		port = u.Port
	}
	if d != nil && (errText == "" || slices.Contains(proxyShaped, errText)) {
		if f, ok := d.FailureFor(u.Host, port, since); ok {
			return Cause{URL: rawURL, Host: u.Host, Addr: f.HostPort, Kind: f.Kind, Err: f.Err}, true
		}
	}
	if errText == nameNotResolved {
		return Cause{URL: rawURL, Host: u.Host, Kind: Unresolved}, true
	}
	return Cause{}, false
}

// LoadCause is the cause of a page that did not load with the browser's
// text errText, for a call whose run started at since. navURL is the URL
// the call navigates to ("" when its run navigates where it likes: then
// d's failures since the run started name it, when they name one host
// only). A name the browser could not resolve is a cause with no URL when
// the URL is unknown.
func LoadCause(d *Door, navURL, errText string, since time.Time) (Cause, bool) {
	if navURL == "" {
		navURL = d.failedHost(since)
	}
	if c, ok := CauseOf(d, navURL, errText, since); ok {
		return c, true
	}
	if errText == nameNotResolved {
		return Cause{Kind: Unresolved}, true // the host is unknown
	}
	return Cause{}, false
}

// failedHost is a URL of the one host:port whose connections d failed since
// since; "" when there are none, or several.
func (d *Door) failedHost(since time.Time) string {
	fs := d.Failures(since)
	if len(fs) == 0 {
		return ""
	}
	for _, f := range fs[1:] {
		if f.HostPort != fs[0].HostPort {
			return ""
		}
	}
	return "http://" + fs[0].HostPort + "/"
}
