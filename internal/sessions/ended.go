package sessions

import "sync"

// MaxEnded bounds what an Ended keeps: one value per key, the most
// recently put keys.
const MaxEnded = 1024

// Ended is the last ended session of each key (a cloud session, for its
// replay), the oldest forgotten past MaxEnded. It has a lock of its own:
// a session's release records it outside the router's lock.
type Ended[V any] struct {
	mu    sync.Mutex
	m     map[string]V
	order []string // the keys of m, oldest first
}

// Put keeps v as key's last ended session.
func (es *Ended[V]) Put(key string, v V) {
	es.mu.Lock()
	defer es.mu.Unlock()
	if es.m == nil {
		es.m = make(map[string]V)
	}
	if _, ok := es.m[key]; ok {
		for i, k := range es.order {
			if k == key {
				es.order = append(es.order[:i], es.order[i+1:]...)
				break
			}
		}
	}
	es.m[key] = v
	es.order = append(es.order, key)
	for len(es.order) > MaxEnded {
		delete(es.m, es.order[0])
		es.order = es.order[1:]
	}
}

// Get is key's last ended session; the zero V when none is kept.
func (es *Ended[V]) Get(key string) V {
	es.mu.Lock()
	defer es.mu.Unlock()
	return es.m[key]
}
