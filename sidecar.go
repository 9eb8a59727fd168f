package hybroute

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"golang.org/x/sync/singleflight"

	"github.com/hybroute/hybroute/internal/cdpmux"
	"github.com/hybroute/hybroute/internal/chromium"
)

// errSidecarClosed is returned by open after close.
var errSidecarClosed = errors.New("hybroute: the local Chromium sidecar is closed")

const (
	// controlTimeout bounds the protocol calls the sidecar makes on its own
	// behalf (create/dispose a browser context, graceful close), which must not
	// hang on a wedged browser and must not be cut short by a caller's ctx
	// (that would leave half-made state in Chromium).
	controlTimeout = 10 * time.Second
	// startTimeout bounds one Chromium start. The start is shared by every
	// session waiting for it and outlives the one that asked first, so it
	// has a bound of its own rather than a session's creation timeout: a
	// slow start that one creation gave up on serves the next.
	startTimeout = 60 * time.Second
)

// findChromium resolves the Chromium binary: WithChromiumPath, then $CHROMIUM,
// then the usual names on PATH; a trivial wrapper script is unwrapped so
// that the process started is Chromium itself ([chromium.Unwrap]).
func findChromium(cfg *config) (string, error) {
	if p := cfg.chromiumPath; p != "" {
		full, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("%w: WithChromiumPath(%q): %w", ErrNoChromium, p, err)
		}
		return chromium.Unwrap(full), nil
	}
	full, err := chromium.Find()
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoChromium, err)
	}
	return full, nil
}

// sidecar is the local Chromium: one warm process, started once however many
// sessions ask for it at the same time, and a new tab in a browser context of
// its own for each session. It keeps no sessions: session.go caches them, one
// per cache key, and closes their tabs.
//
// The process is started through chromedp's exec allocator (pipe transport,
// no port). Each tab's browser context is an incognito-like profile: no
// shared cookies, storage or cache. When the process dies every tab on it is
// dead (ErrBrowserDead), and the next open starts a fresh process.
type sidecar struct {
	cfg *config
	pol *policy // the egress check of every connection decides with it
	log *slog.Logger

	// life ends at close. A Chromium start runs under it, not under the
	// caller that asked first: the start outlives a caller that gives up
	// (others may be waiting for it), and close ends it.
	life     context.Context
	endLife  context.CancelFunc
	starting singleflight.Group

	mu     sync.Mutex
	closed bool
	proc   *chromiumProc // the running process, nil before the first start or after a death

	// spare is a ready tab in a fresh browser context, handed to the next
	// open so that it costs no renderer round trip; spareCancel is set
	// while one is being made, spareDone closes when that ends.
	spare       *localTab
	spareCancel context.CancelFunc
	spareDone   chan struct{}
	// refillTimer makes the next spare if no key settles first
	// (refillLater); nil when no refill is pending.
	refillTimer *time.Timer

	wg sync.WaitGroup // starts, spare makers, death watchers

	// swept: the temp profiles dead processes left were removed, at the
	// first start.
	swept sync.Once

	starts atomic.Int32 // Chromium launches attempted, for tests and metrics

	tabs *tabQueue // bounds the tabs made at once (maxTabsAtOnce); the rest wait in turn
	// the last measure of the browser's memory (memory)
	memUsed int64
	memAt   time.Time
	memOf   *chromiumProc

	// observe is the router's: it records each opening's wait for a turn.
	observe func(waited time.Duration, err error)
}

// maxTabsAtOnce bounds the new tabs the sidecar makes at the same time.
const maxTabsAtOnce = 4

// chromiumProc is one Chromium process and its root chromedp context.
type chromiumProc struct {
	pid     int
	path    string
	ctx     context.Context // root chromedp context of the browser (its first tab)
	cancel  context.CancelFunc
	alloc   context.CancelFunc // the exec allocator; waits for the temp profile to be removed
	browser *chromedp.Browser
	lost    <-chan struct{} // closed when the pipe to Chromium drops
	dataDir string          // temp user-data-dir, ours: removed by stop
	egress  *egressProxy    // every connection of this process goes through it; closed by stop
	guard   *browserGuard   // the guard of every tab of this process (internal/guard)
	splice  *cdpmux.Splice  // the guard's Mux on the pipe; its goroutines end with the process

	stopping chan struct{} // closed when the sidecar stops it on purpose
	died     atomic.Bool   // the pipe dropped before any stop: a death
	stopOnce sync.Once
	stopErr  error
}

func (p *chromiumProc) dead() bool {
	if p.died.Load() {
		return true
	}
	select {
	case <-p.lost:
		select {
		case <-p.stopping:
			return false // we closed it; that is not a death
		default:
			return true
		}
	default:
		return false
	}
}

// ended reports whether the process is gone or going: dead, or being
// stopped on purpose.
func (p *chromiumProc) ended() bool {
	select {
	case <-p.lost:
		return true
	case <-p.stopping:
		return true
	default:
		return false
	}
}

// wrap marks err as a death of the browser when the process is gone.
func (p *chromiumProc) wrap(err error) error {
	if err != nil && p.dead() && !errors.Is(err, ErrBrowserDead) {
		return fmt.Errorf("%w (pid %d): %w", errLocalDead, p.pid, err)
	}
	return err
}

// stop closes Chromium (gracefully, bounded by controlTimeout, then by force),
// and waits until the process, its children and its temp profile are gone.
func (p *chromiumProc) stop() error {
	p.stopOnce.Do(func() {
		died := p.dead()
		if died {
			p.died.Store(true) // before stopping closes, so dead() stays true
		}
		close(p.stopping)
		var err error
		if !died {
			// Graceful first; a browser too busy to answer in time (a
			// loaded machine) is killed below, which is no failure of the
			// stop: only what outlives it is reported.
			ctx, cancel := context.WithTimeout(p.ctx, controlTimeout)
			_ = chromedp.Cancel(ctx)
			cancel()
		}
		p.cancel() // kills what is left, waits for the allocation to end
		p.alloc()  // waits for chromedp's goroutines of this browser
		if p.splice != nil {
			p.splice.Wait()
		}
		if p.guard != nil {
			p.guard.Wait()
		}
		if p.egress != nil {
			p.egress.Close() // after the process: nothing is left to connect through it
		}
		if rerr := removeProfile(p.dataDir); rerr != nil {
			err = errors.Join(err, rerr)
		}
		if err != nil {
			p.stopErr = fmt.Errorf("hybroute: closing local Chromium (pid %d): %w", p.pid, err)
		}
	})
	return p.stopErr
}

// localTab is one session's tab: a page target in a browser context of its own.
type localTab struct {
	key  string // the session's cache key, for errors
	mu   sync.Mutex
	ctx  context.Context    // chromedp context bound to the tab; guarded by mu (a wedged tab is replaced, tabs.go)
	stop context.CancelFunc // detaches chromedp from the tab; guarded by mu
	bcID cdp.BrowserContextID
	proc *chromiumProc
	door *egressSession // the context's own door into the egress proxy, and its grant (internal/egress)

	// settle tells the sidecar that the key's first call is done, so the
	// spare it took may be replaced now (refillLater); nil for a tab that
	// took no part in the spare's cycle. Set before the tab is handed out.
	settle func()

	closeOnce sync.Once
	closeErr  error
}

// settled is called when the first call on the tab has ended.
func (t *localTab) settled() {
	if t.settle != nil {
		t.settle()
	}
}

// context returns the chromedp context bound to the tab. Run chromedp actions
// on it, or on a context derived from it (see bind); never cancel it yourself,
// close the tab instead.
func (t *localTab) context() context.Context {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ctx
}

// bind returns a child of the tab's context that also ends when ctx ends (and
// has ctx's deadline): the context a caller's chromedp calls should run with,
// so the caller's deadline bounds the call without closing the tab.
func (t *localTab) bind(ctx context.Context) (context.Context, context.CancelFunc) {
	return bindTab(t.context(), ctx)
}

// dead reports whether the Chromium process under the tab has died.
func (t *localTab) dead() bool { return t.proc.dead() }

// wrapErr turns the error of a chromedp call on the tab into one that wraps
// ErrBrowserDead when the process died under it; other errors pass unchanged.
func (t *localTab) wrapErr(err error) error { return t.proc.wrap(err) }

// close detaches from the tab and disposes of its browser context (which
// closes the page and drops its cookies and storage).
func (t *localTab) close() error {
	t.closeOnce.Do(func() {
		// Last, after the context: nothing of it connects through the
		// door then.
		defer t.door.Close()
		t.mu.Lock()
		stop := t.stop
		t.mu.Unlock()
		stop()
		if t.proc.ended() {
			return // the browser context goes with the process
		}
		ctx, cancel := context.WithTimeout(context.Background(), controlTimeout)
		defer cancel()
		_, err := cdp.Call(ctx, t.proc.browser, target.DisposeBrowserContext,
			target.DisposeBrowserContextParams{BrowserContextID: t.bcID})
		if err != nil && !t.proc.ended() {
			t.closeErr = fmt.Errorf("hybroute: disposing of the browser context of local tab %q: %w", t.key, err)
		}
	})
	return t.closeErr
}

// newSidecar makes a sidecar. It starts nothing; the first open starts Chromium.
func newSidecar(cfg *config, pol *policy) *sidecar {
	log := cfg.logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &sidecar{cfg: cfg, pol: pol, log: log, tabs: newTabQueue(maxTabsAtOnce)}
	s.life, s.endLife = context.WithCancel(context.Background())
	return s
}

// memoryEvery is how long a measure of the browser's memory is reused: a
// burst of new sessions reads /proc once, not once each.
const memoryEvery = 500 * time.Millisecond

// memory is the local Chromium's memory (the PSS of its processes, which
// all carry its profile directory), 0 when none runs or off Linux.
func (s *sidecar) memory() int64 {
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
	used := memoryWith([]byte("--user-data-dir=" + proc.dataDir))
	s.mu.Lock()
	s.memUsed, s.memAt, s.memOf = used, time.Now(), proc
	s.mu.Unlock()
	return used
}

// credit takes what ended sessions held off the last measure: their
// renderers take a moment to go, and the next new session must not end
// more sessions for memory already freed.
func (s *sidecar) credit(freed int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.memUsed -= freed; s.memUsed <= 0 {
		// All that was measured is credited away, yet a running browser
		// holds memory of its own: measure again rather than report
		// none, which would read as "not measured" and shed nothing.
		s.memUsed, s.memAt = 0, time.Time{}
	}
}

// alive reports whether the Chromium process is up.
func (s *sidecar) alive() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil && !s.proc.dead()
}

// open makes a new tab, in a browser context of its own, for the session
// key (which only names it in errors). It starts Chromium when none runs.
// The caller owns the tab and closes it. ctx bounds the wait; a tab being
// made when ctx ends is undone before open returns.
func (s *sidecar) open(ctx context.Context, key string) (*localTab, error) {
	if err := ctx.Err(); err != nil {
		return nil, s.openFailed(key, err)
	}
	proc, err := s.browser(ctx)
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
	// A few tabs made at once, the rest in turn (admission.go): each new
	// browser context starts a renderer and a guard setup, and dozens at
	// once on a loaded machine starve them all past the guard's setup
	// bound (every tab closed, every open failed), where taking turns
	// serves them all.
	terms, _ := ctx.Value(admissionKey{}).(admissionTerms)
	waited, done, err := s.tabs.wait(ctx, terms)
	if s.observe != nil {
		s.observe(waited, err)
	}
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
func (s *sidecar) openFailed(key string, err error) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed && !errors.Is(err, errSidecarClosed) {
		return fmt.Errorf("hybroute: opening local tab %q: %w: %w", key, errSidecarClosed, err)
	}
	return fmt.Errorf("hybroute: opening local tab %q: %w", key, err)
}

// takeSpare gives the ready spare tab of proc to key, or returns nil. Called
// under s.mu.
func (s *sidecar) takeSpare(proc *chromiumProc, key string) *localTab {
	tab := s.spare
	if tab == nil || tab.proc != proc || proc.dead() {
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
// (localTab.settle), not at once: making a browser context and a tab runs on
// Chromium's UI thread, the same thread that starts the key's first
// navigation, and on a loaded machine it held that navigation up for a
// second.
func (s *sidecar) newTab(fctx context.Context, proc *chromiumProc, key string) (*localTab, error) {
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
	tab, err := makeTab(fctx, proc, key, s.cfg)
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
func (s *sidecar) refillLater(tab *localTab) {
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
func (s *sidecar) stopRefillTimer() {
	if s.refillTimer != nil {
		s.refillTimer.Stop()
		s.refillTimer = nil
	}
}

// fillSpare starts making a spare tab on proc unless one is ready or coming.
// The spare is a fresh browser context nobody has used; it is handed to
// exactly one key. Called with s.mu held.
func (s *sidecar) fillSpare(proc *chromiumProc) {
	if s.closed || s.spareCancel != nil || s.spare != nil || s.proc != proc || proc.dead() {
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
		tab, err := makeTab(ctx, proc, "", s.cfg)
		if err == nil {
			// An opening like any: the queue's first estimate comes from
			// the spare made at start, before a burst of sessions asks.
			s.tabs.sample(time.Since(started))
		}
		s.mu.Lock()
		s.spareCancel = nil
		keep := err == nil && !s.closed && s.proc == proc && !proc.dead() && s.spare == nil
		if keep {
			s.spare = tab
		}
		s.mu.Unlock()
		if err == nil && !keep {
			tab.close()
		}
	})
}

// makeTab makes a browser context and a tab in it on proc. A cancelled fctx
// undoes whatever was made before makeTab returns.
func makeTab(fctx context.Context, proc *chromiumProc, key string, cfg *config) (*localTab, error) {
	// The context's own door into the egress proxy: a connection through
	// it is this context's, and reaches what its session was granted.
	door, err := proc.egress.OpenDoor(fctx)
	if err != nil {
		return nil, err
	}
	// Not under fctx: a cancel after Chromium made the context would leak it.
	cctx, cancel := context.WithTimeout(context.Background(), controlTimeout)
	res, err := cdp.Call(cctx, proc.browser, target.CreateBrowserContext,
		target.CreateBrowserContextParams{DisposeOnDetach: new(true),
			ProxyServer: "http://" + door.Addr(), ProxyBypassList: proxyBypassList})
	cancel()
	if err != nil {
		door.Close()
		return nil, proc.wrap(fmt.Errorf("creating a browser context: %w", err))
	}
	door.Bind(string(res.BrowserContextID))
	tctx, stop := chromedp.NewContext(proc.ctx,
		chromedp.WithExistingBrowserContext(res.BrowserContextID),
		// Cancelling detaches only; close disposes of the browser context,
		// which closes the page in one step.
		chromedp.WithDetachOnCancel())
	tab := &localTab{key: key, ctx: tctx, stop: stop, bcID: res.BrowserContextID, proc: proc, door: door}
	unhook := context.AfterFunc(fctx, stop)
	err = chromedp.Do(tctx) // creates and attaches the page; binds it to tctx
	if err == nil {
		err = setViewport(tctx, cfg)
	}
	if !unhook() || err != nil {
		// Best effort: if the dispose fails the browser is going away, and
		// the context goes with it.
		tab.close()
		if ferr := fctx.Err(); ferr != nil {
			return nil, ferr
		}
		return nil, proc.wrap(fmt.Errorf("opening a tab: %w", err))
	}
	return tab, nil
}

// browser returns the running Chromium, starting it (once, however many
// callers ask at the same time) when there is none. The start outlives a
// caller that gives up, bounded by startTimeout; close ends it.
func (s *sidecar) browser(ctx context.Context) (*chromiumProc, error) {
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
				return nil, errSidecarClosed
			}
			return nil, err
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = proc.stop()
			return nil, errSidecarClosed
		}
		s.proc = proc
		s.fillSpare(proc)
		s.wg.Go(func() { s.watch(proc) })
		s.mu.Unlock()
		return proc, nil
	})
	return await[*chromiumProc](ctx, ch)
}

// running is the live Chromium process, nil when there is none, and
// errSidecarClosed after close. Called with s.mu held.
func (s *sidecar) running() (*chromiumProc, error) {
	if s.closed {
		return nil, errSidecarClosed
	}
	if p := s.proc; p != nil && !p.dead() {
		return p, nil
	}
	return nil, nil
}

// managedFlags are the flags WithChromiumFlags may not set: a debugging port
// would let any local process drive the browser (and leave chromedp's pipe
// transport), and the profile directory is the sidecar's to make and remove.
// The proxy flags are managed too: every connection of the local browser
// goes through the egress check (internal/egress), and no flag may take it away.
// Site isolation stays on: a flag may not put sites in one process.
var managedFlags = []string{"remote-debugging-port", "remote-debugging-address", "remote-debugging-pipe", "user-data-dir",
	"proxy-server", "proxy-bypass-list", "no-proxy-server", "proxy-pac-url", "proxy-auto-detect",
	"disable-quic", "enable-quic", "origin-to-force-quic-on", "webrtc-ip-handling-policy", "force-webrtc-ip-handling-policy",
	"site-per-process", "disable-site-isolation-trials"}

// proxyBypassList removes Chromium's implicit bypass of localhost and
// loopback literals: they go through the proxy too, the browser-wide one
// and each context's own.
const proxyBypassList = "<-loopback>"

// webRTCPolicy is the WebRTC IP handling policy of the local Chromium: UDP
// only through a proxy, which for an HTTP proxy means no UDP at all.
const webRTCPolicy = "disable_non_proxied_udp"

// profilePrefs holds the WebRTC policy in the profile as well, a second
// layer under the switch (which outranks it): it still holds on a binary
// that ignores the switch. ip_handling_url is pinned empty because a
// per-URL entry there overrides the global policy, the switch included.
const profilePrefs = `{"webrtc":{"ip_handling_policy":"` + webRTCPolicy + `","ip_handling_url":[]}}`

// writeProfilePrefs writes the Preferences file of the temp profile's
// Default profile before Chromium first reads it.
func writeProfilePrefs(dataDir string) error {
	d := filepath.Join(dataDir, "Default")
	if err := os.MkdirAll(d, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(d, "Preferences"), []byte(profilePrefs), 0o600)
}

// allocatorOptions are the exec allocator options of the local Chromium,
// whose connections all go through the egress proxy at proxyAddr.
func (s *sidecar) allocatorOptions(path, proxyAddr string) ([]chromedp.ExecAllocatorOption, error) {
	opts := slices.Clone(chromedp.DefaultExecAllocatorOptions[:])
	opts = append(opts,
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		// Network-quiet: no traffic of Chromium's own (updates, sync,
		// metrics, field trials, safe browsing lists, the secure-time
		// query to clients2.google.com that NetworkTimeServiceQuerying
		// makes at start). What these do not stop is in docs/security.md,
		// Known limits.
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("disable-features", "Translate,BlinkGenPropertyTrees,OptimizationHints,MediaRouter,DialMediaRouteProvider,AutofillServerCommunication,CertificateTransparencyComponentUpdater,NetworkTimeServiceQuerying,"+
			// Chromium keeps a spare renderer warm for the browser context
			// that navigated last. Every session here is a browser context
			// of its own, and a renderer never serves another context, so
			// nearly every spare was started only to be thrown away: four
			// renderers per session instead of two, a sixth of the CPU a
			// session costs (docs/load.md).
			"SpareRendererForSitePerProcess,"+
			// Chrome's headless mode still builds the omnibox popup of each
			// browser context as a WebUI page in a renderer of its own,
			// though headless has no omnibox to show it in: one renderer
			// per session and about half the CPU a session costs. Both
			// features are needed, each makes a popup of its own. The
			// toolbar's reload button is WebUI too where it is enabled.
			// Puppeteer turns the same three off.
			"WebUIOmniboxPopup,WebUIOmniboxAimPopup,WebUIReloadButton"),
		chromedp.Flag("disable-gpu", true),
		// Every site in a renderer of its own, whatever the build's
		// default: headless shells leave cross-site frames in their
		// parent's process.
		chromedp.Flag("site-per-process", true),
		// The sandbox cannot run as root; everywhere else keep it. An
		// explicit false also stops chromedp from adding it by itself.
		chromedp.Flag("no-sandbox", os.Geteuid() == 0),
		// Connect-time enforcement: every connection, localhost included
		// (<-loopback> removes the implicit bypass), goes through the
		// egress proxy; nothing over QUIC or non-proxied WebRTC UDP.
		chromedp.Flag("proxy-server", "http://"+proxyAddr),
		chromedp.Flag("proxy-bypass-list", proxyBypassList),
		chromedp.Flag("disable-quic", true),
		// WebRTC may use no UDP that does not go through the proxy (an
		// HTTP proxy carries none): no STUN, no TURN over UDP, no UDP
		// checks to a remote candidate, no host candidates and so no mDNS
		// announcements. TURN over TCP and ICE-TCP still work, as CONNECTs
		// through the egress check. Chrome reads only the first switch
		// (into the profile pref webrtc.ip_handling_policy); content-based
		// shells such as the old headless shell read only the second. The
		// value is exact: any other spelling silently means "default".
		chromedp.Flag("webrtc-ip-handling-policy", webRTCPolicy),
		chromedp.Flag("force-webrtc-ip-handling-policy", webRTCPolicy),
	)
	for _, name := range slices.Sorted(maps.Keys(s.cfg.chromiumFlags)) {
		v := s.cfg.chromiumFlags[name]
		if !isFlagName(name) {
			// chromedp writes the key verbatim after "--": a key such as
			// "proxy-server=direct://" would smuggle a managed flag past
			// the check below.
			return nil, fmt.Errorf("hybroute: chromium flag %q: a flag name is lower-case letters, digits and dashes", name)
		}
		if slices.Contains(managedFlags, name) {
			return nil, fmt.Errorf("hybroute: chromium flag %q is managed by the sidecar (pipe transport, temp profile, egress proxy) and cannot be set", name)
		}
		switch v.(type) {
		case string, bool:
		default:
			return nil, fmt.Errorf("hybroute: chromium flag %q: the value must be a string or a bool, not %T", name, v)
		}
		opts = append(opts, chromedp.Flag(name, v))
	}
	return opts, nil
}

// start launches one Chromium and attaches to its first tab. A cancelled sctx
// kills it and removes its profile before start returns.
func (s *sidecar) start(sctx context.Context) (*chromiumProc, error) {
	path, err := findChromium(s.cfg)
	if err != nil {
		return nil, err
	}
	s.starts.Add(1)
	// The egress proxy is up before Chromium makes its first connection.
	egress, err := startEgress(sctx, s.pol, s.cfg.egressDialer, s.log)
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
	s.swept.Do(func() { sweepProfiles(os.TempDir(), s.log) })
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
	guard := newBrowserGuard(s.cfg, s.pol, s.log, RouteLocal)
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
		case <-time.After(controlTimeout):
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
	p := &chromiumProc{
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
	}
	if pr := b.Process(); pr != nil {
		p.pid = pr.Pid
	}
	s.log.Debug("hybroute: local Chromium started", "path", path, "pid", p.pid)
	return p, nil
}

// startGuard turns the guard on for the whole browser, through the Mux
// the splice made.
func startGuard(sctx context.Context, g *browserGuard, sp *cdpmux.Splice) error {
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
// so the next open starts afresh; the tabs on it report ErrBrowserDead.
func (s *sidecar) watch(p *chromiumProc) {
	select {
	case <-p.stopping:
		return
	case <-p.lost:
	}
	if !p.dead() {
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
		spare.close()
	}
	_ = p.stop()
}

// close stops the Chromium process, with every tab still open on it, and
// waits until no process, no temp profile and no goroutine of the sidecar is
// left. A start in flight is ended. Later opens fail.
func (s *sidecar) close() error {
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

	s.endLife() // a start in flight kills what it launched
	if spareCancel != nil {
		spareCancel() // the maker sees closed and undoes its tab
	}
	if spare != nil {
		spare.close()
	}
	var err error
	if proc != nil {
		err = proc.stop()
	}
	s.wg.Wait()
	if err != nil {
		return fmt.Errorf("hybroute: closing the local sidecar: %w", err)
	}
	return nil
}

// removeProfile kills any process still running with the temp profile dir
// (Chromium's children can outlive a killed browser, and they rename their
// command line, so chromedp's own exact-argument search misses them), then
// removes the directory, retrying while late writers finish.
func removeProfile(dir string) error {
	if dir == "" {
		return nil
	}
	arg := []byte("--user-data-dir=" + dir)
	for quiet, deadline := 0, time.Now().Add(2*time.Second); quiet < 3 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if killProcessesWith(arg) == 0 {
			quiet++
		} else {
			quiet = 0
		}
	}
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if err = os.RemoveAll(dir); err == nil || !time.Now().Before(deadline) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("removing the temp profile %s: %w", dir, err)
	}
	return nil
}

// killUntil kills the processes running with the temp profile dir every
// 50 ms until done closes.
func killUntil(dir string, done <-chan struct{}) {
	arg := []byte("--user-data-dir=" + dir)
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		killProcessesWith(arg)
		select {
		case <-done:
			return
		case <-t.C:
		}
	}
}

// hasArg reports whether cmdline holds arg followed by a separator or the end.
func hasArg(cmdline, arg []byte) bool {
	for i := 0; ; {
		j := bytes.Index(cmdline[i:], arg)
		if j < 0 {
			return false
		}
		end := i + j + len(arg)
		startOK := i+j == 0 || cmdline[i+j-1] == 0 || cmdline[i+j-1] == ' '
		if startOK && (end == len(cmdline) || cmdline[end] == 0 || cmdline[end] == ' ') {
			return true
		}
		i = end
	}
}

// isFlagName reports whether name is a plain Chromium switch name.
func isFlagName(name string) bool {
	if name == "" || name[0] == '-' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
