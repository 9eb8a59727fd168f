package cdpconn

import (
	"context"
	"net/http"
	"sync"

	"github.com/chromedp/chromedp"
)

// Allocator is a chromedp.Allocator that attaches to a browser that already
// runs, through Dial. Unlike chromedp's remote allocator it never fetches
// /json/version and has no panic path: what it dials is the URL it was
// given, and every failure is an error of the first action.
type Allocator struct {
	wsURL  string
	client *http.Client
	opts   []Option

	wg sync.WaitGroup
}

var (
	_ chromedp.Allocator = (*Allocator)(nil)
	_ chromedp.Attacher  = (*Allocator)(nil)
)

// NewAllocator returns an allocator context for chromedp.NewContext: each
// chromedp context made from it opens a new tab on the browser at wsURL,
// dialled with client (see Dial). As with every chromedp allocator, the
// connection belongs to the context of the first action run on the tab:
// when that context ends, the tab is closed and the connection with it.
func NewAllocator(parent context.Context, wsURL string, client *http.Client, opts ...Option) (context.Context, context.CancelFunc) {
	a := &Allocator{wsURL: wsURL, client: client, opts: opts}
	return chromedp.NewAllocatorContext(parent, a)
}

// Allocate implements chromedp.Allocator: it dials the browser, bounded by
// ctx, and hands the connection to a chromedp.Browser.
func (a *Allocator) Allocate(ctx context.Context, opts ...chromedp.BrowserOption) (*chromedp.Browser, error) {
	if chromedp.FromContext(ctx) == nil {
		return nil, chromedp.ErrInvalidContext
	}
	conn, err := Dial(ctx, a.wsURL, a.client, a.opts...)
	if err != nil {
		return nil, err
	}
	// The connection has a context of its own, so the tabs can be closed
	// over it after ctx ends and before it goes.
	wctx, cancel := context.WithCancel(context.Background())
	a.wg.Go(func() {
		<-ctx.Done()
		_ = chromedp.Cancel(ctx) // closes the tab; waits for it
		cancel()                 // then the connection
	})
	return chromedp.NewBrowserTransport(wctx, conn, opts...)
}

// Wait implements chromedp.Allocator: it waits until every connection the
// allocator opened is closed.
func (a *Allocator) Wait() { a.wg.Wait() }

// Attaches implements chromedp.Attacher: the browser runs already, so a
// new chromedp context opens a tab of its own rather than taking the
// browser's first one, and cancelling it closes only that tab.
func (a *Allocator) Attaches() bool { return true }
