// Package screencast streams the frames of a tab (CDP Page.startScreencast)
// to callbacks, each at a bounded rate.
//
// A tab has one screencast: the browser keeps one per DevTools session, and
// chromedp has one session per tab. So the Casts of one tab share it: the
// first Start starts the browser's screencast with its Options' Quality and
// size, the others join it, and the last Stop stops it. Each Cast gets
// frames at most once per its own Interval; a frame that comes sooner waits
// and is replaced by a newer one, so a Cast never misses the latest picture
// of the page, only the ones in between. The browser gets its ack once the
// frame is handed on, no sooner than the shortest Interval of the tab's
// Casts, which is what holds the browser's own rate down.
package screencast

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// ErrNoTab is returned by Start when ctx is not a chromedp context with a tab.
var ErrNoTab = errors.New("screencast: the context has no chromedp tab")

// Defaults of Options.
const (
	DefaultInterval  = 100 * time.Millisecond
	DefaultQuality   = 70
	DefaultMaxWidth  = 1280
	DefaultMaxHeight = 1024
)

// Frame is one picture of the tab.
type Frame struct {
	// JPEG is the encoded picture. The Casts of a tab share it: read it,
	// never change it.
	JPEG []byte
	// Meta is what the browser says of the picture: DeviceWidth and
	// DeviceHeight are the viewport in CSS pixels (what input events use),
	// OffsetTop and PageScaleFactor place it, ScrollOffsetX/Y are the
	// page's scroll, Timestamp when the browser drew it.
	Meta page.ScreencastFrameMetadata
	// At is when the frame arrived here.
	At time.Time
}

// Options tune a Cast. The zero value takes the defaults.
type Options struct {
	// Interval is the least time between two frames handed to this Cast's
	// callback (DefaultInterval: 10 frames a second at most).
	Interval time.Duration
	// Quality is the JPEG quality, 1 to 100 (DefaultQuality). It and the
	// size hold for the tab while the first Cast that started it runs.
	Quality int
	// MaxWidth and MaxHeight bound the picture in pixels; the browser
	// scales the page down to fit (DefaultMaxWidth, DefaultMaxHeight).
	MaxWidth, MaxHeight int
}

func (o Options) withDefaults() Options {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Quality <= 0 || o.Quality > 100 {
		o.Quality = DefaultQuality
	}
	if o.MaxWidth <= 0 {
		o.MaxWidth = DefaultMaxWidth
	}
	if o.MaxHeight <= 0 {
		o.MaxHeight = DefaultMaxHeight
	}
	return o
}

// Cast is one callback's share of a tab's screencast.
type Cast struct {
	h        *hub
	fn       func(Frame)
	interval time.Duration
	wake     chan struct{} // has room for one: a frame waits in latest
	done     chan struct{} // closed when the Cast's goroutine ends
	stop     chan struct{} // closed by Stop or the end of ctx
	stopOnce sync.Once

	mu     sync.Mutex
	latest *Frame
}

// Start starts (or joins) the screencast of the tab of ctx, and calls fn
// with its frames, one at a time from one goroutine, at most once per
// opts.Interval. The Cast ends when ctx ends, when the tab goes away, or on
// Stop. fn must return promptly; while it runs, newer frames replace each
// other and the last one is handed on next.
func Start(ctx context.Context, opts Options, fn func(Frame)) (*Cast, error) {
	c := chromedp.FromContext(ctx)
	if c == nil || c.Target == nil {
		return nil, ErrNoTab
	}
	opts = opts.withDefaults()
	cast := &Cast{
		fn:       fn,
		interval: opts.Interval,
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		stop:     make(chan struct{}),
	}
	h, err := join(ctx, c.Target, opts, cast)
	if err != nil {
		return nil, err
	}
	cast.h = h
	go cast.run(ctx)
	return cast, nil
}

// Stop ends the Cast and waits until its callback has returned for the
// last time. The tab's screencast stops with its last Cast. Stop may be
// called more than once, and from the callback's goroutine only not.
func (c *Cast) Stop() {
	c.stopOnce.Do(func() { close(c.stop) })
	<-c.done
}

// Done is closed when the Cast has ended: after Stop, the end of its ctx, or
// the tab's going away.
func (c *Cast) Done() <-chan struct{} { return c.done }

// offer hands the Cast a frame without waiting.
func (c *Cast) offer(f *Frame) {
	c.mu.Lock()
	c.latest = f
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *Cast) take() *Frame {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.latest
	c.latest = nil
	return f
}

func (c *Cast) run(ctx context.Context) {
	defer close(c.done)
	defer c.h.leave(c)
	var last time.Time
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-c.wake:
		case <-c.stop:
			return
		case <-ctx.Done():
			return
		case <-c.h.ended:
			return
		}
		if wait := c.interval - time.Since(last); !last.IsZero() && wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-c.stop:
				return
			case <-ctx.Done():
				return
			case <-c.h.ended:
				return
			}
		}
		f := c.take()
		if f == nil {
			continue
		}
		last = time.Now()
		c.fn(*f)
	}
}

// hubs holds the running screencast of each tab. mu also orders the start
// and stop of a tab's screencast, so a stop never lands after a new start.
var (
	mu   sync.Mutex
	hubs = map[*chromedp.Target]*hub{}
)

// hub is the browser's screencast of one tab, shared by its Casts.
type hub struct {
	target *chromedp.Target
	tab    context.Context // the tab's chromedp context, outliving any one caller
	cancel context.CancelFunc
	ended  chan struct{} // closed when the frames stop coming

	mu    sync.Mutex
	casts map[*Cast]struct{}
}

// commandTimeout bounds the start and the stop of a tab's screencast,
// which run under mu.
const commandTimeout = 2 * time.Second

func join(ctx context.Context, t *chromedp.Target, opts Options, c *Cast) (*hub, error) {
	mu.Lock()
	defer mu.Unlock()
	if h := hubs[t]; h != nil {
		select {
		case <-h.ended:
		default:
			h.mu.Lock()
			h.casts[c] = struct{}{}
			h.mu.Unlock()
			return h, nil
		}
	}
	tab, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h := &hub{target: t, tab: tab, cancel: cancel, ended: make(chan struct{}), casts: map[*Cast]struct{}{c: {}}}
	// Subscribe before the start, so the first frame is not lost.
	frames := chromedp.Events(tab, page.ScreencastFrame)
	quality, latest := int64(opts.Quality), true
	// Bounded as the stop is (leave): mu is every tab's, and a browser that
	// does not answer must not hold it.
	sctx, cancelStart := context.WithTimeout(ctx, commandTimeout)
	defer cancelStart()
	if _, err := chromedp.Call(sctx, page.StartScreencast, page.StartScreencastParams{
		Format:    page.StartScreencastFormatJpeg,
		Quality:   &quality,
		MaxWidth:  int64(opts.MaxWidth),
		MaxHeight: int64(opts.MaxHeight),
		// One frame in flight, and the newest one sent on the ack: with the
		// ack held back to the interval, the next frame is the page as it
		// is then, not as it was when the last one was drawn.
		MaxFramesInFlight: 1,
		SendLastFrame:     &latest,
	}); err != nil {
		cancel()
		for range frames { // ends the subscription
			break
		}
		return nil, fmt.Errorf("screencast: starting: %w", err)
	}
	hubs[t] = h
	go h.run(frames)
	return h, nil
}

// leave takes c out of the hub, and stops the tab's screencast when c was
// its last Cast.
func (h *hub) leave(c *Cast) {
	mu.Lock()
	defer mu.Unlock()
	h.mu.Lock()
	delete(h.casts, c)
	empty := len(h.casts) == 0
	h.mu.Unlock()
	if !empty {
		return
	}
	if hubs[h.target] == h {
		delete(hubs, h.target)
	}
	select {
	case <-h.ended:
	default:
		// The tab may be gone or going: the stop is a courtesy to a tab that
		// lives on, bounded so a dead one cannot hold mu.
		sctx, cancel := context.WithTimeout(h.tab, commandTimeout)
		_, _ = chromedp.Call(sctx, page.StopScreencast, cdp.Empty{})
		cancel()
	}
	h.cancel()
	<-h.ended
}

// interval is the shortest Interval of the hub's Casts.
func (h *hub) interval() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	var d time.Duration
	for c := range h.casts {
		if d == 0 || c.interval < d {
			d = c.interval
		}
	}
	return d
}

func (h *hub) run(frames func(yield func(page.EventScreencastFrame, error) bool)) {
	defer close(h.ended)
	defer h.cancel()
	var lastAck time.Time
	for ev, err := range frames {
		if err != nil {
			return
		}
		f := &Frame{JPEG: ev.Data, At: time.Now()}
		if ev.Metadata != nil {
			f.Meta = *ev.Metadata
		}
		h.mu.Lock()
		for c := range h.casts {
			c.offer(f)
		}
		h.mu.Unlock()
		// The browser sends the next frame only after the ack (with a
		// couple in flight): acking no sooner than the shortest interval
		// holds its encoding down to what the Casts take.
		if wait := h.interval() - time.Since(lastAck); !lastAck.IsZero() && wait > 0 {
			select {
			case <-time.After(wait):
			case <-h.tab.Done():
				return
			}
		}
		lastAck = time.Now()
		if _, err := chromedp.Call(h.tab, page.ScreencastFrameAck, page.ScreencastFrameAckParams{SessionID: ev.SessionID}); err != nil {
			return
		}
	}
}
