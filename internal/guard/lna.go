package guard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/target"

	"github.com/hybroute/hybroute/internal/cdpmux"
	"github.com/hybroute/hybroute/route"
)

// A remote browser is covered in one of two modes (docs/security.md,
// "The browser's own check";
// docs/decisions/2026-12-06-the-browsers-own-check-stays-a-measurement.md):
//
//   - every request (the default on every major): Fetch pauses every
//     request of every target, and Config.Decide decides each one, at the
//     cost of a round trip per request.
//   - the browser's own check (opt-in, BrowserCheckEnv): Chromium's Local
//     Network Access refuses, on the address it actually connected to,
//     every request of a public page to loopback, private and link-local
//     addresses once the localNetworkAccess permission is denied for the
//     page's browser context (148 and 156: every loading method, WebSockets,
//     redirects and metadata names, TestLocalNetworkAccessTable). The guard
//     denies it for every context before the context's first target runs,
//     and makes every document public to the browser (treat-as-public-address
//     on its response: a page the provider's resolver sent to a private
//     address is public to the check too). It pauses only what the check
//     cannot judge: documents and their redirect hops (the landed-URL
//     rule), requests whose URL could name a metadata endpoint, and every
//     request of a worker.
//
// The second is not the default: the check holds beside the guard's Fetch
// interception, but treat-as-public-address added through
// Fetch.continueResponse does not make a page public (a loopback-served
// page's XHRs reached every private decoy on Chromium 156, while the same
// header sent by the server stopped them all), so a page the browser
// loaded from a private address (split horizon in the provider's network,
// or the tests' loopback sites) would have its subresources unchecked.
// The opt-in is for measuring it, and it is taken only where everything it
// needs holds: a remote browser that may not open private addresses, no
// operator host rules (only a pause applies them), a major of
// BrowserCheckMinMajor or newer, and a browser that takes the permission.

// Mode is how the guard covers a remote browser's requests.
type Mode int32

const (
	// ModeEveryRequest pauses every request (and is the local browser's
	// mode name too, whose egress check sees the rest).
	ModeEveryRequest Mode = iota
	// ModeBrowserCheck leaves to Chromium's Local Network Access what it
	// refuses itself, and pauses the rest.
	ModeBrowserCheck
)

func (m Mode) String() string {
	if m == ModeBrowserCheck {
		return "browser-check"
	}
	return "every-request"
}

// BrowserCheckMinMajor is the first major whose Local Network Access check, with
// the permission denied, refused every loading method of the table
// (TestLocalNetworkAccessTable: 148 and 156 did, 138 sent everything).
const BrowserCheckMinMajor = 148

// BrowserCheckEnv, set to 1, lets the guard take ModeBrowserCheck where
// everything it needs holds. Off by default: see above.
const BrowserCheckEnv = "HYBROUTE_GUARD_BROWSER_CHECK"

// lnaPermissions are the names Chromium has given the permission: the
// first is what the check asks about; the split names of newer majors are
// denied too where a browser takes them.
var lnaPermissions = []string{"local-network-access", "local-network", "loopback-network"}

// treatAsPublic is the header the guard adds to every document response
// in ModeBrowserCheck: one more policy, which only narrows (CSP policies
// add up), meant to make the document public to the Local Network Access
// check wherever it was served from. Chromium 156 does not honour it when
// added this way (see above).
var treatAsPublic = &fetch.HeaderEntry{Name: "Content-Security-Policy", Value: "treat-as-public-address"}

// browserCheckPatterns are the Fetch patterns of ModeBrowserCheck: the
// local browser's (documents at their request, and every request whose
// URL could name a metadata endpoint), and documents again at their
// response, to make them public.
var browserCheckPatterns = append(append([]*fetch.RequestPattern(nil), guardPatterns...),
	&fetch.RequestPattern{URLPattern: "*", ResourceType: network.ResourceTypeDocument, RequestStage: fetch.RequestStageResponse})

// patterns are the guard's Fetch patterns in its mode.
func (g *Guard) patterns() []*fetch.RequestPattern {
	if g.w != route.Local && g.Mode() == ModeBrowserCheck {
		return browserCheckPatterns
	}
	return FetchPatterns(g.w)
}

// Mode is the mode the guard covers its browser in.
func (g *Guard) Mode() Mode { return Mode(g.mode.Load()) }

// chooseMode picks the guard's mode on a remote browser and logs it at
// debug, as the compat shapes are: the browser's check where everything it
// needs holds and the browser takes the permission for its default
// context, every request otherwise.
func (g *Guard) chooseMode(ctx context.Context, m *cdpmux.Mux) {
	if g.w == route.Local {
		return
	}
	why := ""
	switch {
	case os.Getenv(BrowserCheckEnv) != "1":
		why = "the default (" + BrowserCheckEnv + " is not set)"
	case g.cfg.RemotePrivate:
		why = "the browser may open private addresses"
	case g.cfg.EveryRequest:
		why = "the operator's host rules need every request"
	case g.browser.Major < BrowserCheckMinMajor:
		why = fmt.Sprintf("Chromium %d's check does not refuse (docs/security.md)", g.browser.Major)
	default:
		if err := g.denyLocalNetwork(ctx, m, ""); err != nil {
			why = err.Error()
		}
	}
	if why == "" {
		g.mode.Store(int32(ModeBrowserCheck))
	}
	attrs := []slog.Attr{slog.String("route", g.w.String()), slog.String("browser", g.browser.String()),
		slog.String("mode", g.Mode().String())}
	if why != "" {
		attrs = append(attrs, slog.String("why", why))
	}
	g.log.LogAttrs(ctx, slog.LevelDebug, "hybroute: guard mode", attrs...)
}

// errNoPermission is the error of a browser that took none of the
// permission's names.
var errNoPermission = errors.New("the browser takes no localNetworkAccess permission")

// denyLocalNetwork denies the permission for browser context bc ("" is the
// default one) under every name the browser takes; it fails when the
// browser takes none.
func (g *Guard) denyLocalNetwork(ctx context.Context, m *cdpmux.Mux, bc cdp.BrowserContextID) error {
	var errs []error
	taken := 0
	for _, n := range lnaPermissions {
		_, err := m.Call(ctx, "", browser.CommandSetPermission, browser.SetPermissionParams{
			Permission: &browser.PermissionDescriptor{Name: n}, Setting: browser.PermissionSettingDenied, BrowserContextID: bc})
		if err == nil {
			taken++
		} else {
			errs = append(errs, err)
		}
	}
	if taken == 0 {
		return fmt.Errorf("%w: %w", errNoPermission, errors.Join(errs...))
	}
	return nil
}

// setupBrowserCheck is ModeBrowserCheck's part of a paused target's setup:
// the permission denied for its browser context (once per context,
// awaited), and for a worker, Fetch on its own session pausing every
// request (a worker's script is no document: the guard cannot make it
// public). A page or frame bypasses service workers, whose responses are
// not documents the guard can make public either. The target's own
// commands are sent before it runs, so they are in force when it does;
// their answers are in later.
func (g *Guard) setupBrowserCheck(ctx context.Context, m *cdpmux.Mux, s target.SessionID, ti *target.Info) (later []<-chan error, err error) {
	if g.w == route.Local || g.Mode() != ModeBrowserCheck {
		return nil, nil
	}
	if bc := ti.BrowserContextID; bc != "" {
		g.mu.Lock()
		done := g.denied[bc]
		g.mu.Unlock()
		if !done {
			if err = g.denyLocalNetwork(ctx, m, bc); err == nil {
				g.mu.Lock()
				g.denied[bc] = true
				g.mu.Unlock()
			}
		}
	}
	switch ti.Type {
	case "worker", "shared_worker", "service_worker":
		later = append(later, m.Go(ctx, s, fetch.CommandEnable, fetch.EnableParams{Patterns: EveryRequest}))
	case "page", "iframe":
		later = append(later, m.Go(ctx, s, network.CommandSetBypassServiceWorker, network.SetBypassServiceWorkerParams{Bypass: true}))
	}
	return later, err
}

// continueDocument lets a document's response go on, public to the
// browser's check: its headers and treatAsPublic. A response that failed
// goes on as it is.
func (g *Guard) continueDocument(m *cdpmux.Mux, s target.SessionID, ev *fetch.EventRequestPaused) {
	if ev.ResponseErrorReason != "" || ev.ResponseStatusCode == 0 {
		m.Go(g.life, s, fetch.CommandContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
		return
	}
	h := make([]*fetch.HeaderEntry, 0, len(ev.ResponseHeaders)+1)
	for _, x := range ev.ResponseHeaders {
		// Every header of the site's stays, its own policies too.
		if x != nil && x.Name != "" {
			h = append(h, x)
		}
	}
	h = append(h, treatAsPublic)
	m.Go(g.life, s, fetch.CommandContinueResponse, fetch.ContinueResponseParams{
		RequestID: ev.RequestID, ResponseCode: ev.ResponseStatusCode, ResponsePhrase: ev.ResponseStatusText, ResponseHeaders: h})
}

// atResponse reports whether a paused request is paused at its response.
func atResponse(ev *fetch.EventRequestPaused) bool {
	return ev.ResponseStatusCode != 0 || ev.ResponseErrorReason != ""
}
