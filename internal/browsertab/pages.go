package browsertab

import (
	"context"
	"sync"

	"github.com/chromedp/cdproto/target"
)

// Page is a tab of a session that is not its front: the chromedp context
// attached to it, and what ends that (nil: the context lives as long as the
// connection, as a remote session's first tab does).
type Page struct {
	Ctx  context.Context
	Stop context.CancelFunc
}

// Pages are a session's attached tabs other than its front, by target.
// The zero value is empty and ready.
type Pages struct {
	mu sync.Mutex
	m  map[target.ID]Page
}

// Put keeps pg as the page id.
func (p *Pages) Put(id target.ID, pg Page) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[target.ID]Page{}
	}
	p.m[id] = pg
}

// Take returns the page id and forgets it.
func (p *Pages) Take(id target.ID) (Page, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pg, ok := p.m[id]
	delete(p.m, id)
	return pg, ok
}

// StopAll ends the attached contexts, when the session ends.
func (p *Pages) StopAll() {
	p.mu.Lock()
	pages := p.m
	p.m = nil
	p.mu.Unlock()
	for _, pg := range pages {
		if pg.Stop != nil {
			pg.Stop()
		}
	}
}
