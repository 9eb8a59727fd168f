package remotetab

import (
	"context"
	"errors"
	"net/http"

	"github.com/chromedp/cdproto/cdp"

	"github.com/hybroute/hybroute/provider"
)

// RESTTab is the tab of a session without CDP, on a server that has a
// REST API (provider.RESTDriver): what is kept of it is its driver and a
// life that the session's release ends. The server answers its dialogs
// and keeps its browser context.
type RESTTab struct {
	Driver   provider.RESTDriver
	Provider string // the provider's name, for the errors that name it
	ctx      context.Context
	end      context.CancelFunc
}

// NewREST is the tab driven by d, of the provider named provider.
func NewREST(d provider.RESTDriver, provider string) *RESTTab {
	ctx, end := context.WithCancel(context.Background())
	return &RESTTab{Driver: d, Provider: provider, ctx: ctx, end: end}
}

// Context is the tab's life; no chromedp runs in it.
func (t *RESTTab) Context() context.Context { return t.ctx }

// Dead reports that the tab's life ended.
func (t *RESTTab) Dead() bool { return t.ctx.Err() != nil }

// WrapErr is err: a server's answer names its own failures.
func (t *RESTTab) WrapErr(err error) error { return err }

// Replace is never asked of a REST tab: only a CDP call can leave a tab
// wedged, and none runs here.
func (t *RESTTab) Replace(context.Context) (func(), error) {
	return nil, errors.New("hybroute: a tab driven through a REST API is not replaced over CDP")
}

// BrowserContextID is empty: the server keeps the tab's browser context.
func (t *RESTTab) BrowserContextID() cdp.BrowserContextID { return "" }

// Close ends the tab's life; the provider's release closes it on the
// server.
func (t *RESTTab) Close(context.Context) error {
	t.end()
	return nil
}

// Gone reports a server's answer that it does not know the tab: 404, or
// 410 (camofox-browser's answer for a tab lost in a restart).
func Gone(err error) bool {
	var pe *provider.Error
	return errors.As(err, &pe) && (pe.Status == http.StatusNotFound || pe.Status == http.StatusGone)
}
