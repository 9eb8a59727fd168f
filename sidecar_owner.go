package hybroute

import (
	"context"
	"log/slog"
	"time"

	"github.com/chromedp/cdproto/cdp"

	"github.com/hybroute/hybroute/internal/egress"
	"github.com/hybroute/hybroute/internal/guard"
	sc "github.com/hybroute/hybroute/internal/sidecar"
)

// The local Chromium's process lives in internal/sidecar. What it needs of
// the router comes through here: the options it reads (a sc.Config), the
// guard and the egress proxy of each process it starts, both deciding with
// the router's policy on the local browser, and the turn to open a tab
// (admission.go). The sidecar holds no rule and no config of the router's.

// errSidecarClosed is what opening a local tab returns after Close.
var errSidecarClosed = sc.ErrClosed

// maxTabsAtOnce bounds the new tabs the sidecar makes at the same time.
const maxTabsAtOnce = 4

// chromiumProc is one Chromium process of the sidecar.
type chromiumProc = sc.Proc

// sidecar is the router's local Chromium (internal/sidecar), with the
// queue of its tab openings.
type sidecar struct {
	*sc.Sidecar
	tabs *tabQueue // bounds the tabs made at once (maxTabsAtOnce); the rest wait in turn
	// observe is the router's: it records each opening's wait for a turn.
	observe func(waited time.Duration, err error)
}

// newSidecar makes the sidecar of a router with cfg, whose local browser
// decides with pol. It starts nothing; the first open starts Chromium.
func newSidecar(cfg *config, pol *policy) *sidecar {
	log := cfg.logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &sidecar{tabs: newTabQueue(maxTabsAtOnce)}
	s.Sidecar = sc.New(sc.Config{
		Path:           cfg.chromiumPath,
		Flags:          cfg.chromiumFlags,
		ViewportWidth:  cfg.viewportW,
		ViewportHeight: cfg.viewportH,
		NoChromium:     ErrNoChromium,
		Dead:           errLocalDead,
		Log:            log,
	}, sidecarOwner{s: s, cfg: cfg, pol: pol, log: log})
	return s
}

// open makes a new tab, in a browser context of its own, for the session
// key. The caller owns the tab and closes it.
func (s *sidecar) open(ctx context.Context, key string) (*localTab, error) {
	t, err := s.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	return &localTab{Tab: t, bcID: t.BrowserContextID(), proc: t.Proc(), door: t.Door()}, nil
}

// browser returns the running Chromium, starting it when there is none.
func (s *sidecar) browser(ctx context.Context) (*chromiumProc, error) { return s.Browser(ctx) }

// memory is the local Chromium's memory, 0 when none runs or off Linux.
func (s *sidecar) memory() int64 { return s.Memory() }

// credit takes what ended sessions held off the last measure of memory.
func (s *sidecar) credit(freed int64) { s.Credit(freed) }

// alive reports whether the Chromium process is up.
func (s *sidecar) alive() bool { return s.Alive() }

// close stops Chromium and waits until nothing of it is left.
func (s *sidecar) close() error { return s.Close() }

// sidecarOwner gives each process of the sidecar its guard and egress
// proxy, deciding on the local browser with the router's policy, and
// each new tab its turn.
type sidecarOwner struct {
	s   *sidecar
	cfg *config
	pol *policy
	log *slog.Logger
}

func (o sidecarOwner) Guard() *guard.Guard {
	return newBrowserGuard(o.cfg, o.pol, o.log, RouteLocal)
}

func (o sidecarOwner) Egress(ctx context.Context) (*egress.Proxy, error) {
	return startEgress(ctx, o.pol, o.cfg.egressDialer, o.log)
}

// Turn waits in the admission queue under the terms the call's context
// carries (admission.go), and has the router record the wait.
func (o sidecarOwner) Turn(ctx context.Context) (func(opened time.Duration), error) {
	terms, _ := ctx.Value(admissionKey{}).(admissionTerms)
	waited, done, err := o.s.tabs.wait(ctx, terms)
	if o.s.observe != nil {
		o.s.observe(waited, err)
	}
	return done, err
}

// Opened counts a spare's making in the queue's estimate: its first
// estimate comes from the spare made at start, before a burst of sessions
// asks.
func (o sidecarOwner) Opened(d time.Duration) { o.s.tabs.sample(d) }

// localTab is one session's tab on the sidecar: a page in a browser
// context of its own. The fields are the sidecar tab's, fixed for its life.
type localTab struct {
	*sc.Tab
	bcID cdp.BrowserContextID
	proc *chromiumProc
	door *egressSession // the context's own door into the egress proxy, and its grant
}

// settled is called when the first call on the tab has ended.
func (t *localTab) settled() { t.Settled() }

// close detaches from the tab and disposes of its browser context.
func (t *localTab) close() error { return t.Close() }
