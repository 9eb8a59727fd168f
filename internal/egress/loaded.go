package egress

import (
	"net/netip"

	"github.com/hybroute/hybroute/internal/whatwg"
)

// What a browser context ran. A grant is given to a context, and whatever
// runs in that context uses it: not only the page that earned it but
// whatever an earlier page left behind there (a service worker, a shared
// worker, another tab, a frame, a page in the back-forward cache). So each
// door keeps the hosts of every document its context started to load, in
// any frame of any page; a grant may be given to the context only when
// every one of them is a host the grant covers (Door.Clean). Any other
// context must be replaced by a fresh one first: its leftovers go with it.

// maxLoadedHosts bounds the hosts a door keeps. A context that loaded more
// is clean for no grant.
const maxLoadedHosts = 64

// Loaded is told of a document a frame of the browser context key starts
// to load, before the request goes on. An empty key (a frame whose context
// is not known) marks every door: the document may run in any of them. A
// context with no door (the default one) gets no grant, and is not kept.
func (p *Proxy) Loaded(key, rawURL string) {
	p.mu.Lock()
	d := p.doors[key]
	var all []*Door
	if key == "" {
		all = make([]*Door, 0, len(p.doors))
		for _, x := range p.doors {
			all = append(all, x)
		}
	}
	p.mu.Unlock()
	if d != nil {
		d.Loaded(rawURL)
		return
	}
	for _, x := range all {
		x.Loaded(rawURL)
	}
}

// Loaded records that a document from rawURL's host starts to load in the
// door's browser context. A document of no network host (about:blank,
// data:, a blob of the context's own) is not recorded: it runs what a
// document of the context put there. An unreadable URL counts as a host no
// grant covers.
func (d *Door) Loaded(rawURL string) {
	if d == nil {
		return
	}
	host, web := documentHost(rawURL)
	if !web {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.mixed {
		return
	}
	if host == "" || len(d.loaded) >= maxLoadedHosts {
		d.mixed, d.loaded = true, nil
		return
	}
	if d.loaded == nil {
		d.loaded = map[string]struct{}{}
	}
	d.loaded[grantHost(host)] = struct{}{}
}

// documentHost is the host of a document's URL, and whether the document
// comes from the network ("" with web for one that cannot be read).
func documentHost(raw string) (host string, web bool) {
	u, err := whatwg.Parse(raw)
	if err != nil {
		return "", true
	}
	switch u.Scheme {
	case "http", "https":
		return u.Host, true
	}
	return "", false
}

// Clean reports whether g may be given to the door's browser context as it
// is: every document the context loaded came from a host g covers, so
// nothing of another host runs there to use it. A context that loaded
// nothing from the network is clean for any grant; one that loaded too
// many hosts to keep, or one it could not read, for none.
func (d *Door) Clean(g Grant) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cleanFor(g)
}

// SetClean is Set for a grant the context is clean for, checked under the
// same lock that Loaded takes, so no document slips in between the check
// and the grant. It reports whether it set g; an empty grant is always
// set.
func (d *Door) SetClean(g Grant) bool { return d.set(g, true) }

// cleanFor is Clean with d.mu held.
func (d *Door) cleanFor(g Grant) bool {
	if d.mixed {
		return false
	}
	for h := range d.loaded {
		var addrs []netip.Addr
		if a, err := netip.ParseAddr(h); err == nil {
			addrs = []netip.Addr{a} // a literal: the address it names
		}
		if !g.Covers(h, addrs) {
			return false
		}
	}
	return true
}
