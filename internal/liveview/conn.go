package liveview

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"github.com/hybroute/hybroute/internal/screencast"
)

// Session is the session a view shows and drives. Each method is one call
// of the Router's on the view's session key, made and checked as an
// agent's call is; the page it returns is where the session's page is
// after the call.
type Session interface {
	// Do runs fn on the session's current tab: tab is its chromedp context.
	Do(ctx context.Context, fn func(tab context.Context) error) (Page, error)
	// Navigate takes the session's page to rawURL, as Router.Navigate.
	Navigate(ctx context.Context, rawURL string) (Page, error)
}

// Page is where a session's page is.
type Page struct {
	URL   string // as the Router checked it, credentials redacted
	Title string
}

// Bounds of a connection.
const (
	callTimeout  = 30 * time.Second // one relayed call (a navigation may load a page)
	pollEvery    = 2 * time.Second  // how often an idle view asks where the page is
	maxMessage   = 64 << 10         // the largest message a person's page sends (a paste)
	maxBatch     = 64               // inputs relayed in one call
	frameQuality = 60
)

// msg is a message of the view's page: an input, a navigation, or Done.
type msg struct {
	T       string  `json:"t"` // mouse, wheel, key, text, navigate, done, giveup
	Type    string  `json:"type,omitempty"`
	X       float64 `json:"x,omitempty"`
	Y       float64 `json:"y,omitempty"`
	DX      float64 `json:"dx,omitempty"`
	DY      float64 `json:"dy,omitempty"`
	Button  string  `json:"button,omitempty"`
	Buttons int64   `json:"buttons,omitempty"`
	Clicks  int64   `json:"clicks,omitempty"`
	Mods    int64   `json:"mods,omitempty"`
	Key     string  `json:"key,omitempty"`
	Text    string  `json:"text,omitempty"`
	URL     string  `json:"url,omitempty"`
}

// conn is one open page of a view.
type conn struct {
	v   *View
	ws  *websocket.Conn
	out chan any // text messages to the page

	fmu    sync.Mutex
	frame  *screencast.Frame // the newest frame not yet sent
	fwake  chan struct{}
	cast   *screencast.Cast
	target *chromedp.Target // the tab cast shows
	width  float64          // the page's viewport, for clamping input
	height float64
}

func (s *Server) serveConn(w http.ResponseWriter, r *http.Request, v *View) {
	// The Origin was checked by the host guard; the library checks it
	// again against Host.
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ws.Close(websocket.StatusGoingAway, "closed")
		return
	}
	s.conns.Add(1)
	s.mu.Unlock()
	defer s.conns.Done()
	ws.SetReadLimit(maxMessage)
	c := &conn{v: v, ws: ws, out: make(chan any, 16), fwake: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	in := make(chan msg, maxBatch)
	var wg sync.WaitGroup
	wg.Go(func() { c.write(ctx, cancel) })
	wg.Go(func() { c.read(ctx, cancel, in) })
	c.relay(ctx, in)
	cancel()
	c.stopCast()
	wg.Wait()
	if o := v.Outcome(); o != "" {
		ws.Close(websocket.StatusNormalClosure, string(o))
	} else {
		ws.Close(websocket.StatusGoingAway, "")
	}
}

// read passes the page's messages to in, until the page goes.
func (c *conn) read(ctx context.Context, cancel context.CancelFunc, in chan<- msg) {
	defer cancel()
	for {
		typ, data, err := c.ws.Read(ctx)
		if err != nil {
			return
		}
		var m msg
		if typ != websocket.MessageText || json.Unmarshal(data, &m) != nil {
			continue
		}
		select {
		case in <- m:
		case <-ctx.Done():
			return
		}
	}
}

// write sends the page its frames (a text "frame" message with the
// viewport, then the JPEG) and the other messages.
func (c *conn) write(ctx context.Context, cancel context.CancelFunc) {
	defer cancel()
	send := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		return c.ws.Write(ctx, websocket.MessageText, b)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-c.out:
			if send(m) != nil {
				return
			}
		case <-c.fwake:
			c.fmu.Lock()
			f := c.frame
			c.frame = nil
			c.fmu.Unlock()
			if f == nil {
				continue
			}
			if send(map[string]any{"t": "frame", "w": f.Meta.DeviceWidth, "h": f.Meta.DeviceHeight}) != nil ||
				c.ws.Write(ctx, websocket.MessageBinary, f.JPEG) != nil {
				return
			}
		}
	}
}

// tell queues a text message for the page; a page that reads nothing
// loses it rather than hold up the relay.
func (c *conn) tell(v any) {
	select {
	case c.out <- v:
	default:
	}
}

func (c *conn) fail(err error) {
	c.tell(map[string]string{"t": "error", "msg": errorText(err)})
	if errors.Is(err, ErrSessionGone) {
		c.v.end(Closed) // nothing left to show, and no call may open it again
	}
}

// relay runs the person's inputs, each batch as one call of the session,
// until the view ends or the page goes.
func (c *conn) relay(ctx context.Context, in <-chan msg) {
	c.refresh(ctx, nil)
	poll := time.NewTicker(pollEvery)
	defer poll.Stop()
	for {
		var castEnded <-chan struct{}
		if c.cast != nil {
			castEnded = c.cast.Done()
		}
		select {
		case <-ctx.Done():
			return
		case <-c.v.ended:
			// The page hears how the view ended before the connection
			// closes (Write may run beside the writer's).
			b, _ := json.Marshal(map[string]string{"t": "end", "outcome": string(c.v.outcome), "msg": endText(c.v.outcome)})
			wctx, cancel := context.WithTimeout(ctx, time.Second)
			_ = c.ws.Write(wctx, websocket.MessageText, b)
			cancel()
			return
		case <-castEnded:
			// The tab went (replaced, closed): show the session's tab now.
			c.stopCast()
			c.refresh(ctx, nil)
		case <-poll.C:
			c.refresh(ctx, nil)
		case m := <-in:
			batch := []msg{m}
		more:
			for len(batch) < maxBatch {
				select {
				case m := <-in:
					batch = append(batch, m)
				default:
					break more
				}
			}
			c.run(ctx, batch)
			poll.Reset(pollEvery)
		}
	}
}

// run relays one batch: the inputs up to a navigation or an end as one
// call, a navigation as a call of its own.
func (c *conn) run(ctx context.Context, batch []msg) {
	var inputs []msg
	flush := func() {
		if len(inputs) > 0 {
			c.refresh(ctx, inputs)
			inputs = nil
		}
	}
	for _, m := range batch {
		switch m.T {
		case "done":
			flush()
			c.v.end(Done)
			return
		case "giveup":
			flush()
			c.v.end(GaveUp)
			return
		case "navigate":
			flush()
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			p, err := c.v.sess.Navigate(cctx, normalizeURL(m.URL))
			cancel()
			if err != nil {
				c.fail(err)
			}
			c.tellPage(p)
			c.refresh(ctx, nil)
		case "mouse", "wheel", "key", "text":
			inputs = append(inputs, m)
		}
	}
	flush()
}

// refresh makes one call of the session: it relays inputs (none: it only
// looks), casts the session's current tab, and tells the page where the
// session's page is.
func (c *conn) refresh(ctx context.Context, inputs []msg) {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	p, err := c.v.sess.Do(cctx, func(tab context.Context) error {
		if err := c.follow(ctx, tab); err != nil {
			return err
		}
		for _, m := range inputs {
			if err := c.dispatch(tab, m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		c.fail(err)
	}
	c.tellPage(p)
}

func (c *conn) tellPage(p Page) {
	if p.URL != "" {
		c.tell(map[string]string{"t": "page", "url": p.URL, "title": p.Title})
	}
}

// follow starts casting tab, unless the view casts it already. The cast
// outlives the call: it only reads frames, and ends with the tab or the
// connection (ctx).
func (c *conn) follow(ctx context.Context, tab context.Context) error {
	t := chromedp.FromContext(tab)
	if t == nil || t.Target == nil {
		return errors.New("liveview: the session's page has no DevTools tab")
	}
	if c.cast != nil && c.target == t.Target {
		return nil
	}
	c.stopCast()
	// The tab's context, with the connection's end in place of the
	// call's: the frames keep coming after the call.
	cctx, cancel := context.WithCancel(context.WithoutCancel(tab))
	stop := context.AfterFunc(ctx, cancel)
	cast, err := screencast.Start(cctx, screencast.Options{Quality: frameQuality}, c.gotFrame)
	if err != nil {
		stop()
		cancel()
		return fmt.Errorf("liveview: casting the page: %w", err)
	}
	go func() { <-cast.Done(); stop(); cancel() }()
	c.cast, c.target = cast, t.Target
	return nil
}

func (c *conn) stopCast() {
	if c.cast != nil {
		c.cast.Stop()
		c.cast, c.target = nil, nil
	}
}

func (c *conn) gotFrame(f screencast.Frame) {
	c.fmu.Lock()
	c.frame = &f
	c.width, c.height = f.Meta.DeviceWidth, f.Meta.DeviceHeight
	c.fmu.Unlock()
	select {
	case c.fwake <- struct{}{}:
	default:
	}
}

func endText(o Outcome) string {
	switch o {
	case Done:
		return "Done: the agent goes on from here. You can close this page."
	case GaveUp:
		return "You gave up: the agent hears so. You can close this page."
	case Expired:
		return "This live view expired."
	}
	return "The live view is closed."
}
