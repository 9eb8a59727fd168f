package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent/internal/modeltext"
	"github.com/hybroute/hybroute/netpolicy"
)

// browser_network_requests lists the requests of the session's tab since
// its last navigation, from the tab's Network events (the guard enables
// the Network domain on every page already, so listening costs no
// command), with the requests the guard refused and why (the Router's
// Refusals, matched by request id). Both are bounded per tab.

// ToolNetworkRequests is the tool's name.
const ToolNetworkRequests = "browser_network_requests"

var networkTools = []toolDef{
	{
		name:   ToolNetworkRequests,
		desc:   "The page's requests since its last navigation (method, status, type, size, URL) and those the guard refused, with why.",
		schema: networkSchema,
		run:    (*Toolset).networkRequests,
	},
}

const networkSchema = `{"type":"object","properties":{"limit":{"type":"integer","minimum":1,"maximum":500,"description":"The newest N","default":100},"filter":{"type":"string","description":"URL contains"}}}`

// maxRequestsKept bounds a tab's request log; past it the oldest go, and
// are counted.
const maxRequestsKept = 500

type request struct {
	at          time.Time
	id          network.RequestID
	method, url string
	typ         network.ResourceType
	status      int64
	size        float64
	failed      string // why it failed, as the tool shows it
	errText     string // the browser's own net::ERR_… text
	done        bool
}

// requestLog is one tab's requests since its last navigation.
type requestLog struct {
	since   time.Time
	list    []*request
	byID    map[network.RequestID]*request
	dropped int
}

// netState is a session's request logs, per tab.
type netState struct {
	mu        sync.Mutex
	tabs      map[target.ID]*requestLog
	listeners []context.CancelFunc
	ended     bool
}

// end stops the tabs' listeners.
func (n *netState) end() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ended = true
	for _, cancel := range n.listeners {
		cancel()
	}
	n.listeners = nil
}

// networkHook starts the request log of a call's tab the first time a
// call runs in it.
type networkHook struct{}

func (networkHook) watches() string { return "requests" }

func (networkHook) before(ctx context.Context, s *session, c *call) (func(error) error, error) {
	return nil, s.net.listen(ctx, c.target)
}

// listen records the tab's requests, once per tab. It runs on the tab's
// reader: it only records, under a lock, in bounded memory.
func (n *netState) listen(ctx context.Context, tab target.ID) error {
	n.mu.Lock()
	if n.tabs == nil {
		n.tabs = map[target.ID]*requestLog{}
	}
	if _, ok := n.tabs[tab]; ok || n.ended {
		n.mu.Unlock()
		return nil
	}
	l := &requestLog{since: time.Now(), byID: map[network.RequestID]*request{}}
	n.tabs[tab] = l
	n.mu.Unlock()
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	err := chromedp.Listen(lctx, func(ev any) {
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			if ev.Request == nil {
				return
			}
			n.mu.Lock()
			defer n.mu.Unlock()
			if prev := l.byID[ev.RequestID]; prev != nil && ev.RedirectResponse != nil {
				prev.status, prev.done = ev.RedirectResponse.Status, true
			}
			if len(l.list) >= maxRequestsKept {
				delete(l.byID, l.list[0].id)
				l.list = append(l.list[:0], l.list[1:]...)
				l.dropped++
			}
			r := &request{at: time.Now(), id: ev.RequestID, method: ev.Request.Method, url: ev.Request.URL, typ: ev.Type}
			l.list = append(l.list, r)
			l.byID[ev.RequestID] = r
		case *page.EventFrameNavigated:
			// A new document in the main frame: the log starts at the
			// request that loaded it (its first hop). A navigation that
			// never commits (a download, a 204) leaves the page's log.
			if ev.Frame == nil || ev.Frame.ParentID != "" || string(ev.Frame.ID) != string(tab) {
				return
			}
			n.mu.Lock()
			defer n.mu.Unlock()
			first := -1
			for i, r := range l.list {
				if string(r.id) == string(ev.Frame.LoaderID) {
					first = i
					break
				}
			}
			if first < 0 {
				l.since, l.list, l.dropped = time.Now(), l.list[:0], 0
				clear(l.byID)
				return
			}
			for _, r := range l.list[:first] {
				delete(l.byID, r.id)
			}
			l.since, l.dropped = l.list[first].at, 0
			l.list = append(l.list[:0], l.list[first:]...)
		case *network.EventResponseReceived:
			n.mu.Lock()
			if r := l.byID[ev.RequestID]; r != nil && ev.Response != nil {
				r.status = ev.Response.Status
			}
			n.mu.Unlock()
		case *network.EventLoadingFinished:
			n.mu.Lock()
			if r := l.byID[ev.RequestID]; r != nil {
				r.size, r.done = ev.EncodedDataLength, true
			}
			n.mu.Unlock()
		case *network.EventLoadingFailed:
			n.mu.Lock()
			if r := l.byID[ev.RequestID]; r != nil {
				r.failed, r.errText, r.done = ev.ErrorText, ev.ErrorText, true
				if ev.BlockedReason != "" {
					r.failed += " (" + string(ev.BlockedReason) + ")"
				}
			}
			n.mu.Unlock()
		}
	})
	n.mu.Lock()
	defer n.mu.Unlock()
	if err != nil {
		// The next call tries again.
		delete(n.tabs, tab)
		cancel()
		return err
	}
	if n.ended {
		cancel()
		return nil
	}
	n.listeners = append(n.listeners, cancel)
	return nil
}

func (t *Toolset) networkRequests(ctx context.Context, s *session, key string, args json.RawMessage) Result {
	var a struct {
		Limit  int    `json:"limit"`
		Filter string `json:"filter"`
	}
	if err := decode(args, &a); err != nil {
		return argError(err)
	}
	if a.Limit == 0 {
		a.Limit = 100
	}
	if a.Limit < 1 || a.Limit > maxRequestsKept {
		return toolError(fmt.Sprintf("limit %d: use 1 to %d", a.Limit, maxRequestsKept))
	}
	var text string
	res, c, err := t.do(ctx, s, key, "", reads|drivesREST, func(ctx context.Context, c *call) error {
		if c.rest != nil {
			return modeltext.Errorf("this session's browser is a cloud browser driven through its REST API, without CDP, and it does not report its requests")
		}
		var err error
		text, err = t.renderRequests(s, c, a.Limit, a.Filter)
		return err
	})
	return t.finishCall(s, key, res, c, err, func() string { return text })
}

// renderRequests writes the tab's requests and the guard's refusals since
// the tab's last navigation.
func (t *Toolset) renderRequests(s *session, c *call, limit int, filter string) (string, error) {
	tab := c.target
	n := &s.net
	n.mu.Lock()
	l := n.tabs[tab]
	if l == nil {
		n.mu.Unlock()
		return "", errors.New("the tab's requests are not recorded")
	}
	since, dropped := l.since, l.dropped
	reqs := make([]request, 0, len(l.list))
	for _, r := range l.list {
		reqs = append(reqs, *r)
	}
	n.mu.Unlock()

	var refusals []hybroute.Refusal
	var refDropped int
	refusals, refDropped = c.h.Refusals(since)
	why := map[network.RequestID]hybroute.Refusal{}
	for _, x := range refusals {
		if x.RequestID != "" {
			why[network.RequestID(x.RequestID)] = x
		}
	}
	// The filter reads the URLs as the list shows them, redacted: matched
	// against the raw URL, it would tell a credential the list hides, one
	// guessed character at a time.
	// The egress check's refusals name no request: a failed request it
	// explains shows its cause, and the connection is not listed again.
	explained := map[string]bool{}
	var lines []string
	for _, r := range reqs {
		if filter != "" && !strings.Contains(t.cfg.secrets.Scrub(modeltext.URL(r.url)), filter) {
			continue
		}
		var outcome string
		x, refused := why[r.id]
		switch {
		case refused:
			delete(why, r.id)
			outcome = "refused by the guard" + refusalWhy(x)
		case r.failed != "":
			outcome = "failed: " + modeltext.PageText(r.failed)
			var ne *hybroute.NetworkError
			// Since the log's start: the connection is made (and
			// refused) before the browser's event reaches the log.
			if errors.As(c.h.NetworkCause(r.url, r.errText, since), &ne) {
				outcome = "failed: " + networkText(ne)
				explained[ne.Addr] = true
			}
		case !r.done && r.status == 0:
			outcome = "pending"
		default:
			outcome = fmt.Sprint(r.status)
			if r.done && r.size > 0 {
				outcome += ", " + modeltext.Size(int64(r.size))
			}
		}
		lines = append(lines, fmt.Sprintf("- %s %s (%s): %s", r.method, modeltext.URL(r.url), strings.ToLower(string(r.typ)), outcome))
	}
	// Refusals without a request in the log: a worker's, a popup's, or one
	// refused before the browser reported it.
	for _, x := range refusals {
		if _, left := why[network.RequestID(x.RequestID)]; x.RequestID != "" && !left {
			continue
		}
		if filter != "" && !strings.Contains(t.cfg.secrets.Scrub(modeltext.URL(x.URL)), filter) {
			continue
		}
		if x.Target == "connection" {
			if explained[x.URL] {
				continue
			}
			explained[x.URL] = true
		}
		lines = append(lines, refusalLine(x))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Requests since the last navigation: %d", len(lines))
	if filter != "" {
		fmt.Fprintf(&b, " matching %s", modeltext.Quote(filter, 100))
	}
	if dropped+refDropped > 0 {
		fmt.Fprintf(&b, " (%d older ones were dropped: at most %d are kept)", dropped+refDropped, maxRequestsKept)
	}
	if len(lines) > limit {
		fmt.Fprintf(&b, "; the newest %d shown", limit)
		lines = lines[len(lines)-limit:]
	}
	b.WriteString(".")
	for _, l := range lines {
		b.WriteByte('\n')
		b.WriteString(l)
	}
	return b.String(), nil
}

// refusalWhy says why the guard refused a request, for the model,
// completing "refused by the guard": the reason's name, and what it means.
func refusalWhy(x hybroute.Refusal) string {
	var be *netpolicy.BlockedError
	if errors.As(x.Err, &be) {
		return " (" + be.Reason.String() + "): it " + reason(be)
	}
	if x.Err != nil {
		return ": " + modeltext.Cut(x.Err.Error(), 300)
	}
	return ""
}

// refusalLine is one refusal of the guard or of the egress check, as an
// item of a list.
func refusalLine(x hybroute.Refusal) string {
	if x.Target == "connection" {
		return "- a connection to " + modeltext.Cut(x.URL, 300) + ": " + connectionRefusal(x)
	}
	return fmt.Sprintf("- %s (%s, in a %s): refused by the guard%s", modeltext.URL(x.URL), strings.ToLower(x.ResourceType), x.Target, refusalWhy(x))
}

// connectionRefusal says why the egress check refused a connection of the
// local browser, which no request of the log names.
func connectionRefusal(x hybroute.Refusal) string {
	return "refused by the egress check, which decides every connection of the local browser" + refusalWhy(x) +
		". The page saw only a network error."
}
