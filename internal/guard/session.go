package guard

import (
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/target"
	"github.com/hybroute/hybroute/internal/whatwg"
)

// Session is one session whose targets the guard tells apart from the
// others of its browser: its tab, the targets of its browser context and
// those its pages open. Its zero value is ready; [Guard.Register] makes a
// tab its. It keeps what outlives a call: its name answers and its
// refusals. What belongs to one call is the call's [Scope].
type Session struct {
	key   string // its cache key, for logs; set by Register under the guard's lock
	tab   atomic.Pointer[target.ID]
	scope atomic.Pointer[Scope] // the running call's; nil between calls
	hosts hostAnswers
	log   refusalLog
}

// Tab is the session's tab (the one calls run in), or "" before one was
// registered.
func (s *Session) Tab() target.ID {
	if t := s.tab.Load(); t != nil {
		return *t
	}
	return ""
}

// Begin hands the guard the scope of the call that starts on the session.
func (s *Session) Begin(sc *Scope) { s.scope.Store(sc) }

// End takes sc back when its call ends. From then on sc answers no name,
// whoever still holds it, so a request decided after its call is decided
// on a lookup of its own, as one between calls is.
func (s *Session) End(sc *Scope) {
	sc.ended.Store(true)
	s.scope.CompareAndSwap(sc, nil)
}

// current is the running call's scope, or nil.
func (s *Session) current() *Scope {
	if s == nil {
		return nil
	}
	return s.scope.Load()
}

// Refusals is the session's refusals at or after since (the newest
// [MaxRefusals] are kept), and how many of those may be missing.
func (s *Session) Refusals(since time.Time) ([]Refusal, int) { return s.log.since(since) }

// Scope is one call of one session: the names its plan resolved, which the
// guard decides the call's requests on (one lookup per name per call, the
// same answer as the plan's), and what the guard refused during it that
// fails the call. The call's code makes it ([NewScope]), hands it over
// ([Session.Begin]) and takes it back ([Session.End]).
type Scope struct {
	look  Lookups // nil: the call resolved no name
	ended atomic.Bool

	mu      sync.Mutex
	refused []error
}

// Lookups are the answers a call's plan got, by name.
type Lookups interface {
	// Answer is the plan's answer for name; found is false when the call
	// did not resolve it.
	Answer(name string) (addrs []netip.Addr, found bool, err error)
}

// NewScope is the scope of a call whose plan got the answers look (nil:
// none).
func NewScope(look Lookups) *Scope { return &Scope{look: look} }

// Err is what the guard refused during the call that fails it: a document
// of one of the session's pages, a navigation command, a target it could
// not cover. Nil when nothing was.
func (sc *Scope) Err() error {
	if sc == nil {
		return nil
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return errors.Join(sc.refused...)
}

// Clear forgets what the scope recorded so far and keeps it live: a call
// clears it where the part of the call that the refusals fail begins. A
// request paused before and decided after still fails the call, as one
// decided during it does.
func (sc *Scope) Clear() {
	sc.mu.Lock()
	sc.refused = nil
	sc.mu.Unlock()
}

// refuse records err as failing the call; a scope taken back records
// nothing (its call has read what failed it).
func (sc *Scope) refuse(err error) {
	if sc == nil || sc.ended.Load() {
		return
	}
	sc.mu.Lock()
	sc.refused = append(sc.refused, err)
	sc.mu.Unlock()
}

// answer is the call's answer for name, while the call runs.
func (sc *Scope) answer(name string) ([]netip.Addr, bool, error) {
	if sc == nil || sc.look == nil || sc.ended.Load() {
		return nil, false, nil
	}
	return sc.look.Answer(name)
}

// Refusal is one request of a session's pages that the guard refused:
// when, its URL cut to a bounded length (it may carry a credential), the
// browser's name of what was asked for (Document, Image, …), the target
// it came from ("tab", "popup", "frame in tab", "worker", …), the
// browser's Network request id ("" when it did not say), and why (the
// refusal of Config.Decide). Its fields are those of the router's public Refusal.
type Refusal struct {
	At                                   time.Time
	URL, ResourceType, Target, RequestID string
	Err                                  error
}

// MaxRefusals bounds the refusals kept per session; past it the oldest
// go, and are counted.
const MaxRefusals = 500

// refusalLog is the bounded record of a session's refusals.
type refusalLog struct {
	mu      sync.Mutex
	list    []Refusal
	dropped int
}

func (l *refusalLog) add(x Refusal) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.list) >= MaxRefusals {
		n := len(l.list) - MaxRefusals + 1
		l.list = append(l.list[:0], l.list[n:]...)
		l.dropped += n
	}
	l.list = append(l.list, x)
}

// since is the refusals at or after t, and how many of those may be
// missing (dropped past the bound while t was already set).
func (l *refusalLog) since(t time.Time) ([]Refusal, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Refusal
	for _, x := range l.list {
		if !x.At.Before(t) {
			out = append(out, x)
		}
	}
	dropped := 0
	if l.dropped > 0 && len(l.list) > 0 && !l.list[0].At.Before(t) {
		dropped = l.dropped
	}
	return out, dropped
}

// DocumentRefusal is the session's newest refusal of a document of its tab
// whose host is failedURL's (any host when failedURL is ""): why the tab
// shows the browser's error page for failedURL. host is failedURL's host.
func (s *Session) DocumentRefusal(failedURL string) (r Refusal, host string, ok bool) {
	if u, err := whatwg.Parse(failedURL); err == nil {
		host = u.Host
	}
	refusals, _ := s.Refusals(time.Time{})
	for i := len(refusals) - 1; i >= 0; i-- {
		x := refusals[i]
		if x.ResourceType == string(network.ResourceTypeDocument) && x.Target == "tab" && (failedURL == "" || sameHost(x.URL, host)) {
			return x, host, true
		}
	}
	return Refusal{}, host, false
}

// sameHost reports whether rawURL's host is host.
func sameHost(rawURL, host string) bool {
	u, err := whatwg.Parse(rawURL)
	return err == nil && u.Host == host
}
