package hybroute

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute/internal/liveview"
	"github.com/hybroute/hybroute/internal/redact"
)

// LiveViews serves live views of the Router's sessions: a page where a
// person watches a session's tab and clicks, types, scrolls and navigates
// in it. Each of those is a call of the Router's under the session's key,
// checked as an agent's call is. A view opens by an unguessable token
// bound to one session that expires; the handler answers only on its own
// Host and Origin. Serve it on loopback, under BaseURL's path.
type LiveViews struct {
	r    *Router
	opts LiveViewOptions
	s    *liveview.Server
}

// LiveViewOptions configure [Router.LiveViews].
type LiveViewOptions struct {
	// BaseURL is where the handler is served (http.StripPrefix its path):
	// a view is at BaseURL followed by its token.
	BaseURL string
	// AllowHosts are further Host names the handler answers to, as in
	// mcpserver.Options.
	AllowHosts []string
	// Remote lets the handler answer people on other machines; by default
	// it answers only loopback, wherever it is served.
	Remote bool
}

// LiveViews returns a handler of live views of r's sessions. Close it
// before r.
func (r *Router) LiveViews(opts LiveViewOptions) *LiveViews {
	return &LiveViews{r: r, opts: opts, s: liveview.New(liveview.Options{AllowHosts: opts.AllowHosts, Remote: opts.Remote, Logger: r.log})}
}

// ServeHTTP serves the views' pages.
func (v *LiveViews) ServeHTTP(w http.ResponseWriter, req *http.Request) { v.s.ServeHTTP(w, req) }

// Close ends every view.
func (v *LiveViews) Close() { v.s.Close() }

// HandoffRequest asks a person to do a step in a session's page.
type HandoffRequest struct {
	Task    string           // what the person is asked to do, shown in the view
	Timeout time.Duration    // how long to wait for the person (the view's life); 0: 15 minutes
	OnURL   func(url string) // told the view's URL before the wait
}

// HandoffResult is how a hand-off ended and where it left the page.
type HandoffResult struct {
	ViewURL  string
	Outcome  string // "done", "gave_up", "expired" (the Timeout ran out) or "closed"
	Finished bool   // the person pressed Done
	URL      string // the page afterwards, credentials redacted
	Title    string
}

// Handoff hands session key's page to a person: it opens a view, tells
// req.OnURL its URL, waits until the person presses Done or Give up (or
// Timeout), and says where the page is then. The session goes on with
// what the person did (cookies, the page). A session without CDP fails
// with [ErrNoCDPEndpoint].
func (v *LiveViews) Handoff(ctx context.Context, key string, req HandoffRequest) (HandoffResult, error) {
	h := liveview.Handoff{Task: req.Task, Timeout: req.Timeout, OnURL: req.OnURL, BaseURL: v.opts.BaseURL}
	// The one call of a hand-off that may open the session: the view needs
	// a page to show.
	if _, err := (viewSession{r: v.r, key: key}).call(ctx, nil); err != nil {
		return HandoffResult{}, err
	}
	err := v.s.Handoff(ctx, viewSession{r: v.r, key: key}, &h)
	return HandoffResult{ViewURL: h.ViewURL, Outcome: string(h.Outcome), Finished: h.Outcome == liveview.Done,
		URL: h.Page.URL, Title: h.Page.Title}, err
}

// viewSession is a session as a view drives it: each input a call, on the
// session's open browser session only (openOnly), so that a view never
// opens again a session released under it; the view then ends.
type viewSession struct {
	r   *Router
	key string
}

func (s viewSession) Do(ctx context.Context, fn func(tab context.Context) error) (liveview.Page, error) {
	return s.call(ctx, fn, openOnly())
}

// call runs fn on the session's tab, as a call of the session's key.
func (s viewSession) call(ctx context.Context, fn func(tab context.Context) error, opts ...CallOption) (liveview.Page, error) {
	var title string
	res, err := s.r.Exec(ctx, s.key, "", func(ctx context.Context, _ *Call) error {
		if fn != nil {
			if err := fn(ctx); err != nil {
				return err
			}
		}
		title, _ = chromedp.Run(ctx, chromedp.Title())
		return nil
	}, opts...)
	return liveview.Page{URL: redact.Display(res.LandedURL), Title: title}, viewErr(err)
}

// viewErr is err as the view reads it: a session released under the view
// ends it.
func viewErr(err error) error {
	if errors.Is(err, ErrReleased) {
		return fmt.Errorf("%w: %w", liveview.ErrSessionGone, err)
	}
	return err
}

func (s viewSession) Navigate(ctx context.Context, rawURL string) (liveview.Page, error) {
	if _, err := s.r.Navigate(ctx, s.key, rawURL, nil, openOnly()); err != nil {
		return liveview.Page{}, viewErr(fmt.Errorf("hybroute: the live view's navigation: %w", err))
	}
	return s.Do(ctx, nil)
}
