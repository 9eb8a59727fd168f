package sidecar

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute/internal/browsertab"
	"github.com/hybroute/hybroute/internal/cdpmux"
	"github.com/hybroute/hybroute/internal/egress"
	"github.com/hybroute/hybroute/internal/guard"
)

// Proc is one Chromium process and its root chromedp context.
type Proc struct {
	pid     int
	path    string
	ctx     context.Context // root chromedp context of the browser (its first tab)
	cancel  context.CancelFunc
	alloc   context.CancelFunc // the exec allocator; waits for the temp profile to be removed
	browser *chromedp.Browser
	lost    <-chan struct{} // closed when the pipe to Chromium drops
	dataDir string          // temp user-data-dir, ours: removed by stop
	egress  *egress.Proxy   // every connection of this process goes through it; closed by stop
	guard   *guard.Guard    // the guard of every tab of this process (internal/guard)
	splice  *cdpmux.Splice  // the guard's Mux on the pipe; its goroutines end with the process

	deadErr  error         // Config.Dead: what Wrap wraps a call's error in after a death
	stopping chan struct{} // closed when the sidecar stops it on purpose
	died     atomic.Bool   // the pipe dropped before any stop: a death
	stopOnce sync.Once
	stopErr  error
}

// PID is the browser process's id, 0 when chromedp did not say.
func (p *Proc) PID() int { return p.pid }

// DataDir is the process's temp profile directory, removed by Stop.
func (p *Proc) DataDir() string { return p.dataDir }

// Browser is the process's browser connection, for calls on the browser
// target (browser contexts, cookies of a context).
func (p *Proc) Browser() *chromedp.Browser { return p.browser }

// Context is the process's root chromedp context (its first tab): a new
// tab on the process is a chromedp context made from it.
func (p *Proc) Context() context.Context { return p.ctx }

// Egress is the egress proxy every connection of the process goes through.
func (p *Proc) Egress() *egress.Proxy { return p.egress }

// Guard is the guard of every tab of the process.
func (p *Proc) Guard() *guard.Guard { return p.guard }

// Dead reports whether the process died: its pipe dropped before any stop.
func (p *Proc) Dead() bool {
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

// Ended reports whether the process is gone or going: dead, or being
// stopped on purpose.
func (p *Proc) Ended() bool {
	select {
	case <-p.lost:
		return true
	case <-p.stopping:
		return true
	default:
		return false
	}
}

// Wrap marks err as a death of the browser (Config.Dead) when the process
// is gone, unless it is marked already. chromedp names the process's exit
// in the error of a call it ended (an *exec.ExitError in the chain), which
// can come before this process's watcher has seen the exit; unless we
// stopped the browser, that exit is its death too.
func (p *Proc) Wrap(err error) error {
	if err == nil || errors.Is(err, p.deadErr) {
		return err
	}
	var exit *exec.ExitError
	if p.Dead() || (errors.As(err, &exit) && !p.stopRequested()) {
		return fmt.Errorf("%w (pid %d): %w", p.deadErr, p.pid, err)
	}
	return err
}

// stopRequested reports whether Stop has begun.
func (p *Proc) stopRequested() bool {
	select {
	case <-p.stopping:
		return true
	default:
		return false
	}
}

// Stop closes Chromium (gracefully, bounded by browsertab.ControlTimeout, then by force),
// and waits until the process, its children and its temp profile are gone.
func (p *Proc) Stop() error {
	p.stopOnce.Do(func() {
		died := p.Dead()
		if died {
			p.died.Store(true) // before stopping closes, so Dead stays true
		}
		close(p.stopping)
		var err error
		if !died {
			// Graceful first; a browser too busy to answer in time (a
			// loaded machine) is killed below, which is no failure of the
			// stop: only what outlives it is reported.
			ctx, cancel := context.WithTimeout(p.ctx, browsertab.ControlTimeout)
			_ = chromedp.Cancel(ctx)
			cancel()
		}
		// The browser's processes, named before it goes: a child that does
		// not end with it (wedged, or frozen) is killed after it.
		fam := familyOf([]byte("--user-data-dir=" + p.dataDir))
		p.cancel() // kills what is left, waits for the allocation to end
		fam.kill()
		p.alloc() // waits for chromedp's goroutines of this browser
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

// HasArg reports whether cmdline holds arg followed by a separator or the end.
func HasArg(cmdline, arg []byte) bool {
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
