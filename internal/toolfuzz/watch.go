package toolfuzz

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute"
)

// ObserverKey is the session Watch asks the local browser through: its
// own tab and browser context are left out of the count.
const ObserverKey = "toolfuzz-observer"

// Watch is the Router a fuzzed toolset runs on: it remembers every session
// key a call was made for, so that Check can hold what the local browser
// has against what the Router lists for those sessions.
type Watch struct {
	*hybroute.Router

	mu   sync.Mutex
	keys map[string]bool
}

// NewWatch watches r.
func NewWatch(r *hybroute.Router) *Watch {
	return &Watch{Router: r, keys: map[string]bool{}}
}

func (w *Watch) note(key string) {
	w.mu.Lock()
	w.keys[key] = true
	w.mu.Unlock()
}

// Keys are the session keys the toolset called the Router for.
func (w *Watch) Keys() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(maps.Keys(w.keys))
}

// Exec notes the session key and runs the call.
func (w *Watch) Exec(ctx context.Context, sessionKey, code string, run func(ctx context.Context, c *hybroute.Call) error, opts ...hybroute.CallOption) (hybroute.Result, error) {
	w.note(sessionKey)
	return w.Router.Exec(ctx, sessionKey, code, run, opts...)
}

// Navigate notes the session key and runs the call.
func (w *Watch) Navigate(ctx context.Context, sessionKey, rawURL string, run func(ctx context.Context, c *hybroute.Call) error, opts ...hybroute.CallOption) (hybroute.Result, error) {
	w.note(sessionKey)
	return w.Router.Navigate(ctx, sessionKey, rawURL, run, opts...)
}

// Check waits, up to within, until every page and every browser context
// the local browser holds is one the Router lists for a session (Tabs),
// and returns what is left over when that never happens. A page being
// opened or closed is listed by one side a moment before the other, so
// it asks again until both agree.
func (w *Watch) Check(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		err := w.compare(ctx)
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (w *Watch) compare(ctx context.Context) error {
	listed := map[target.ID]string{}
	for _, k := range w.Keys() {
		tabs, err := w.Router.Tabs(ctx, k)
		if err != nil {
			return fmt.Errorf("the Router's tabs of %s: %w", k, err)
		}
		for _, t := range tabs {
			listed[target.ID(t.ID)] = k
		}
	}
	var (
		self     target.ID
		infos    []*target.Info
		contexts []cdp.BrowserContextID
	)
	_, err := w.Router.Exec(ctx, ObserverKey, "", func(ctx context.Context, _ *hybroute.Call) error {
		self = chromedp.FromContext(ctx).Target.TargetID
		ts, err := chromedp.CallBrowser(ctx, target.GetTargets, target.GetTargetsParams{})
		if err != nil {
			return err
		}
		infos = ts.TargetInfos
		bc, err := chromedp.CallBrowser(ctx, target.GetBrowserContexts, cdp.Empty{})
		if err != nil {
			return err
		}
		contexts = bc.BrowserContextIDs
		return nil
	})
	if err != nil {
		return fmt.Errorf("asking the local browser for its targets: %w", err)
	}
	var selfContext cdp.BrowserContextID
	for _, ti := range infos {
		if ti.TargetID == self {
			selfContext = ti.BrowserContextID
		}
	}
	owned := map[cdp.BrowserContextID]bool{selfContext: true}
	unowned := map[cdp.BrowserContextID][]*target.Info{}
	for _, ti := range infos {
		// Pages of the default context are the browser's own (the
		// first tab), no session's.
		if ti.Type != "page" || ti.BrowserContextID == selfContext || !slices.Contains(contexts, ti.BrowserContextID) {
			continue
		}
		if _, ok := listed[ti.TargetID]; ok {
			owned[ti.BrowserContextID] = true
			continue
		}
		unowned[ti.BrowserContextID] = append(unowned[ti.BrowserContextID], ti)
	}
	// The sidecar keeps one spare tab ready for the next session: a
	// browser context of its own with one blank page. One such is allowed.
	spare := false
	var leaked []string
	for _, c := range contexts {
		if owned[c] {
			for _, ti := range unowned[c] {
				leaked = append(leaked, fmt.Sprintf("page %s (%s) in context %s of a session", ti.TargetID, ti.URL, c))
			}
			continue
		}
		if pages := unowned[c]; !spare && len(pages) == 1 && pages[0].URL == "about:blank" {
			spare = true
			continue
		}
		var pages []string
		for _, ti := range unowned[c] {
			pages = append(pages, string(ti.TargetID)+" "+ti.URL)
		}
		leaked = append(leaked, fmt.Sprintf("browser context %s that no session lists, with pages %v", c, pages))
	}
	if len(leaked) > 0 {
		return fmt.Errorf("the local browser holds what no session lists (sessions %v, listed tabs %v): %v", w.Keys(), slices.Collect(maps.Keys(listed)), leaked)
	}
	return nil
}

// Goroutines waits, up to within, until no more than base goroutines run,
// and returns every goroutine's stack when they never do.
func Goroutines(base int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			return fmt.Errorf("%d goroutines run, %d before the run:\n%s", runtime.NumGoroutine(), base, buf)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}
