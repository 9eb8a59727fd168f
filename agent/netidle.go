package agent

import (
	"context"
	"sync"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// netIdleMax bounds the wait for the requests an action started: a page
// that polls, or streams, is reported as it is then.
const netIdleMax = 2 * time.Second

// netWatch counts the tab's requests in flight that started after it did.
type netWatch struct {
	mu       sync.Mutex
	inflight map[network.RequestID]struct{}
}

// watchNet starts counting; stop it with the returned func.
func watchNet(ctx context.Context) (*netWatch, context.CancelFunc, error) {
	w := &netWatch{inflight: map[network.RequestID]struct{}{}}
	lctx, cancel := context.WithCancel(ctx)
	err := chromedp.Listen(lctx, func(ev any) {
		w.mu.Lock()
		defer w.mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			switch ev.Type {
			case network.ResourceTypeWebSocket, network.ResourceTypeEventSource:
				return // open for the page's life: never idle
			}
			w.inflight[ev.RequestID] = struct{}{}
		case *network.EventLoadingFinished:
			delete(w.inflight, ev.RequestID)
		case *network.EventLoadingFailed:
			delete(w.inflight, ev.RequestID)
		}
	})
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return w, cancel, nil
}

func (w *netWatch) busy() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.inflight) > 0
}

// waitIdle waits until no request the action started is in flight, up to
// netIdleMax.
func (w *netWatch) waitIdle(ctx context.Context) {
	if !w.busy() {
		return
	}
	deadline := time.NewTimer(netIdleMax)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for w.busy() {
		select {
		case <-tick.C:
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// settled runs an input action and waits for the page to settle: for a
// navigation it started (withNavFlag), then for the requests it started
// to end, each within its bound.
func settled(ctx context.Context, c *call, navigated *bool, act func() error) error {
	w, stop, err := watchNet(ctx)
	if err != nil {
		return err
	}
	defer stop()
	if err := withNavFlag(ctx, c, navigated, act); err != nil {
		return err
	}
	w.waitIdle(ctx)
	return nil
}
