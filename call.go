package hybroute

import (
	"context"
	"strings"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute/route"
)

// Call is the handle of one call, given to its run by [Router.Exec] and
// [Router.Navigate]. It is how a run asks about the page it drives: which
// browser it is in, whether the floor lets the run read it, the requests
// the guard refused, a second tab, and the page of a browser without CDP.
// It is valid until the run returns.
type Call struct {
	r *Router
	e *entry
	// caller is the call's context before it was bound to the tab: a tab
	// the run opens is bound to it too.
	caller context.Context
	rest   *RESTPage
}

// Route is the browser the run drives: [route.Local] for the local
// Chromium (a fallback included), [route.Cloud] for a remote browser. A
// tool that hands the browser something of this machine (a file to
// upload) asks it first: a remote browser must not be given paths of this
// machine.
func (c *Call) Route() route.Route {
	if c.e.route == route.Local {
		return route.Local
	}
	return route.Cloud
}

// CheckPage applies the landed-URL rule to the page's current URL: it
// returns the URL, and an error wrapping a [*netpolicy.BlockedError] when
// the page is where its browser must not be (metadata anywhere, a private
// address on a remote browser). The Router checks the URL after every
// call too; a run that reads the page (its text, a screenshot) checks
// first, so nothing is read from a page that wandered off between calls.
// On a CDP tab it costs no round trip: the URL is kept from the tab's
// events. On a browser without CDP it asks the server ([RESTPage.CheckPage]).
func (c *Call) CheckPage(ctx context.Context) (string, error) {
	if c.rest != nil {
		return c.rest.CheckPage(ctx)
	}
	u := c.e.landedURL()
	return u, c.r.pol.CheckPage(ctx, u, c.e.route, nil)
}

// REST is the page of a session without CDP (a [provider.RESTDriver]'s,
// Camofox's), for a run of a call made with [DrivesREST]; nil on every
// other session, whose run drives the tab through the chromedp context it
// was given.
func (c *Call) REST() *RESTPage { return c.rest }

// Refusals returns the requests of the session's pages that the guard
// refused at or after since (at most 500 are kept per session, the
// newest), and how many older ones may be missing; then, on the local
// browser, the connections of its pages that the egress check refused
// (the newest 64 failures are kept), whose Target is "connection".
func (c *Call) Refusals(since time.Time) ([]Refusal, int) {
	got, dropped := c.e.gs.Refusals(since)
	out := make([]Refusal, 0, len(got))
	for _, x := range got {
		out = append(out, Refusal(x))
	}
	return append(out, c.e.egressRefusals(since)...), dropped
}

// NetworkCause says why a request of the session's pages for rawURL failed
// at or after since, where the browser said only errText (its
// net::ERR_… text, "" when unknown): on the local browser, the egress
// check's refusal of its connection (by reason), a name that does not
// resolve, or a host that took no connection; on any browser, a name that
// does not resolve. It returns nil when the router knows no more than
// errText says. The error is a [*NetworkError].
func (c *Call) NetworkCause(rawURL, errText string, since time.Time) error {
	if ne := c.e.networkCause(rawURL, errText, since); ne != nil {
		return ne
	}
	return nil
}

// PageError says why the session's page is the browser's error page
// (chrome-error://chromewebdata/, where a load that failed leaves a tab,
// also when the page went there on its own between calls): the guard's
// refusal of its document, the egress check's refusal of its connection,
// a name that does not resolve; as far as the router knows, else only that
// the load failed. nil when the page is not an error page. The error is a
// [*NetworkError], which wraps [chromedp.ErrPageLoad].
func (c *Call) PageError() error {
	if c.rest != nil || !strings.HasPrefix(c.e.landedURL(), "chrome-error:") {
		return nil
	}
	failed := ""
	if c.e.bg != nil {
		failed = c.e.bg.Unreachable(c.e.frontID())
	}
	x, host, ok := c.e.gs.DocumentRefusal(failed)
	if ok {
		return &NetworkError{URL: x.URL, Host: host, Err: x.Err, By: "guard", Browser: chromedp.ErrPageLoad}
	}
	if ne := c.e.networkCause(failed, "", time.Time{}); ne != nil {
		ne.Browser = chromedp.ErrPageLoad
		return ne
	}
	return &NetworkError{URL: failed, Host: host, Err: chromedp.ErrPageLoad}
}

// CallOption sets something of one call of [Router.Exec],
// [Router.Navigate] or [Router.Plan].
type CallOption func(*callSettings)

// callSettings are a call's options.
type callSettings struct {
	run        time.Duration // RunTimeout
	wait       bool          // WaitForTurn
	rest       bool          // DrivesREST
	navigation bool          // Navigation
	open       bool          // openOnly
}

func settingsOf(opts []CallOption) callSettings {
	var s callSettings
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	return s
}

// RunTimeout gives the call's run (what it does in the page: the
// navigation, the script) its own budget d, which starts once the call has
// its session. The time before (the wait for a turn to open a tab, the
// tab's opening) counts only against ctx's deadline, which should then be
// longer than d: the difference is the most the call waits for a turn.
// A run that d ends fails with context.DeadlineExceeded, as a call whose
// ctx ended does; a wait that runs out fails with [ErrBusy].
func RunTimeout(d time.Duration) CallOption {
	return func(s *callSettings) { s.run = max(d, 0) }
}

// WaitForTurn makes the call wait for its turn to open a local tab even
// when the queue ahead of it looks longer than its budget allows, rather
// than fail at once with [ErrBusy]. It still ends when its context does.
func WaitForTurn() CallOption { return func(s *callSettings) { s.wait = true } }

// DrivesREST says the run can drive a session without CDP through
// [Call.REST]. Without it, a call that lands on such a session fails with
// [ErrNoCDPEndpoint] before its run runs (unless the fallback took the
// call to the local Chromium, which speaks CDP).
func DrivesREST() CallOption { return func(s *callSettings) { s.rest = true } }

// Navigation makes [Router.Plan] plan a navigation to code, which is then
// one URL: it is not scanned, and it picks the browser, as
// [Router.Navigate] does.
func Navigation() CallOption { return func(s *callSettings) { s.navigation = true } }

// openOnly runs the call only on the key's open session, never a new one
// (a live view's calls: a released session stays released); without one
// the call fails with [ErrReleased].
func openOnly() CallOption { return func(s *callSettings) { s.open = true } }

// Refusal is one request of a session's pages that the guard refused:
// what it asked for and why. A tool that lists a page's requests shows
// them next to the ones the browser made.
type Refusal struct {
	At time.Time
	// URL is the refused URL, cut to a bounded length. It may carry a
	// credential: redact it before it is shown (internal/redact).
	URL string
	// ResourceType is the browser's name of what was asked for
	// (Document, Image, Fetch, …).
	ResourceType string
	// Target is where the request came from: "tab", "popup", "iframe",
	// "frame in tab", "worker", …; "connection" for a connection of the
	// local browser that the egress check refused, which names no request
	// (URL is then the host:port it was for, ResourceType and RequestID
	// are empty).
	Target string
	// RequestID is the browser's Network request id, which the page's
	// Network events carry too; empty when the browser did not say.
	RequestID string
	// Err is why, wrapping a [*netpolicy.BlockedError].
	Err error
}
