package cdpconn

import (
	"context"
	"net/http"

	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute/internal/cdpmux"
)

// newAllocator is the allocator the router dials remote browsers with (a
// cdpmux.Allocator over Dial), with no guard hooks: the tests drive Dial
// through chromedp as the router does.
func newAllocator(parent context.Context, wsURL string, hc *http.Client) (context.Context, context.CancelFunc) {
	return chromedp.NewAllocatorContext(parent, &cdpmux.Allocator{
		Dial: func(ctx context.Context) (chromedp.Transport, error) { return Dial(ctx, wsURL, hc) },
	})
}
