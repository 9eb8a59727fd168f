package sidecar

import (
	"context"
	"errors"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/egress"
	"github.com/hybroute/hybroute/internal/guard"
	"github.com/hybroute/hybroute/internal/testenv"
	"github.com/hybroute/hybroute/route"
)

// errRefused is every decision of the test config: the sidecar's own tests
// open tabs and load nothing, so nothing of theirs may leave the browser.
var errRefused = errors.New("the sidecar's test config refuses every URL")

// testConfig refuses every URL and connection, and lets every tab open
// at once.
func testConfig() Config {
	return Config{
		Guard: func() *guard.Guard {
			return guard.New(guard.Config{Route: route.Local, Decide: refuseAll, RefuseNavigation: refuseNavigation,
				Unsupported: func(browser, lacks string) error { return errors.New(browser + " lacks " + lacks) },
				Resolver:    noResolver{}})
		},
		Egress: func(ctx context.Context) (*egress.Proxy, error) {
			return egress.Start(ctx, egress.Config{Decide: refuseConns, Ungranted: refuseGrant})
		},
	}
}

// refuseAll is the guard's decision: no URL.
func refuseAll(string, guard.Lookup, bool) (bool, error) { return false, errRefused }

// refuseNavigation lets a page stay on about:blank, where a new tab starts.
func refuseNavigation(n guard.Navigation) error {
	if n.Scheme == "about" {
		return nil
	}
	return errRefused
}

// refuseConns is the egress proxy's decision: no connection.
func refuseConns(context.Context, string) (egress.Decision, error) {
	return egress.Decision{}, &egress.Refusal{Class: "test", Reason: "test", Phrase: "refused", Err: errRefused}
}

func refuseGrant(string, egress.Decision) error {
	return &egress.Refusal{Class: "test", Reason: "test", Phrase: "refused", Err: errRefused}
}

// noResolver answers no name.
type noResolver struct{}

func (noResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return nil, errRefused
}

// newTestSidecar makes a sidecar with the test config that is closed (and
// checked) when the test ends.
func newTestSidecar(tb testing.TB) *Sidecar {
	tb.Helper()
	s := New(testConfig())
	tb.Cleanup(func() { assert.NoError(tb, s.Close()) })
	return s
}

// testCtx bounds a test's calls: a minute, and no longer than the test.
func testCtx(tb testing.TB) context.Context { return testenv.Context(tb, time.Minute) }

// TestSpareRefillWaitsForFirstCall: a key that takes the spare tab does
// not have the next one made while its first call runs (making a browser
// context and a tab holds up Chromium's UI thread, which starts that
// call's navigation), but as soon as the call is done; and a key that
// never settles gets its replacement after spareRefillAfter.
func TestSpareRefillWaitsForFirstCall(t *testing.T) {
	t.Parallel()
	testenv.RequireChromium(t)
	s := newTestSidecar(t)
	ctx := testCtx(t)
	state := func() (spare, coming, timer bool, done chan struct{}) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.spare != nil, s.spareCancel != nil, s.refillTimer != nil, s.spareDone
	}
	waitSpare := func() {
		t.Helper()
		for {
			spare, _, _, done := state()
			if spare {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatal("no spare tab was made before the deadline")
			case <-done:
			case <-time.After(50 * time.Millisecond):
			}
		}
	}

	a, err := s.Open(ctx, "A") // starts Chromium; takes the first spare
	require.NoError(t, err)
	spare, coming, timer, _ := state()
	assert.False(t, spare || coming, "no spare is made while A's first call runs")
	assert.True(t, timer, "a refill is pending")
	a.Settled()
	spare, coming, timer, _ = state()
	assert.True(t, spare || coming, "A settled: the next spare is being made")
	assert.False(t, timer)
	waitSpare()

	b, err := s.Open(ctx, "B") // takes the spare, never settles
	require.NoError(t, err)
	spare, coming, _, _ = state()
	assert.False(t, spare || coming)
	waitSpare() // the timer makes it
	assert.NotEqual(t, a.bcID, b.bcID)
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())
}

// BenchmarkSidecarSecondSession times a new session's tab on a warm Chromium:
// open + a trivial evaluate, then close. "spare-ready" lets the sidecar's
// spare tab be made between sessions (outside the timer), as between real
// sessions; "back-to-back" opens the next key at once, so the spare is
// usually still being made and the open waits for it.
func BenchmarkSidecarSecondSession(b *testing.B) {
	testenv.RequireChromium(b)
	for _, mode := range []string{"spare-ready", "back-to-back"} {
		b.Run(mode, func(b *testing.B) {
			s := newTestSidecar(b)
			ctx := testCtx(b)
			if _, err := s.Open(ctx, "warm"); err != nil {
				b.Fatal(err)
			}
			settle := func() {
				s.mu.Lock()
				done := s.spareDone
				s.mu.Unlock()
				if done != nil {
					<-done
				}
			}
			var openDur time.Duration
			for i := 0; b.Loop(); i++ {
				if mode == "spare-ready" {
					b.StopTimer()
					settle()
					b.StartTimer()
				}
				key := "bench" + strconv.Itoa(i)
				t0 := time.Now()
				tab, err := s.Open(ctx, key)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := chromedp.Run(tab.Context(), chromedp.Evaluate[int]("1+1")); err != nil {
					b.Fatal(err)
				}
				openDur += time.Since(t0)
				if err := tab.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(openDur.Microseconds())/1000/float64(b.N), "ms-open+eval/op")
		})
	}
}

func BenchmarkSidecarColdStart(b *testing.B) {
	testenv.RequireChromium(b)
	ctx := testCtx(b)
	for b.Loop() {
		s := New(testConfig())
		tab, err := s.Open(ctx, "cold")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := chromedp.Run(tab.Context(), chromedp.Evaluate[int]("1+1")); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// TestConfigWithoutEnforcementStartsNothing: a sidecar whose Config names
// no guard or no egress proxy starts no Chromium (fail closed).
func TestConfigWithoutEnforcementStartsNothing(t *testing.T) {
	t.Parallel()
	for _, c := range []Config{{}, {Guard: testConfig().Guard}, {Egress: testConfig().Egress}} {
		s := New(c)
		_, err := s.Open(testCtx(t), "k")
		assert.ErrorIs(t, err, errNoEnforcement)
		assert.False(t, s.Alive(), "no Chromium runs")
		assert.NoError(t, s.Close())
	}
}
