package hybroute

import (
	"errors"
	"fmt"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute/internal/cdpcompat"
	"github.com/hybroute/hybroute/internal/profiles"
)

// Every error of the package a caller can test for: the sentinels, matched
// with errors.Is, and the types that carry the details, matched with
// errors.As. Each message starts with "hybroute: ", but for the no-CDP
// message, kept in the wording agent tools already print (see noCDPError).

// The router.
var (
	// ErrClosed is returned by calls on a [Router] after [Router.Close].
	ErrClosed = errors.New("hybroute: router is closed")
	// ErrInvalidSessionKey is returned for a session key that would collide
	// with a sidecar key (it ends in [LocalSuffix]).
	ErrInvalidSessionKey = errors.New("hybroute: invalid session key")
	// ErrReleased is wrapped by the error of a call whose session was
	// released under it ([Router.Release], the idle reaper, Close) or
	// while it was being created. The session's next call starts afresh.
	ErrReleased = errors.New("hybroute: the session was released")
	// ErrBusy is matched by the error of a call that did not get its turn
	// to open a local tab within its budget: refused at once when the
	// queue ahead foresaw a longer wait, or after waiting its budget out
	// (a [*BusyError] says which). Nothing ran; trying again later may
	// work. [WaitForTurn] makes a call wait rather than be refused at once.
	ErrBusy = errors.New("hybroute: the local browser is busy")
	// ErrEvicted is wrapped by the error of a call on a session the
	// router ended to stay within [WithMaxSessions] or
	// [WithMaxLocalMemory] while it was idle. The session's next call
	// starts a fresh one.
	ErrEvicted = errors.New("hybroute: the session was ended to make room for others")
	// ErrProfileLocked is wrapped by the error of New when the directory
	// of [WithProfileDir] is in use by another router (in this process or
	// another): two routers saving one profile would lose each other's
	// cookies. The message names the holder's pid when it can.
	ErrProfileLocked = profiles.ErrLocked
	// ErrNoSession is wrapped by the error of [Router.SaveState] on a
	// session key that has no browser session, and no state loaded.
	ErrNoSession = errors.New("hybroute: the session has no browser")
)

// The cloud and its fallback.
var (
	// ErrNoCDPEndpoint is wrapped by the error of a cloud session that has
	// no CDP endpoint and no fallback: nothing pretends the call ran.
	ErrNoCDPEndpoint = errors.New("hybroute: the cloud provider returned no CDP endpoint")
	// ErrFallbackFailed is wrapped when the cloud failed and the local
	// floor failed too; the error wraps both causes.
	ErrFallbackFailed = errors.New("hybroute: cloud session failed and the local fallback failed too")
)

// The local Chromium.
var (
	// ErrNoChromium is the errors.Is target for "there is no Chromium to run
	// the local sidecar on": none found, or the one named is no program.
	// Its text names the fix; the error that wraps it says where Chromium
	// and Chrome were looked for, and how to install one on this system.
	ErrNoChromium = errors.New("hybroute: no Chromium for the local sidecar: " +
		"point hybroute at a binary with WithChromiumPath (or $CHROMIUM), or install one")
	// ErrBrowserDead is the errors.Is target for "the browser under this
	// session died": the local Chromium process, or the connection to a
	// cloud browser (or a CDP override). The error's own text names which.
	// The tab, its cookies and its storage are gone; the session's next
	// call starts a fresh browser (a fresh Chromium, a new cloud session).
	ErrBrowserDead = errors.New("hybroute: the browser under the session died")
	// ErrUnsupportedBrowser is the errors.Is target for "the guard cannot
	// cover this browser": a Chromium older than the supported range, or one
	// that lacks a protocol capability a rule needs on its route. The error
	// is an [*UnsupportedBrowserError], which names the browser and what it
	// lacks. A local Chromium so refused fails Warm and the first call; a
	// cloud browser so refused is never used: the call falls back to local.
	ErrUnsupportedBrowser = errors.New("hybroute: unsupported browser")
)

// Tabs and dialogs.
var (
	// ErrNoSuchTab is returned for a tab id the session does not have.
	ErrNoSuchTab = errors.New("hybroute: the session has no such tab")
	// ErrLastTab is returned by [Router.CloseTab] for the only tab of a
	// session's browser: release the session instead.
	ErrLastTab = errors.New("hybroute: it is the only tab of the session's browser")
	// ErrDialogOpen is returned for a call that a dialog held for the caller
	// ([DialogPolicy.Hold]) ended, and for calls made while it is open: answer
	// it with [Router.AnswerDialog].
	ErrDialogOpen = errors.New("hybroute: a JavaScript dialog is open and waits for an answer")
	// ErrNoDialog is returned by [Router.AnswerDialog] when no dialog waits.
	ErrNoDialog = errors.New("hybroute: no JavaScript dialog waits for an answer")
)

// The network: why a page or a request did not load, where the browser
// says only a network error.
var (
	// ErrNameNotResolved is matched by the error of a call whose page did
	// not load because its host name has no address: the local browser's
	// egress check found none, or the cloud browser said
	// net::ERR_NAME_NOT_RESOLVED. The error is a [*NetworkError], which
	// names the host, in the same words on either browser.
	ErrNameNotResolved = errors.New("hybroute: the host name does not resolve")
	// ErrUnreachable is matched by the error of a call whose page did not
	// load on the local browser because no address of its host took the
	// connection (refused, unreachable, timed out). The error is a
	// [*NetworkError].
	ErrUnreachable = errors.New("hybroute: no address of the host took the connection")
)

// NetworkError is why a page or a request did not load, where the browser
// itself says only a network error (net::ERR_TUNNEL_CONNECTION_FAILED, say,
// when the local browser's egress check did not make the connection). It
// matches [ErrNameNotResolved] or [ErrUnreachable]; a refusal (of the
// egress check, or of the guard) wraps the rules' [*netpolicy.BlockedError]
// instead, so errors.Is finds the rule's sentinel ([netpolicy.ErrPrivate],
// …) and errors.As the reason's name. The browser's own error, when there
// was one (a [*chromedp.LoadError]), is in the chain too.
type NetworkError struct {
	// URL is what did not load, when it is known; it may carry a
	// credential: redact it before it is shown (internal/redact).
	URL string
	// Host is the host it asked for, as the URL writes it; Addr is the
	// host:port the browser connected to ("" when no connection was
	// seen).
	Host, Addr string
	// Err is why: ErrNameNotResolved, ErrUnreachable (with what the dials
	// said), or the refusal, which wraps a *netpolicy.BlockedError.
	Err error
	// By is who refused it, for a refusal: "egress" (the local browser's
	// connection) or "guard" (the request, paused in the browser).
	By string
	// Browser is what the browser said, nil when it said nothing to the
	// caller (a request of the page, an error page met later).
	Browser error
}

func (e *NetworkError) Error() string {
	host := e.Host
	if host == "" {
		host = "the page's host"
	}
	switch {
	case errors.Is(e.Err, ErrNameNotResolved):
		return "hybroute: " + host + " does not resolve: the name has no address"
	case errors.Is(e.Err, ErrUnreachable):
		return "hybroute: no address of " + host + " took the connection"
	case e.By == "egress":
		return "hybroute: the egress check refused the connection to " + e.Addr + ": " + e.Err.Error()
	case e.By == "guard":
		return "hybroute: the guard refused the request: " + e.Err.Error()
	case errors.Is(e.Err, chromedp.ErrPageLoad):
		return "hybroute: the load of " + host + " failed; the browser said no more"
	}
	return "hybroute: " + e.Err.Error()
}

// Unwrap returns the cause and what the browser said.
func (e *NetworkError) Unwrap() []error {
	if e.Browser != nil {
		return []error{e.Err, e.Browser}
	}
	return []error{e.Err}
}

// BusyError is the error of a call that did not get its turn to open a
// local tab within its budget, or whose new session found no room under
// [WithMaxSessions] or [WithMaxLocalMemory] (Sessions or Memory set)
// within it. It matches [ErrBusy].
type BusyError struct {
	// Sessions is the WithMaxSessions cap a new session waited for room
	// under, every session being in a call; 0 when the wait was not for it.
	Sessions int
	// Memory is the WithMaxLocalMemory budget a new local session waited
	// for room under; 0 when the wait was not for it.
	Memory int64
	// Ahead is how many tab openings (or new sessions, for room) were
	// queued ahead of the call.
	Ahead int
	// Waited is how long the call waited: 0 when it was refused at once.
	Waited time.Duration
	// Estimate is the wait the queue foresaw for the call when it refused
	// it; 0 when the call waited out its whole allowance.
	Estimate time.Duration
	// Budget is what the call's budget allowed for the wait.
	Budget time.Duration
}

func (e *BusyError) Error() string {
	if e.Sessions > 0 || e.Memory > 0 {
		msg := fmt.Sprintf("hybroute: busy: %d sessions are open, the most WithMaxSessions allows, and every one is in a call", e.Sessions)
		if e.Sessions == 0 {
			msg = fmt.Sprintf("hybroute: busy: the local browser is at its memory budget of %d MiB (WithMaxLocalMemory), and every local session is in a call", e.Memory>>20)
		}
		if e.Estimate > 0 {
			return msg + fmt.Sprintf(": about %s before one is free, %d waiting ahead, more than the call's %s for the wait allows",
				e.Estimate.Round(100*time.Millisecond), e.Ahead, max(e.Budget, 0).Round(100*time.Millisecond))
		}
		return msg + fmt.Sprintf(": none became idle in the %s the call waited (all it allows)", e.Waited.Round(time.Millisecond))
	}
	if e.Estimate == 0 {
		return fmt.Sprintf("hybroute: the local browser is busy: waited %s in the queue for a turn to open a tab (all the call allows), %d still ahead",
			e.Waited.Round(time.Millisecond), e.Ahead)
	}
	msg := fmt.Sprintf("hybroute: the local browser is busy: %d tab openings are queued ahead, about %s, more than the call's %s for the wait allows",
		e.Ahead, e.Estimate.Round(100*time.Millisecond), max(e.Budget, 0).Round(100*time.Millisecond))
	if e.Waited > 0 {
		msg += fmt.Sprintf(" (told after %s in the queue)", e.Waited.Round(time.Millisecond))
	}
	return msg
}

// Is makes errors.Is(err, ErrBusy) hold.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// UnsupportedBrowserError is the error of a browser the guard cannot
// cover. Its text names the browser, its version, what it lacks and the
// supported range.
type UnsupportedBrowserError struct {
	// Browser is the product string the browser gave (Browser.getVersion),
	// e.g. "HeadlessChrome/138.0.7204.0".
	Browser string
	// Lacks says what the browser lacks, e.g. "Network.emulateNetworkConditionsByRule".
	Lacks string
	// Route is where the browser was met: "local" or "cloud".
	Route string
}

func (e *UnsupportedBrowserError) Error() string {
	return fmt.Sprintf("hybroute: unsupported browser: %s on the %s route lacks %s; supported: Chromium %d to the newest, full browser or headless shell",
		e.Browser, e.Route, e.Lacks, cdpcompat.MinMajor)
}

// Is makes errors.Is find ErrUnsupportedBrowser.
func (e *UnsupportedBrowserError) Is(target error) bool { return target == ErrUnsupportedBrowser }

// reason is the short account a fallback's Result carries.
func (e *UnsupportedBrowserError) reason() string {
	return "unsupported_browser: " + e.Browser + " lacks " + e.Lacks
}

// deadBrowserError is the error of a call whose browser died: its text
// names the browser, errors.Is finds ErrBrowserDead.
type deadBrowserError struct{ msg string }

func (e *deadBrowserError) Error() string { return e.msg }

func (e *deadBrowserError) Is(target error) bool { return target == ErrBrowserDead }

// errLocalDead is the death of the local Chromium.
var errLocalDead error = &deadBrowserError{"hybroute: the local Chromium died; its tabs, " +
	"cookies and storage are lost, the next call starts a fresh Chromium"}

// remoteDead is the death of a remote browser: browser names it ("the
// cloud browser of Browserbase", "the browser of the CDP override").
func remoteDead(browser string) error {
	return &deadBrowserError{"hybroute: " + browser + " died (its CDP connection ended); " +
		"the session is gone with its tabs, cookies and storage, the next call starts a new one"}
}

// noCDPError is the message agent tools print for a cloud session without
// a CDP endpoint, kept verbatim, without the package prefix, so that people
// who met it there recognise it and their log searches still match.
type noCDPError struct{ provider string }

func (e *noCDPError) Error() string {
	return fmt.Sprintf("Cloud browser provider %s returned no CDP endpoint, so Browser Use mode cannot drive it. Switch to the built-in browser tools for this provider.", e.provider)
}

func (e *noCDPError) Unwrap() error { return ErrNoCDPEndpoint }

// Redaction: API keys, signing keys and URL tokens never appear in an error
// or a log line, in any of the forms a URL or an error quotes them
// (internal/redact lists the spellings), and a URL is printed only through
// redact.Display (a refusal prints it so, netpolicy.BlockedError) or, for a
// provider's CDP URL, redact.URL (every query value replaced by REDACTED).
