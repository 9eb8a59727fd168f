package guard

import (
	"errors"
	"net/netip"
	"net/url"
	"strconv"
	"testing"

	"github.com/chromedp/cdproto/fetch"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/route"
)

// errPrivate is the refusal of scopeDecide.
var errPrivate = errors.New("private address")

// scopeDecide decides a URL by its host's answers alone: public when every
// answer is a global unicast address outside the private ranges, refused
// otherwise (no answer included). It stands in for the router's verdict,
// which the root's tests cover; what is tested here is which answers the
// guard hands it.
func scopeDecide(raw string, look Lookup, afterPublic bool) (bool, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return false, err
	}
	as, err := look.LookupName(u.Hostname())
	if err != nil {
		return false, err
	}
	if len(as) == 0 {
		return false, errPrivate
	}
	for _, a := range as {
		if !a.IsGlobalUnicast() || a.IsPrivate() {
			return false, errPrivate
		}
	}
	return true, nil
}

// planAnswers are a call's answers by name.
type planAnswers map[string][]netip.Addr

func (p planAnswers) Answer(name string) ([]netip.Addr, bool, error) {
	a, ok := p[name]
	return a, ok, nil
}

// TestScopeRule: while a call runs, the guard decides its session's
// requests on the answers the call's plan got; once the call took its
// scope back, or with no call at all, a request is decided on a lookup of
// its own, never on a past call's answers, and it fails no call. A name
// that moved to a private address between the plan and a request after
// the call is refused.
func TestScopeRule(t *testing.T) {
	t.Parallel()
	res := &countingResolver{n: map[string]int{}, answers: map[string][]netip.Addr{"a.test": addrs("10.0.0.5")}}
	g := New(Config{Route: route.Cloud, Decide: scopeDecide, Resolver: res})
	t.Cleanup(g.end)
	n := 0
	decide := func(s *Session, sc *Scope) error {
		n++
		return g.decide(&fetch.EventRequestPaused{RequestID: fetch.RequestID(strconv.Itoa(n))}, "https://a.test/", s, sc)
	}

	var s Session
	sc := NewScope(planAnswers{"a.test": addrs("93.184.215.14")})
	s.Begin(sc)
	require.Same(t, sc, s.current())
	require.NoError(t, decide(&s, s.current()), "decided on the plan's public answer")
	assert.Zero(t, res.count("a.test"), "the call's name is not asked again")

	s.End(sc)
	assert.Nil(t, s.current(), "no scope between calls")
	require.ErrorIs(t, decide(&s, s.current()), errPrivate, "between calls: the resolver's answer, now private")
	assert.Equal(t, 1, res.count("a.test"))
	require.ErrorIs(t, decide(&s, sc), errPrivate, "a request that took the scope before it was taken back")
	require.ErrorIs(t, decide(nil, nil), errPrivate, "a target no session owns")

	sc.refuse(errPrivate)
	assert.NoError(t, sc.Err(), "a scope taken back records nothing")
	var nilScope *Scope
	nilScope.refuse(errPrivate) // no call: nothing to fail
	assert.NoError(t, nilScope.Err())

	// A stale End does not take a later call's scope.
	next := NewScope(nil)
	s.Begin(next)
	s.End(sc)
	assert.Same(t, next, s.current())
	next.refuse(errPrivate)
	assert.ErrorIs(t, next.Err(), errPrivate)
	require.ErrorIs(t, decide(&s, next), errPrivate, "a call that did not name the host: its own lookup")
}

// Clear forgets what was refused so far and keeps the scope the call's: a
// refusal decided after it still fails the call; one after End does not.
func TestScopeClearKeepsTheScopeLive(t *testing.T) {
	var s Session
	sc := NewScope(nil)
	s.Begin(sc)
	before := errors.New("refused while the tab was probed")
	sc.refuse(before)
	sc.Clear()
	if err := sc.Err(); err != nil {
		t.Fatalf("Err after Clear = %v, want nil", err)
	}
	during := errors.New("refused during the run")
	s.current().refuse(during)
	if err := sc.Err(); !errors.Is(err, during) || errors.Is(err, before) {
		t.Fatalf("Err = %v, want only the refusal after Clear", err)
	}
	s.End(sc)
	sc.refuse(errors.New("after the call"))
	if err := sc.Err(); err == nil || err.Error() != during.Error() {
		t.Fatalf("Err after End = %v, want the run's refusal alone", err)
	}
}

// TestConfigWithoutDecisionsRefuses: a guard whose Config names no Decide
// or RefuseNavigation refuses every request and every navigation it
// holds (fail closed).
func TestConfigWithoutDecisionsRefuses(t *testing.T) {
	t.Parallel()
	g := New(Config{Route: route.Cloud, Resolver: &countingResolver{n: map[string]int{}}})
	t.Cleanup(g.end)
	var s Session
	err := g.decide(&fetch.EventRequestPaused{RequestID: "1"}, "https://a.test/", &s, nil)
	assert.ErrorIs(t, err, errNoDecision)
	assert.ErrorIs(t, g.cfg.RefuseNavigation(navigation("Page.navigate", "about:blank")), errNoDecision)
	assert.Error(t, g.cfg.Unsupported("Chrome/1", "everything"), "a browser it cannot cover is an error")
}
