// Package routememory is the router's sticky route of each session key:
// the route its last call took, for the next call with no URL literal.
package routememory

import (
	"container/list"

	"github.com/hybroute/hybroute/route"
)

// Memory is the sticky route of each session key. It is bounded: past max
// keys the one used longest ago is forgotten (its next URL-less
// call takes the default route), and the reaper forgets keys idle longer
// than a session would live. It has no lock: the router guards it.
type Memory struct {
	max   int
	m     map[string]*list.Element // of *routeMemo
	order list.List                // front: used most recently
}

// routeMemo is a session's last route and when it was taken (unix nanos).
type routeMemo struct {
	key   string
	route route.Route
	at    int64
}

// Max bounds the router's route memory: a few MB at most, far more keys than
// sessions a router holds open.
const Max = 1 << 16

// New is a memory of at most max keys.
func New(max int) Memory {
	return Memory{max: max, m: make(map[string]*list.Element)}
}

// Get is key's last route, if the memory holds it.
func (rm *Memory) Get(key string) (route.Route, bool) {
	if el, ok := rm.m[key]; ok {
		return el.Value.(*routeMemo).route, true
	}
	return 0, false
}

// Put records key's route at time at; an existing key is updated in place
// (no allocation on the hot path of a known key).
func (rm *Memory) Put(key string, route route.Route, at int64) {
	if el, ok := rm.m[key]; ok {
		m := el.Value.(*routeMemo)
		m.route, m.at = route, at
		rm.order.MoveToFront(el)
		return
	}
	if rm.order.Len() >= rm.max {
		oldest := rm.order.Back()
		delete(rm.m, oldest.Value.(*routeMemo).key)
		rm.order.Remove(oldest)
	}
	rm.m[key] = rm.order.PushFront(&routeMemo{key: key, route: route, at: at})
}

// Delete forgets key.
func (rm *Memory) Delete(key string) {
	if el, ok := rm.m[key]; ok {
		delete(rm.m, key)
		rm.order.Remove(el)
	}
}

// ForgetIdle forgets the keys last used before cutoff (unix nanos) for which
// keep says no. The oldest are at the back, so it stops at the first key
// used after cutoff.
func (rm *Memory) ForgetIdle(cutoff int64, keep func(key string) bool) {
	for el := rm.order.Back(); el != nil; {
		m := el.Value.(*routeMemo)
		if m.at >= cutoff {
			return
		}
		prev := el.Prev()
		if !keep(m.key) {
			delete(rm.m, m.key)
			rm.order.Remove(el)
		}
		el = prev
	}
}

// Len is the number of keys held.
func (rm *Memory) Len() int { return len(rm.m) }

// Clear forgets every key.
func (rm *Memory) Clear() {
	clear(rm.m)
	rm.order.Init()
}
