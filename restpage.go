package hybroute

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hybroute/hybroute/internal/remotetab"
	"github.com/hybroute/hybroute/internal/teardown"
	"github.com/hybroute/hybroute/provider"
)

// Sessions without CDP. A provider whose browser server has a REST API and
// no CDP endpoint (Camofox) hands out sessions with a [provider.RESTDriver] instead
// of a CDP URL. The router keeps them like any cloud session (one per key,
// released, reaped, counted), and the verdicts still decide where each call
// runs: a private URL goes to the local sidecar, metadata is refused before
// any request. A run drives such a session through a [RESTPage] ([Call.REST],
// [DrivesREST]); what Exec does with one that speaks CDP only, Exec says.
//
// What the guard cannot see there is said in docs/security.md (Known limits):
// with no CDP connection there is no request guard inside that browser.

// RESTPage is the page of a session without CDP, as a run of a call made
// with [DrivesREST] gets it ([Call.REST]). Its methods call the
// [provider.RESTDriver] and keep the URL each answer reports as the page's landed
// URL; the reading ones (Snapshot, Screenshot) first ask the server where
// the tab is, and refuse to read a page the landed-URL rule blocks.
type RESTPage struct {
	r *Router
	e *entry
	d provider.RESTDriver
}

// land keeps u as the page's landed URL.
func (p *RESTPage) land(u string) {
	if u != "" {
		p.e.h.SetLanded(u)
	}
}

// moved keeps the URL an action's answer reported.
func (p *RESTPage) moved(u string, err error) (string, error) {
	p.land(u)
	return p.Landed(), err
}

// Landed is the page URL the last answer reported.
func (p *RESTPage) Landed() string { return p.e.landedURL() }

// TabID names the tab the page is in, on its server.
func (p *RESTPage) TabID() string { return p.d.TabID() }

// CheckPage asks the server where the tab is and applies the landed-URL
// rule, as [Call.CheckPage] does on a CDP tab: nothing is read from a
// page that wandered off between calls.
func (p *RESTPage) CheckPage(ctx context.Context) (string, error) {
	u, err := p.d.URL(ctx)
	if err != nil {
		return "", err
	}
	p.land(u)
	return p.check(ctx, p.Landed())
}

func (p *RESTPage) check(ctx context.Context, u string) (string, error) {
	return u, p.r.pol.CheckPage(ctx, u, p.e.route, p.e.guard.Lookups())
}

// Navigate opens rawURL and returns the URL the server says the tab
// landed on. The call was planned on rawURL; the landing is re-checked
// after the run.
func (p *RESTPage) Navigate(ctx context.Context, rawURL string) (string, error) {
	return p.moved(p.d.Navigate(ctx, rawURL))
}

// Snapshot returns the accessibility tree with its refs and the page's
// URL, once the URL passed the landed-URL rule before and after the read.
func (p *RESTPage) Snapshot(ctx context.Context) (string, string, error) {
	if u, err := p.CheckPage(ctx); err != nil {
		return "", u, err
	}
	text, u, err := p.d.Snapshot(ctx)
	p.land(u)
	if err != nil {
		return "", p.Landed(), err
	}
	if u, err := p.check(ctx, p.Landed()); err != nil {
		return "", u, err // read from a blocked page: dropped
	}
	return text, p.Landed(), nil
}

// Screenshot returns a PNG of the page, once its URL passed the landed-URL
// rule before and after the capture.
func (p *RESTPage) Screenshot(ctx context.Context, fullPage bool) ([]byte, error) {
	if _, err := p.CheckPage(ctx); err != nil {
		return nil, err
	}
	png, err := p.d.Screenshot(ctx, fullPage)
	if err != nil {
		return nil, err
	}
	if _, err := p.CheckPage(ctx); err != nil {
		return nil, err // the capture may be of a blocked page: dropped
	}
	return png, nil
}

// Click clicks the element of ref and returns the page URL after it.
func (p *RESTPage) Click(ctx context.Context, ref string) (string, error) {
	return p.moved(p.d.Click(ctx, ref))
}

// Type replaces the text of the field of ref (submit: then Enter) and
// returns the page URL after it.
func (p *RESTPage) Type(ctx context.Context, ref, text string, submit bool) (string, error) {
	return p.moved(p.d.Type(ctx, ref, text, submit))
}

// Press presses key and returns the page URL after it.
func (p *RESTPage) Press(ctx context.Context, key string) (string, error) {
	return p.moved(p.d.Press(ctx, key))
}

// Scroll scrolls the page and returns its URL.
func (p *RESTPage) Scroll(ctx context.Context, direction string) (string, error) {
	return p.moved(p.d.Scroll(ctx, direction))
}

// Back goes back in the tab's history and returns the page URL after it.
func (p *RESTPage) Back(ctx context.Context) (string, error) {
	return p.moved(p.d.Back(ctx))
}

// execREST runs a call on a session without CDP. A run that speaks CDP
// only fails with the no-CDP message, before it runs: there is nothing it
// could drive.
func (r *Router) execREST(ctx context.Context, p Plan, e *entry, t *remotetab.RESTTab, res Result, run func(context.Context, *Call) error, rest bool) (Result, error) {
	if !rest {
		return res, fmt.Errorf("hybroute: session %q: %w", p.CacheKey, &noCDPError{provider: t.Provider})
	}
	page := &RESTPage{r: r, e: e, d: t.Driver}
	cctx, cancel := e.h.Bind(ctx)
	defer cancel()
	started := time.Now()
	runErr := run(cctx, &Call{r: r, e: e, caller: ctx, rest: page})
	r.tel.Ran(ctx, res.Route.String(), started)
	if runErr != nil {
		if e.released.Load() && ctx.Err() == nil {
			runErr = fmt.Errorf("%w: %w", ErrReleased, runErr)
		} else if remotetab.Gone(runErr) {
			// The server lost the tab (a restart, its own reaper): the
			// session is over, and the next call makes a new one.
			_ = t.Close(ctx)
			runErr = fmt.Errorf("%w: %w", &deadBrowserError{"hybroute: the tab of " + t.Provider +
				" is gone (the server no longer knows it); the session is gone with its page, the next call starts a new one"}, runErr)
			return res, fmt.Errorf("hybroute: call on %s session %q: %w", e.route, p.CacheKey, runErr)
		}
		err := fmt.Errorf("hybroute: call on %s session %q: %w", e.route, p.CacheKey, runErr)
		if !t.Dead() {
			if landed, blanked, lerr := r.checkRESTLanding(ctx, e, t); lerr != nil {
				res.LandedURL, res.SentToBlank = landed, blanked
				err = errors.Join(err, lerr)
			}
		}
		return res, err
	}
	var err error
	res.LandedURL, res.SentToBlank, err = r.checkRESTLanding(ctx, e, t)
	return res, err
}

// checkRESTLanding re-checks the URL the server last reported for the tab.
// A refused landing is reported as on a CDP tab, and the tab is replaced by
// a fresh blank one (the server may not navigate to about:blank: Camofox
// opens http and https only).
func (r *Router) checkRESTLanding(ctx context.Context, e *entry, t *remotetab.RESTTab) (string, bool, error) {
	landed := e.landedURL()
	refused := r.pol.RefuseLanding(ctx, landed, e.route, &e.guard)
	if refused == nil {
		return landed, false, nil
	}
	err := fmt.Errorf("hybroute: the page landed on a blocked address: %w", refused)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), teardown.ReleaseTimeout)
	defer cancel()
	if rerr := t.Driver.Reset(rctx); rerr != nil {
		r.log.LogAttrs(ctx, slog.LevelWarn, "hybroute: replacing a tab refused its landing",
			slog.String("cache_key", e.key), slog.String("error", rerr.Error()))
		return landed, false, errors.Join(err, fmt.Errorf("hybroute: replacing the tab with a blank one: %w", rerr))
	}
	e.h.SetLanded("about:blank")
	return landed, true, err
}
