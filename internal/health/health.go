// Package health is the router's view of its provider's health: unknown
// (first use, or a window just ended), healthy (a creation succeeded
// since), or down (a back-off window is open). While it is unknown, one
// creation probes the provider and the others wait for its answer; while
// it is healthy, creations go to the provider at once; while it is down,
// they go straight to local Chromium.
//
// What replicas of a fleet must agree on (the window and the one probe)
// lives behind a [store.Health]; what only this process needs (the log-once flags,
// the doubling of windows without Retry-After, the channel its own
// waiters sleep on) lives in [Health]. What a provider's error means (its
// account, its Retry-After, whether it is the configuration's) is the
// owner's to say ([Config].Explain): this package reads no provider's
// errors.
package health

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hybroute/hybroute/store"
)

// Failure is what the router reads from a provider's error
// ([Config].Explain).
type Failure struct {
	// Reason is the short, key-free account of the failure; it is cleaned
	// ([CleanReason]) before it goes anywhere.
	Reason string
	// RetryAfter is the window the provider asked for; 0: none.
	RetryAfter time.Duration
	// Config: the provider refused the configuration (the key, the
	// project, the payment), which is no outage.
	Config bool
}

// Config is what a Health is made of.
type Config struct {
	// Store holds the window and the probe: the router's is the fleet's
	// guarded view of its store (internal/fleet). Its instants are Now's.
	Store    store.Health
	Provider string           // the provider's Name()
	Cap      time.Duration    // the longest window (WithProviderBackoffCap)
	Now      func() time.Time // the router's clock
	// Explain reads a provider's failure: this package reads no
	// provider's errors itself.
	Explain func(error) Failure
}

// Health is the router's view of its provider's health, over a store.
type Health struct {
	store    store.Health
	provider string
	cap      time.Duration
	now      func() time.Time
	explain  func(error) Failure

	mu          sync.Mutex
	healthy     bool          // a creation succeeded and no failure came since
	probing     chan struct{} // closed when this process's probe ends; nil when none runs
	streak      int           // failures without Retry-After since the last success: the window doubles
	outage      bool          // a failure was logged and no success seen since
	floorLogged bool          // the double failure of this outage was logged
	configErr   bool          // the outage is a configuration error: windows stay at the cap
	heldUntil   time.Time     // a configuration error holds this process's creations off the provider until then
	heldReason  string        // and says why
	lastErr     error         // the latest failure
	failedAt    time.Time     // the latest failure
}

// New makes the Health c describes.
func New(c Config) *Health {
	return &Health{store: c.Store, provider: c.Provider, cap: c.Cap, now: c.Now, explain: c.Explain}
}

// Admission is what health tells a creation to do.
type Admission int

const (
	Cloud   Admission = iota // ask the provider alongside the others
	Probe                    // ask the provider as the probe; call ProbeDone after
	Local                    // go local: the window is open (or the probe did not answer in time)
	Refused                  // go local: the provider refused the configuration (key, payment) lately
)

// errProbePending is the fallback reason of a creation that waited for the
// probe longer than its budget allowed.
var errProbePending = errors.New("the provider's health probe did not answer in time")

// Admit decides where a new cloud session goes. A creation that must wait
// for another's probe waits at most budget. On Local and Refused, the reason says why.
func (h *Health) Admit(ctx context.Context, budget time.Duration) (Admission, string) {
	deadline := time.Now().Add(budget)
	for {
		h.mu.Lock()
		if h.now().Before(h.heldUntil) {
			reason := h.heldReason
			h.mu.Unlock()
			return Refused, reason
		}
		h.mu.Unlock()
		until, reason, err := h.readWindow(ctx)
		if err == nil && h.now().Before(until) {
			h.mu.Lock()
			h.healthy = false
			h.mu.Unlock()
			return Local, reason
		}
		h.mu.Lock()
		if h.healthy {
			h.mu.Unlock()
			return Cloud, ""
		}
		wait := h.probing
		if wait == nil {
			ok, err := h.store.TryProbe(ctx, h.provider, budget+ProbeSlack)
			if ok {
				// Another router's probe may have opened the window and
				// given the claim back between the look above and this
				// claim: look again before asking the provider.
				if until, reason, werr := h.readWindow(ctx); werr == nil && h.now().Before(until) {
					h.healthy = false
					h.mu.Unlock()
					_ = h.store.DoneProbe(ctx, h.provider)
					return Local, reason
				}
			}
			if err != nil || ok {
				// A store that cannot answer must not stop the cloud:
				// this creation probes on its own.
				h.probing = make(chan struct{})
				h.mu.Unlock()
				return Probe, ""
			}
		}
		h.mu.Unlock()
		// Another creation (here or in another process) is probing: wait
		// for its answer, but not past this creation's budget.
		left := time.Until(deadline)
		if left <= 0 {
			return Local, errProbePending.Error()
		}
		var poll <-chan time.Time
		if wait == nil {
			// The probe is another process's: look again shortly.
			poll = time.After(min(left, 100*time.Millisecond))
		}
		t := time.NewTimer(left)
		select {
		case <-wait:
		case <-poll:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return Local, errProbePending.Error()
		}
		t.Stop()
	}
}

// readWindow reads the provider's window from the store, which is trusted
// no further than this router's own options: a window ending past the
// backoff cap from now is obeyed until the cap only, and cut to it in the
// store too (so that it ends, rather than being capped afresh at every
// look), and its reason is cleaned to bounded, quotable data. A shared
// store may hold anything another program, a bug or an attacker with its
// password wrote there.
func (h *Health) readWindow(ctx context.Context) (time.Time, string, error) {
	until, reason, err := h.store.Window(ctx, h.provider)
	if err != nil || until.IsZero() {
		return until, "", err
	}
	reason = CleanReason(reason)
	if bound := h.now().Add(h.cap); until.After(bound) {
		// A store's windows only grow: cutting one is a close and a new
		// open. A router that looks in between finds no window and
		// probes, which is what a window past the cap owes it anyway.
		_ = h.store.CloseWindow(ctx, h.provider)
		_ = h.store.OpenWindow(ctx, h.provider, bound, reason)
		until = bound
	}
	return until, reason, nil
}

// MaxReason bounds a fallback reason in bytes: it reaches
// Result.FallbackReason, logs and an agent's tool text.
const MaxReason = 256

// CleanReason makes a reason safe to carry as data: valid UTF-8, no
// control or format characters (line breaks, terminal escapes, bidi
// overrides; a line break or a tab becomes a space), no quote or backslash
// that could end the quoting around it (they become ' and /), and at most
// MaxReason bytes, cut on a character boundary. A reason read from a shared
// store is the text of whoever wrote it: to a model reading a tool's result
// it must stay a short quoted string, not instructions.
func CleanReason(s string) string {
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() <= MaxReason; {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == utf8.RuneError && n == 1: // not UTF-8
			continue
		case r == '\n' || r == '\r' || r == '\t':
			r = ' '
		case r == '"' || r == '`':
			r = '\''
		case r == '\\':
			r = '/'
		case unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp):
			continue
		}
		b.WriteRune(r)
	}
	out := b.String()
	if len(out) <= MaxReason {
		return out
	}
	const ellipsis = "…"
	cut := MaxReason - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(out[cut]) {
		cut--
	}
	return out[:cut] + ellipsis
}

// ProbeSlack is how long a probe's claim outlives its budget: the CDP
// connect after the provider's answer belongs to the probe too.
const ProbeSlack = 5 * time.Second

// ProbeDone ends this process's probe: the waiters look again and find the
// provider healthy or the window open.
func (h *Health) ProbeDone() {
	h.mu.Lock()
	ch := h.probing
	h.probing = nil
	h.mu.Unlock()
	_ = h.store.DoneProbe(context.Background(), h.provider)
	if ch != nil {
		close(ch)
	}
}

// Succeeded records a working cloud session and reports whether it ended an
// outage (the one "recovered" line). A success whose attempt began before
// the latest failure says nothing about the provider now (a slow creation
// finishing after a 429), so it changes nothing.
func (h *Health) Succeeded(ctx context.Context, started time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if started.Before(h.failedAt) {
		return false
	}
	was := h.outage
	h.healthy = true
	h.heldUntil, h.heldReason = time.Time{}, ""
	h.outage, h.floorLogged, h.configErr, h.streak, h.lastErr = false, false, false, 0, nil
	if was {
		_ = h.store.CloseWindow(ctx, h.provider)
	}
	return was
}

// Failed records a provider failure, opens its window, and reports whether
// it is the first of this outage (the one to log) and the window.
//
// A configuration error (the key, the token or the payment refused) is not
// an outage: it opens no window in the store, where the fleet would read
// it as one (and the back-off gauge show it), but holds this process's
// creations off the provider until the cap, each going local with the
// refusal as its reason; then one creation asks again. Every replica finds
// a refused key out for itself, by one call.
func (h *Health) Failed(ctx context.Context, err error) (first bool, window time.Duration, reason string) {
	now := h.now()
	f := h.explain(err)
	reason = CleanReason(f.Reason)
	config := f.Config
	h.mu.Lock()
	h.healthy = false
	if config {
		h.configErr = true
	}
	window = h.window(f.RetryAfter)
	h.lastErr, h.failedAt = err, now
	first = !h.outage
	h.outage = true
	if config {
		h.heldUntil, h.heldReason = now.Add(window), reason
	}
	h.mu.Unlock()
	if !config {
		_ = h.store.OpenWindow(ctx, h.provider, now.Add(window), reason)
	}
	return first, window, reason
}

// window is how long new sessions stay off the provider after a failure
// that asked for retryAfter. Called with h.mu held.
func (h *Health) window(retryAfter time.Duration) time.Duration {
	if h.configErr {
		// A wrong key or an empty account does not heal by itself: stay
		// away as long as allowed, until a probe succeeds.
		return h.cap
	}
	if retryAfter > 0 {
		return min(retryAfter, h.cap)
	}
	// No advertised window: short, and doubling while the failures last.
	w := firstWindow << min(h.streak, 30)
	h.streak++
	return min(w, h.cap)
}

// firstWindow is the window of the first failure that names none; each
// further one doubles it, up to the cap.
const firstWindow = 5 * time.Second

// FloorFailed reports whether the double failure is the first of this
// outage (the one to log).
func (h *Health) FloorFailed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	first := !h.floorLogged
	h.floorLogged = true
	return first
}

// Last is the failure that opened the current window, if this process saw it.
func (h *Health) Last() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lastErr
}
