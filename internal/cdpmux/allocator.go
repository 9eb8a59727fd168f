package cdpmux

import (
	"context"
	"sync"

	"github.com/chromedp/chromedp"
)

// Allocator attaches chromedp to a browser that already runs (a cloud
// session, the CDP override) with a Mux under the connection. Dial makes the
// connection: the cloud-connect code owns how a provider's URL is dialled;
// the Mux only needs a chromedp.Transport.
type Allocator struct {
	// Dial opens the browser's connection, bounded by ctx.
	Dial func(ctx context.Context) (chromedp.Transport, error)
	// Hooks are given to the Mux.
	Hooks Hooks
	// Start, when set, runs once the Mux is up and before chromedp sends its
	// first command: the guard turns itself on there, so it is on before
	// chromedp opens its tab. An error fails the allocation.
	Start func(ctx context.Context, m *Mux) error

	wg sync.WaitGroup
}

var (
	_ chromedp.Allocator = (*Allocator)(nil)
	_ chromedp.Attacher  = (*Allocator)(nil)
)

// Allocate implements chromedp.Allocator.
func (a *Allocator) Allocate(ctx context.Context, opts ...chromedp.BrowserOption) (*chromedp.Browser, error) {
	if chromedp.FromContext(ctx) == nil {
		return nil, chromedp.ErrInvalidContext
	}
	conn, err := a.Dial(ctx)
	if err != nil {
		return nil, err
	}
	m := New(conn, a.Hooks)
	if a.Start != nil {
		if err := a.Start(ctx, m); err != nil {
			_ = m.Close()
			<-m.Done()
			return nil, err
		}
	}
	// The connection has a context of its own, so the tabs can be closed
	// over it after ctx ends and before it goes.
	wctx, cancel := context.WithCancel(context.Background())
	a.wg.Go(func() {
		<-ctx.Done()
		_ = chromedp.Cancel(ctx) // closes the tab; waits for it
		cancel()                 // then the connection
		_ = m.Close()
		<-m.Done()
	})
	return chromedp.NewBrowserTransport(wctx, m, opts...)
}

// Wait implements chromedp.Allocator: it waits until every connection the
// allocator opened is closed and its Mux reader is gone.
func (a *Allocator) Wait() { a.wg.Wait() }

// Attaches implements chromedp.Attacher: a new chromedp context opens a tab
// of its own, and cancelling it closes only that tab.
func (a *Allocator) Attaches() bool { return true }
