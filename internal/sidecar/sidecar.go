package sidecar

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
	"golang.org/x/sync/singleflight"

	"github.com/hybroute/hybroute/internal/browsertab"
	"github.com/hybroute/hybroute/internal/cdpmux"
	"github.com/hybroute/hybroute/internal/chromium"
	"github.com/hybroute/hybroute/internal/egress"
	"github.com/hybroute/hybroute/internal/guard"
)

// ErrClosed is what Open returns after Close.
var ErrClosed = errors.New("hybroute: the local Chromium sidecar is closed")

// startTimeout bounds one Chromium start. The start is shared by every
// session waiting for it and outlives the one that asked first, so it
// has a bound of its own rather than a session's creation timeout: a
// slow start that one creation gave up on serves the next.
const startTimeout = 60 * time.Second

// Config is what the sidecar needs of its user: its configuration, the
// enforcement points of each process it starts, and the turn to open a
// tab. The sidecar makes no decision about where a URL may go.
type Config struct {
	// Guard makes the guard of a new process's pipe (internal/guard). Nil
	// fails every start: no Chromium runs without a guard.
	Guard func() *guard.Guard
	// Egress starts the egress proxy every connection of a new process
	// goes through; ctx bounds the start only. Nil fails every start: no
	// Chromium runs without the egress check.
	Egress func(ctx context.Context) (*egress.Proxy, error)
	// Turn waits for the turn of a new tab that takes no spare; done
	// reports how long the opening took once it is over (0 when it
	// failed). ctx is the open's. Nil: every tab opens at once.
	Turn func(ctx context.Context) (done func(opened time.Duration), err error)
	// Opened reports how long the making of a spare tab took, which took
	// no turn. Nil: nothing is told.
	Opened func(d time.Duration)
	// Path is the Chromium binary the user named; "" finds one (Find).
	Path string
	// Flags are the user's extra Chromium switches, name to a string or
	// bool value. A switch the sidecar manages (managedFlags) or a name
	// that is not a plain switch name fails the start.
	Flags map[string]any
	// ViewportWidth and ViewportHeight are every tab's viewport in CSS
	// pixels; 0 leaves Chromium's own.
	ViewportWidth, ViewportHeight int
	// NoChromium is the sentinel the error of a missing binary wraps.
	NoChromium error
	// Dead is the error a call's error is wrapped in when the process
	// died under it (Proc.Wrap).
	Dead error
	// Log gets the process's start, death and leftovers; nil logs nothing.
	Log *slog.Logger
}

// Sidecar is the local Chromium: one warm process, started once however
// many sessions ask for it at the same time, and a new tab in a browser
// context of its own for each session. It keeps no sessions: its user
// caches them and closes their tabs.
//
// The process is started through chromedp's exec allocator (pipe transport,
// no port). Each tab's browser context is an incognito-like profile: no
// shared cookies, storage or cache. When the process dies every tab on it is
// dead (Config.Dead), and the next open starts a fresh process.
type Sidecar struct {
	cfg Config
	log *slog.Logger

	// life ends at close. A Chromium start runs under it, not under the
	// caller that asked first: the start outlives a caller that gives up
	// (others may be waiting for it), and close ends it.
	life     context.Context
	endLife  context.CancelFunc
	starting singleflight.Group

	mu     sync.Mutex
	closed bool
	proc   *Proc // the running process, nil before the first start or after a death

	// spare is a ready tab in a fresh browser context, handed to the next
	// open so that it costs no renderer round trip; spareCancel is set
	// while one is being made, spareDone closes when that ends.
	spare       *Tab
	spareCancel context.CancelFunc
	spareDone   chan struct{}
	// refillTimer makes the next spare if no key settles first
	// (refillLater); nil when no refill is pending.
	refillTimer *time.Timer

	wg sync.WaitGroup // starts, spare makers, death watchers

	// swept: the temp profiles dead processes left were removed. The
	// sweep starts with New, so a server that never opens a session
	// still clears what a killed one left; Browser and a start wait for
	// it.
	swept sync.Once

	starts atomic.Int32 // Chromium launches attempted, for tests and metrics

	// the last measure of the browser's memory (Memory)
	memUsed int64
	memAt   time.Time
	memOf   *Proc
}

// errNoEnforcement fails the start of a sidecar whose Config has no Guard
// or no Egress.
var errNoEnforcement = errors.New("hybroute: the local Chromium has no guard or no egress proxy to start with")

// New makes a sidecar. It starts nothing; the first Open starts Chromium.
func New(cfg Config) *Sidecar {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Dead == nil {
		cfg.Dead = errors.New("hybroute: the local Chromium died")
	}
	if cfg.Guard == nil || cfg.Egress == nil {
		cfg.Egress = func(context.Context) (*egress.Proxy, error) { return nil, errNoEnforcement }
	}
	if cfg.Turn == nil {
		cfg.Turn = func(context.Context) (func(time.Duration), error) { return func(time.Duration) {}, nil }
	}
	if cfg.Opened == nil {
		cfg.Opened = func(time.Duration) {}
	}
	s := &Sidecar{cfg: cfg, log: cfg.Log}
	s.life, s.endLife = context.WithCancel(context.Background())
	s.wg.Go(s.sweep)
	return s
}

// sweep removes the temp profiles dead processes left, once; a second
// caller waits for the first.
func (s *Sidecar) sweep() {
	s.swept.Do(func() { sweepProfiles(os.TempDir(), s.log) })
}

// memoryEvery is how long a measure of the browser's memory is reused: a
// burst of new sessions reads /proc once, not once each.
const memoryEvery = 500 * time.Millisecond

// Memory is the local Chromium's memory (the PSS of its processes, which
// all carry its profile directory), 0 when none runs or off Linux.
func (s *Sidecar) Memory() int64 {
	s.mu.Lock()
	proc := s.proc
	if proc == nil || time.Since(s.memAt) < memoryEvery && s.memOf == proc {
		v := s.memUsed
		if proc == nil {
			v = 0
		}
		s.mu.Unlock()
		return v
	}
	s.mu.Unlock()
	used := MemoryWith([]byte("--user-data-dir=" + proc.dataDir))
	s.mu.Lock()
	s.memUsed, s.memAt, s.memOf = used, time.Now(), proc
	s.mu.Unlock()
	return used
}

// Credit takes what ended sessions held off the last measure: their
// renderers take a moment to go, and the next new session must not end
// more sessions for memory already freed.
func (s *Sidecar) Credit(freed int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.memUsed -= freed; s.memUsed <= 0 {
		// All that was measured is credited away, yet a running browser
		// holds memory of its own: measure again rather than report
		// none, which would read as "not measured" and shed nothing.
		s.memUsed, s.memAt = 0, time.Time{}
	}
}

// Alive reports whether the Chromium process is up.
func (s *Sidecar) Alive() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil && !s.proc.Dead()
}

// Open makes a new tab, in a browser context of its own, for the session
// key (which only names it in errors). It starts Chromium when none runs.
// The caller owns the tab and closes it. ctx bounds the wait; a tab being
// made when ctx ends is undone before Open returns.
func (s *Sidecar) Open(ctx context.Context, key string) (*Tab, error) {
	if err := ctx.Err(); err != nil {
		return nil, s.openFailed(key, err)
	}
	proc, err := s.Browser(ctx)
	if err != nil {
		return nil, s.openFailed(key, err)
	}
	// A ready spare costs Chromium nothing more: it is taken without a turn.
	s.mu.Lock()
	tab := s.takeSpare(proc, key)
	s.mu.Unlock()
	if tab != nil {
		return tab, nil
	}
	// A few tabs made at once, the rest in turn (Config.Turn): each new
	// browser context starts a renderer and a guard setup, and dozens at
	// once on a loaded machine starve them all past the guard's setup
	// bound (every tab closed, every open failed), where taking turns
	// serves them all.
	done, err := s.cfg.Turn(ctx)
	if err != nil {
		return nil, s.openFailed(key, err)
	}
	started := time.Now()
	tab, err = s.newTab(ctx, proc, key)
	opened := time.Duration(0)
	if err == nil {
		opened = time.Since(started)
	}
	done(opened)
	if err != nil {
		return nil, s.openFailed(key, err)
	}
	return tab, nil
}

// openFailed wraps the error of an open. An open that close ended says so
// whatever step it was in: the browser it talked to may have answered with
// its own error (a tab it could no longer make) a moment before it died.
func (s *Sidecar) openFailed(key string, err error) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed && !errors.Is(err, ErrClosed) {
		return fmt.Errorf("hybroute: opening local tab %q: %w: %w", key, ErrClosed, err)
	}
	return fmt.Errorf("hybroute: opening local tab %q: %w", key, err)
}

// takeSpare gives the ready spare tab of proc to key, or returns nil. Called
// under s.mu.
func (s *Sidecar) takeSpare(proc *Proc, key string) *Tab {
	tab := s.spare
	if tab == nil || tab.proc != proc || proc.Dead() {
		return nil
	}
	s.spare = nil
	tab.key = key
	s.refillLater(tab)
	return tab
}

// newTab gives the key a tab on proc. It takes the pre-made spare tab when
// there is one (the fast path: a new session costs no round trip to the
// renderer); else it has the next spare made now and takes that one. The
// spare that replaces the taken one comes once the key's first call is done
// (Tab.settle), not at once: making a browser context and a tab runs on
// Chromium's UI thread, the same thread that starts the key's first
// navigation, and on a loaded machine it held that navigation up for a
// second.
func (s *Sidecar) newTab(fctx context.Context, proc *Proc, key string) (*Tab, error) {
	waited := false
	for {
		s.mu.Lock()
		if tab := s.takeSpare(proc, key); tab != nil {
			s.mu.Unlock()
			return tab, nil
		}
		if s.spareCancel == nil && !waited {
			// None ready and none coming: make it now, for this key.
			s.stopRefillTimer()
			s.fillSpare(proc)
		}
		if s.spareCancel == nil || waited {
			s.mu.Unlock()
			break
		}
		// A spare is being made: wait for it rather than make a second
		// tab alongside it (both would fight for the same CPU).
		done := s.spareDone
		s.mu.Unlock()
		select {
		case <-done:
			waited = true
		case <-fctx.Done():
			return nil, fctx.Err()
		}
	}
	// Another key took the spare this one waited for.
	tab, err := s.makeTab(fctx, proc, key)
	if err == nil {
		s.mu.Lock()
		s.refillLater(tab)
		s.mu.Unlock()
	}
	return tab, err
}

// spareRefillAfter is how long a taken spare waits for its key's first
// call to end before the next spare is made anyway (a key whose first call
// is long, or that makes none).
const spareRefillAfter = 2 * time.Second

// refillLater has the next spare made when tab's key settles (its first
// call is done), or after spareRefillAfter, whichever comes first. Called
// with s.mu held.
func (s *Sidecar) refillLater(tab *Tab) {
	proc := tab.proc
	refill := func() {
		s.mu.Lock()
		s.stopRefillTimer()
		s.fillSpare(proc)
		s.mu.Unlock()
	}
	if s.refillTimer == nil && !s.closed {
		s.refillTimer = time.AfterFunc(spareRefillAfter, refill)
	}
	tab.settle = sync.OnceFunc(refill)
}

// stopRefillTimer stops a pending refill's timer. Called with s.mu held.
func (s *Sidecar) stopRefillTimer() {
	if s.refillTimer != nil {
		s.refillTimer.Stop()
		s.refillTimer = nil
	}
}

// fillSpare starts making a spare tab on proc unless one is ready or coming.
// The spare is a fresh browser context nobody has used; it is handed to
// exactly one key. Called with s.mu held.
func (s *Sidecar) fillSpare(proc *Proc) {
	if s.closed || s.spareCancel != nil || s.spare != nil || s.proc != proc || proc.Dead() {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.spareCancel = cancel
	done := make(chan struct{})
	s.spareDone = done
	s.wg.Go(func() {
		defer close(done)
		defer cancel()
		started := time.Now()
		tab, err := s.makeTab(ctx, proc, "")
		if err == nil {
			// An opening like any: the queue's first estimate comes from
			// the spare made at start, before a burst of sessions asks.
			s.cfg.Opened(time.Since(started))
		}
		s.mu.Lock()
		s.spareCancel = nil
		keep := err == nil && !s.closed && s.proc == proc && !proc.Dead() && s.spare == nil
		if keep {
			s.spare = tab
		}
		s.mu.Unlock()
		if err == nil && !keep {
			tab.Close()
		}
	})
}

// Browser returns the running Chromium, starting it (once, however many
// callers ask at the same time) when there is none. The start outlives a
// caller that gives up, bounded by startTimeout; Close ends it.
func (s *Sidecar) Browser(ctx context.Context) (*Proc, error) {
	s.sweep() // Warm's return says the leftovers are gone
	s.mu.Lock()
	p, err := s.running()
	s.mu.Unlock()
	if p != nil || err != nil {
		return p, err
	}
	ch := s.starting.DoChan("", func() (any, error) {
		// Counted under mu after the closed check, so close waits for
		// every start it did not prevent.
		s.mu.Lock()
		if p, err := s.running(); p != nil || err != nil {
			s.mu.Unlock()
			return p, err // started by the flight that just ended, or closed
		}
		s.proc = nil // dead, if anything: its watcher tears it down
		s.wg.Add(1)
		s.mu.Unlock()
		defer s.wg.Done()
		sctx, cancel := context.WithTimeout(s.life, startTimeout)
		defer cancel()
		proc, err := s.start(sctx)
		if err != nil {
			if s.life.Err() != nil {
				return nil, ErrClosed
			}
			return nil, err
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = proc.Stop()
			return nil, ErrClosed
		}
		s.proc = proc
		s.fillSpare(proc)
		s.wg.Go(func() { s.watch(proc) })
		s.mu.Unlock()
		return proc, nil
	})
	// A caller that gives up returns at once; the start goes on for the
	// others, and Close ends it.
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(*Proc), nil
	}
}

// running is the live Chromium process, nil when there is none, and
// ErrClosed after close. Called with s.mu held.
func (s *Sidecar) running() (*Proc, error) {
	if s.closed {
		return nil, ErrClosed
	}
	if p := s.proc; p != nil && !p.Dead() {
		return p, nil
	}
	return nil, nil
}

// start launches one Chromium and attaches to its first tab. A cancelled sctx
// kills it and removes its profile before start returns.
func (s *Sidecar) start(sctx context.Context) (*Proc, error) {
	path, err := chromium.Find(s.cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", s.cfg.NoChromium, err)
	}
	s.starts.Add(1)
	// The egress proxy is up before Chromium makes its first connection.
	egress, err := s.cfg.Egress(sctx)
	if err != nil {
		return nil, err
	}
	opts, err := s.allocatorOptions(path, egress.Addr())
	if err != nil {
		egress.Close()
		return nil, err
	}
	// Our own temp profile (not chromedp's), so we know its name: stop finds
	// Chromium's children by it and removes it.
	s.sweep()
	dataDir, err := makeProfile()
	if err != nil && dataDir != "" {
		if rerr := removeProfile(dataDir); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	if err != nil {
		egress.Close()
		return nil, fmt.Errorf("hybroute: making a temp profile for local Chromium: %w", err)
	}
	if err := writeProfilePrefs(dataDir); err != nil {
		egress.Close()
		if rerr := removeProfile(dataDir); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return nil, fmt.Errorf("hybroute: preparing the temp profile of local Chromium: %w", err)
	}
	// The guard's Mux sits on the pipe between chromedp and Chromium.
	guard := s.cfg.Guard()
	splice := cdpmux.NewSplice(watchDocuments(guard, egress))
	opts = append(opts, chromedp.UserDataDir(dataDir), splice.Option())
	allocCtx, allocCancel := chromedp.NewExecAllocator(context.Background(), opts...)
	logf := func(format string, args ...any) {
		s.log.Debug("hybroute: local chromium: " + fmt.Sprintf(format, args...))
	}
	bctx, cancelBrowser := chromedp.NewContext(allocCtx, chromedp.WithBrowserOption(
		chromedp.WithBrowserLogf(logf), chromedp.WithBrowserErrorf(logf)))
	// Once: a close during the start calls it, and the failed start's
	// cleanup again. chromedp's cancel waits on a one-token semaphore that
	// is closed only once the browser ran, so a second call after a start
	// that never got that far would wait for good.
	bcancel := sync.OnceFunc(cancelBrowser)
	unhook := context.AfterFunc(sctx, bcancel)
	// A start cut short waits in chromedp for Chromium's output pipe to
	// close, which its children hold open: kill them while it waits.
	started := make(chan struct{})
	defer close(started)
	defer context.AfterFunc(sctx, func() { killUntil(dataDir, started) })()
	err = chromedp.Do(bctx) // launches Chromium; its life is bound to bctx
	splice.Launched()       // the allocation has returned: the start is over
	if err == nil {
		err = startGuard(sctx, guard, splice)
	}
	if !unhook() || err != nil {
		// chromedp's cancel waits for the browser to stop, and a start cut
		// short can leave it waiting for good: wait a bounded time, so a
		// failed start never hangs Close. What is left is killed by
		// removeProfile below.
		undone := make(chan struct{})
		go func() { bcancel(); allocCancel(); splice.Wait(); guard.Wait(); close(undone) }()
		select {
		case <-undone:
		case <-time.After(browsertab.ControlTimeout):
			s.log.Warn("hybroute: a cut-short Chromium start did not stop in time; killing what it left", "dir", dataDir)
		}
		if rerr := removeProfile(dataDir); rerr != nil {
			s.log.Warn("hybroute: removing the temp profile of a failed Chromium start", "dir", dataDir, "err", rerr)
		}
		egress.Close()
		if serr := sctx.Err(); serr != nil {
			return nil, serr
		}
		return nil, fmt.Errorf("hybroute: starting local Chromium %s: %w", path, err)
	}
	b := chromedp.FromContext(bctx).Browser
	p := &Proc{
		path:     path,
		ctx:      bctx,
		cancel:   bcancel,
		alloc:    allocCancel,
		browser:  b,
		lost:     b.LostConnection,
		dataDir:  dataDir,
		egress:   egress,
		guard:    guard,
		splice:   splice,
		stopping: make(chan struct{}),
		deadErr:  s.cfg.Dead,
	}
	if pr := b.Process(); pr != nil {
		p.pid = pr.Pid
	}
	s.log.Debug("hybroute: local Chromium started", "path", path, "pid", p.pid)
	return p, nil
}

// startGuard turns the guard on for the whole browser, through the Mux
// the splice made.
func startGuard(sctx context.Context, g *guard.Guard, sp *cdpmux.Splice) error {
	if err := sp.Err(); err != nil {
		return fmt.Errorf("hybroute: enabling the request guard: %w", err)
	}
	m := sp.Mux()
	if m == nil {
		return errors.New("hybroute: enabling the request guard: no Mux on the browser's pipe")
	}
	// Bounded by the start's own bound: it is part of the start.
	return g.Start(sctx, m)
}

// watch waits for the process to die (or to be stopped on purpose). On a
// death it logs once and reaps the process, its children and its profile,
// so the next open starts afresh; the tabs on it report Config.Dead.
func (s *Sidecar) watch(p *Proc) {
	select {
	case <-p.stopping:
		return
	case <-p.lost:
	}
	if !p.Dead() {
		return // stopped on purpose
	}
	s.mu.Lock()
	if s.proc == p {
		s.proc = nil
	}
	spare := s.spare
	if spare != nil && spare.proc == p {
		s.spare = nil
	} else {
		spare = nil
	}
	s.mu.Unlock()
	s.log.Warn("hybroute: local Chromium died; its tabs are lost, the next open starts a new one",
		"pid", p.pid)
	if spare != nil {
		spare.Close()
	}
	_ = p.Stop()
}

// Close stops the Chromium process, with every tab still open on it, and
// waits until no process, no temp profile and no goroutine of the sidecar is
// left. A start in flight is ended. Later opens fail.
func (s *Sidecar) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.closed = true
	s.stopRefillTimer()
	proc := s.proc
	s.proc = nil
	spare, spareCancel := s.spare, s.spareCancel
	s.spare = nil
	s.mu.Unlock()

	// The browser's processes, named before anything of it ends: a child
	// that does not end with the browser (wedged, or frozen) is killed
	// after it (Proc.Stop does the same for a browser stopped alone).
	var fam family
	if proc != nil {
		fam = familyOf([]byte("--user-data-dir=" + proc.dataDir))
	}
	s.endLife() // a start in flight kills what it launched
	if spareCancel != nil {
		spareCancel() // the maker sees closed and undoes its tab
	}
	if spare != nil {
		spare.Close()
	}
	var err error
	if proc != nil {
		err = proc.Stop()
		fam.kill()
	}
	s.wg.Wait()
	if err != nil {
		return fmt.Errorf("hybroute: closing the local sidecar: %w", err)
	}
	return nil
}

// Starts is how many Chromium launches were attempted.
func (s *Sidecar) Starts() int { return int(s.starts.Load()) }

// Running is the current Chromium process: nil before the first start,
// after Close, and once a death was seen.
func (s *Sidecar) Running() *Proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

// Spare is the state of the sidecar's spare tab.
type Spare struct {
	Ready   bool          // a spare waits for the next open
	Coming  bool          // one is being made
	Pending bool          // a refill waits for a key to settle or for its timer
	Done    chan struct{} // closes when the making under way ends; nil before the first
}

// SpareState is the spare tab's state now.
func (s *Sidecar) SpareState() Spare {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Spare{Ready: s.spare != nil, Coming: s.spareCancel != nil, Pending: s.refillTimer != nil, Done: s.spareDone}
}

// SettleSpare makes a pending refill now and waits for the spare being
// made, so that no spare appears while the caller counts browser
// contexts; it returns the ready spare's browser context, "" for none.
func (s *Sidecar) SettleSpare() cdp.BrowserContextID {
	s.mu.Lock()
	if s.refillTimer != nil {
		s.stopRefillTimer()
		if s.proc != nil {
			s.fillSpare(s.proc)
		}
	}
	done := s.spareDone
	s.mu.Unlock()
	if done != nil {
		<-done
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.spare == nil {
		return ""
	}
	return s.spare.BrowserContextID()
}
