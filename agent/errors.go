package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent/internal/modeltext"
	"github.com/hybroute/hybroute/internal/redact"
	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/provider"
)

// Causes are the sentinels a tool error is worded from (describe), matched
// with errors.Is: a tool error that names none of them (nor one of the
// types *netpolicy.BlockedError, *hybroute.NetworkError,
// *hybroute.BusyError, *provider.Error, *chromedp.LoadError, which carry
// the details) says "the browser call failed: " and the browser's own text.
// A client, or a test of the toolset, checks a Router error against them.
var Causes = []error{
	netpolicy.ErrMetadata, netpolicy.ErrPrivate, netpolicy.ErrSecretInURL, netpolicy.ErrInvalidURL,
	netpolicy.ErrLookupTimeout, netpolicy.ErrHostRule, netpolicy.ErrTooManyHosts,
	hybroute.ErrNameNotResolved, hybroute.ErrUnreachable, chromedp.ErrPageLoad,
	hybroute.ErrNoCDPEndpoint, hybroute.ErrFallbackFailed, hybroute.ErrNoChromium, hybroute.ErrBrowserDead,
	hybroute.ErrClosed, ErrClosed, hybroute.ErrBusy, hybroute.ErrDialogOpen,
	context.DeadlineExceeded,
}

// describe turns the error of a call into text a model can act on: what was
// refused and why, or what failed, without the chain of wrapped protocol
// errors or the Router's session keys.
func describe(err error, c *call, key string) string {
	var me *modeltext.Error
	if errors.As(err, &me) {
		return me.Error()
	}
	var ne *hybroute.NetworkError
	if errors.As(err, &ne) && (c == nil || !c.blanked) {
		return "the page did not load: " + networkText(ne)
	}
	if blocked := blockedErrors(err); len(blocked) > 0 {
		var pb *pageBlockedError
		var lines []string
		for _, b := range blocked {
			// As the Router's own messages show it: no credential, bounded.
			shown := redact.Display(b.URL)
			switch {
			case errors.As(err, &pb):
				lines = append(lines, "blocked: the page is at "+shown+", which "+reason(b)+". Nothing was read from it; navigate elsewhere.")
			case c != nil && c.ran && c.blanked:
				lines = append(lines, "blocked: the page tried to load "+shown+", which "+reason(b)+"; the request was refused and the tab was sent to about:blank. "+advice(b))
			case c != nil && c.ran:
				lines = append(lines, "blocked: the page tried to load "+shown+", which "+reason(b)+"; the request was refused, but the tab could not be sent to about:blank, so nothing will be read from it until you navigate elsewhere. "+advice(b))
			default:
				lines = append(lines, "blocked: "+shown+" "+reason(b)+"; no browser opened it. "+advice(b))
			}
		}
		return strings.Join(lines, "\n")
	}
	switch {
	case errors.Is(err, hybroute.ErrNoCDPEndpoint):
		// The original message, verbatim: it says what to do.
		return deepest(err, hybroute.ErrNoCDPEndpoint)
	case errors.Is(err, hybroute.ErrFallbackFailed):
		msg := "no browser could be started for this session: the cloud provider failed"
		var pe *provider.Error
		if errors.As(err, &pe) {
			msg += " (" + pe.Error() + ")"
		}
		msg += ", and the local Chromium failed too"
		if errors.Is(err, hybroute.ErrNoChromium) {
			msg += " (no Chromium is installed on this machine)"
		}
		return msg + ". Retrying later may work; tell the user if it keeps failing."
	case errors.Is(err, netpolicy.ErrTooManyHosts):
		return strings.TrimPrefix(deepest(err, netpolicy.ErrTooManyHosts), "hybroute: ") +
			". Nothing ran and no page was opened: split the work into calls that each name fewer hosts."
	case errors.Is(err, hybroute.ErrNoChromium):
		return "no local browser is available: no Chromium or Chrome was found on this machine, or the one named cannot run. " +
			"Tell the user to install Chromium, or to name it with hybroute mcp --chromium PATH (or CHROMIUM=PATH); the server's log says where it looked."
	case errors.Is(err, hybroute.ErrBrowserDead):
		return "the session's browser ended during the call; the next call starts a new one, so navigate again."
	case errors.Is(err, hybroute.ErrReleased):
		return "the session was closed during this call (browser_close, or its client went away), so the call stopped; the next call starts a fresh session: navigate again."
	case errors.Is(err, hybroute.ErrClosed), errors.Is(err, ErrClosed):
		return "the browser tools are shutting down."
	case errors.Is(err, hybroute.ErrBusy):
		return busyText(err)
	case errors.Is(err, hybroute.ErrDialogOpen):
		return "a JavaScript dialog is open in the page and waits for your answer (" + scrubKey(innermost(err), key) + "): call browser_handle_dialog first; nothing else runs in the page until then."
	case errors.Is(err, context.DeadlineExceeded) && (c == nil || !c.ran):
		return "timed out opening the browser session: the browser took too long to open a tab for it (a loaded machine). Nothing ran; try again."
	case errors.Is(err, context.DeadlineExceeded) && c.script:
		return "the script timed out: it did not finish within the call's time limit. Take a snapshot to see where the page is, or run shorter work."
	case errors.Is(err, context.DeadlineExceeded):
		return "the page timed out: the browser did not finish within the call's time limit (a page that never finishes loading, or a slow site). Take a snapshot to see where the page is, or try again."
	case errors.Is(err, chromedp.ErrPageLoad):
		var le *chromedp.LoadError
		if errors.As(err, &le) && le.ErrorText == "net::ERR_ABORTED" {
			// The browser gave the load up itself: nothing of the site's
			// failed, so "is the site up" would send the model astray.
			return "the page did not load: the browser abandoned this navigation (net::ERR_ABORTED), most often because the page started a navigation of its own, or the link was a download. " +
				"The result's Page line says where the tab is; navigate again if you still need this URL."
		}
		if errors.As(err, &le) && le.ErrorText != "" {
			return "the page did not load: " + le.ErrorText + ". Check the URL, or whether the site is up."
		}
		return "the page did not load. Check the URL, or whether the site is up."
	}
	var pe *provider.Error
	if errors.As(err, &pe) {
		return pe.Error()
	}
	return "the browser call failed: " + scrubKey(innermost(err), key)
}

// networkText says why a page or a request did not load, completing "the
// page did not load: " or "failed: ". The wording is the same on every
// browser.
func networkText(ne *hybroute.NetworkError) string {
	host := ne.Host
	if host == "" {
		host = "its host"
	}
	if b, ok := errors.AsType[*netpolicy.BlockedError](ne.Err); ok && ne.By != "" {
		by := "the security guard"
		if ne.By == "egress" {
			by = "the egress check, which decides every connection of the local browser"
		}
		return "refused by " + by + " (" + b.Reason.String() + "): the request for " + redact.Display(orText(ne.URL, b.URL)) +
			" " + reason(b) + ". Nothing was loaded from it. " + advice(b)
	}
	switch {
	case errors.Is(ne.Err, hybroute.ErrNameNotResolved):
		return host + " does not resolve: the name has no address. Check the URL's spelling; the site may not exist."
	case errors.Is(ne.Err, hybroute.ErrUnreachable):
		return "no address of " + host + " took the connection: nothing listens there, or it cannot be reached. Check the URL's port, or whether the site is up."
	}
	return "the load of " + host + " failed, and the browser said no more. Check the URL, or whether the site is up."
}

// busyText is the answer to a call that did not get its turn to open a
// tab. It starts with "busy:", which a client may look for.
func busyText(err error) string {
	const after = ". Nothing ran and no page was opened; try again in a few seconds."
	var be *hybroute.BusyError
	if !errors.As(err, &be) {
		return "busy: the browser keeps as many sessions as it may (by count or memory), and every one is running a call" + after
	}
	if be.Sessions > 0 || be.Memory > 0 {
		msg := fmt.Sprintf("busy: the browser keeps at most %d sessions, and every one is running a call", be.Sessions)
		if be.Sessions == 0 {
			msg = "busy: the local browser is at its memory budget, and every one of its sessions is running a call"
		}
		if be.Estimate == 0 {
			msg += fmt.Sprintf(" (this call waited %s for one to be free, its limit)", be.Waited.Round(100*time.Millisecond))
		} else {
			msg += fmt.Sprintf(" (about %s before one is free, longer than this call may wait; it did not wait)", be.Estimate.Round(100*time.Millisecond))
		}
		return msg + after
	}
	msg := "busy: the local browser is opening tabs for other sessions"
	if be.Estimate == 0 {
		msg += fmt.Sprintf(" (this call waited %s in the queue, its limit)", be.Waited.Round(100*time.Millisecond))
	} else {
		msg += fmt.Sprintf(" (%d queued ahead, about %s, longer than this call may wait)", be.Ahead, be.Estimate.Round(100*time.Millisecond))
	}
	return msg + after
}

// blockedErrors collects every *netpolicy.BlockedError in err's tree: a call
// with several refused URLs joins their errors.
func blockedErrors(err error) []*netpolicy.BlockedError {
	var out []*netpolicy.BlockedError
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if b, ok := e.(*netpolicy.BlockedError); ok {
			for _, have := range out {
				if have.URL == b.URL && have.Reason == b.Reason {
					return
				}
			}
			out = append(out, b)
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}

// reason says why a URL is blocked, completing "<url> ...".
func reason(b *netpolicy.BlockedError) string {
	switch {
	case errors.Is(b, netpolicy.ErrMetadata):
		return "targets a cloud metadata endpoint"
	case errors.Is(b, netpolicy.ErrSecretInURL):
		return "carries a credential in the URL, and this configuration has no local browser to open such a URL on (it is never sent to a cloud browser)"
	case errors.Is(b, netpolicy.ErrPrivate):
		if b.Detail != nil {
			return "targets a private or internal address (" + b.Detail.Error() + ")"
		}
		return "targets a private or internal address that this configuration does not let a browser open"
	case b.Detail != nil:
		return "is not a URL the browser can open (" + b.Detail.Error() + ")"
	}
	return "is not a URL the browser can open"
}

// advice says what the model can do about a blocked URL.
func advice(b *netpolicy.BlockedError) string {
	switch {
	case errors.Is(b, netpolicy.ErrMetadata):
		return "Do not retry it; no setting allows it."
	case b.Reason == netpolicy.ReasonPrivateNotNamed:
		return "A page reaches a private host only while a call names it: if the user wants it opened, navigate to it (or name its URL in browser_exec's code)."
	case errors.Is(b, netpolicy.ErrPrivate):
		return "Do not retry it; if the user needs this address, they must allow private addresses in the configuration."
	case errors.Is(b, netpolicy.ErrSecretInURL):
		return "Do not retry it with the credential in the URL; if the user needs it, they must allow secrets in URLs in the configuration."
	}
	return "Check the URL's spelling (scheme, host, port)."
}

// deepest returns the text of the innermost error in err's chain that still
// is sentinel, short of the sentinel itself: the error that says it best.
func deepest(err, sentinel error) string {
	best := sentinel.Error()
	for e := err; e != nil; {
		if e != sentinel && errors.Is(e, sentinel) {
			best = e.Error()
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			next := error(nil)
			for _, x := range u.Unwrap() {
				if errors.Is(x, sentinel) {
					next = x
					break
				}
			}
			e = next
		case interface{ Unwrap() error }:
			e = u.Unwrap()
		default:
			e = nil
		}
	}
	return best
}

// innermost is the text of the error at the bottom of err's chain (the
// first branch of a join): what the browser said, without the wrapping.
func innermost(err error) string {
	for {
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			if xs := u.Unwrap(); len(xs) > 0 && xs[0] != nil {
				err = xs[0]
				continue
			}
		case interface{ Unwrap() error }:
			if x := u.Unwrap(); x != nil {
				err = x
				continue
			}
		}
		return err.Error()
	}
}

// scrubKey keeps the Router's sidecar cache key out of what the model reads.
func scrubKey(s, key string) string {
	if key == "" {
		key = hybroute.DefaultSessionKey
	}
	return strings.ReplaceAll(s, key+hybroute.LocalSuffix, key)
}
