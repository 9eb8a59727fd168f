// Package download is the toolset's download engine. A click or a
// navigation that starts a download does not break the session: the
// browser is told, per browser context, what to do with files (Browser.setDownloadBehavior), and the toolset follows them by the
// browser's download events. With a download directory and a page in the
// local browser, the browser saves the file under a staging directory of
// the session's, by its GUID (allowAndName); the toolset then moves it to
// the download directory under its suggested name, cleaned, never outside
// the directory and never over another file, and reports its name, size
// and type in the call's result. Anything else is denied, and the result
// says why: no download directory, or a page in a cloud browser, whose
// disk is the provider's machine. The download's request went through the
// guard like any request of the page (a document request is paused on both
// routes), so a download that redirects to a blocked address is refused
// before it starts.
package download

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute/agent/internal/modeltext"
)

// Config is what a session's downloads may do.
type Config struct {
	// Dir is where files are saved: absolute and without links, so that
	// the browser's reports of where it saved a file compare with it.
	// "": downloads are denied.
	Dir string
	// MaxBytes bounds one file: a download past it is cancelled and its
	// part removed.
	MaxBytes int64
	// MaxTotal bounds the bytes of the session's downloads together,
	// MaxFiles how many it may start, and PerMinute how many it may start
	// in any minute. A page past one is cut off: the download is
	// cancelled, and every later one of the session refused. 0: no bound.
	MaxTotal  int64
	MaxFiles  int
	PerMinute int
	// Keep leaves the saved files in Dir when the session ends; without
	// it End removes them.
	Keep bool
	// Go runs background work (moving a finished file, cancelling one too
	// big) that the owner waits for when it closes.
	Go func(func())
}

// New returns the downloads of one session.
func New(cfg Config) *Tracker { return &Tracker{cfg: cfg} }

// Bounds of the download record.
const (
	maxDownloadsKept = 50 // per session, newest kept
	maxPendingGUIDs  = 256
	// downloadStartWait bounds the wait, after a navigation the browser
	// aborted, for the download that may have aborted it: the browser
	// reports the download on its own session, after the tab's answer.
	downloadStartWait = 10 * time.Second
	// downloadWaitMax bounds how long a call waits for its downloads to
	// finish; a longer one is reported as still going.
	downloadWaitMax = 30 * time.Second
	maxFileName     = 150 // bytes of a saved file's name
)

// download states, as the model reads them.
const (
	dlGoing   = "downloading"
	dlSaved   = "saved"
	dlRefused = "refused"
	dlTooBig  = "too big"
	dlFailed  = "failed"
)

type download struct {
	guid, url, suggested string
	frame                cdp.FrameID
	seq                  int
	mine                 bool // the session's: its tab's frame, or saved in its staging directory
	state                string
	why                  string // refused or failed: why
	received, total      int64
	tmp                  string // the browser's file, once complete
	path, mime           string // the saved file
	size                 int64
	bc                   cdp.BrowserContextID
	cancelling           bool
	finishing            bool
	admitted             bool      // counted against the session's bounds
	looked               time.Time // when the staging directory was last looked at for its file
	began                time.Time
	bctx                 context.Context // its browser's, for the calls about it
}

// Tracker is one session's downloads and how its browser contexts treat
// them.
type Tracker struct {
	cfg Config

	mu        sync.Mutex
	staging   string                                   // the browser's files: a directory of the session's inside the download directory
	contexts  map[cdp.BrowserContextID]string          // set up, with why downloads are denied there ("" allowed)
	tabs      map[target.ID]cdp.BrowserContextID       // the session's tabs: a download of their main frame is the session's
	browsers  map[*chromedp.Browser]context.CancelFunc // the event listeners
	listeners []context.CancelFunc                     // the tabs' listeners
	byGUID    map[string]*download
	list      []*download // the session's, newest last
	dropped   int
	seq       int
	aborts    int           // document loads of the session's tabs the browser aborted (a download does that)
	changed   chan struct{} // closed at every change
	ended     bool

	// The session's bounds (Config.MaxTotal, MaxFiles, PerMinute).
	started    int         // downloads admitted
	starts     []time.Time // when, within the last minute
	savedBytes int64
	saved      []savedFile // the files saved, removed at End unless Config.Keep
	// cutoff says why the session's downloads are cut off ("" while they
	// are not); told: a call's result said so.
	cutoff     string
	told       bool
	browserCtx map[cdp.BrowserContextID]context.Context // a context of each browser context's browser
	// frames are the frames inside the session's tabs (not their main
	// frames), by the tabs' own frame events: a download one starts is the
	// tab's as it begins, with no question to the browser.
	frames map[cdp.FrameID]target.ID
	forget []cdp.FrameID // frames removed, forgotten a while later
	// popups are the pages the session's tabs opened (and theirs), by the
	// tab that opened the first of them.
	popups map[target.ID]target.ID
	// staged are the browser contexts told to save in the staging
	// directory: a download found there is cancelled in them.
	staged []cdp.BrowserContextID
	// watching: the watch of the files going runs.
	watching bool
}

func (d *Tracker) init() {
	if d.contexts == nil {
		d.contexts = map[cdp.BrowserContextID]string{}
		d.tabs = map[target.ID]cdp.BrowserContextID{}
		d.browsers = map[*chromedp.Browser]context.CancelFunc{}
		d.byGUID = map[string]*download{}
		d.browserCtx = map[cdp.BrowserContextID]context.Context{}
		d.frames = map[cdp.FrameID]target.ID{}
		d.popups = map[target.ID]target.ID{}
		d.changed = make(chan struct{})
	}
}

// notify wakes the waiters. Called with d.mu held.
func (d *Tracker) notify() {
	close(d.changed)
	d.changed = make(chan struct{})
}

// End stops the listeners and removes the staging directory (parts of
// downloads that never finished), and the files the session saved unless
// Config.Keep.
func (d *Tracker) End() {
	d.stopBrowser()
	d.mu.Lock()
	d.ended = true
	for b, cancel := range d.browsers {
		cancel()
		delete(d.browsers, b)
	}
	for _, cancel := range d.listeners {
		cancel()
	}
	d.listeners = nil
	staging := d.staging
	var saved []savedFile
	if !d.cfg.Keep {
		saved, d.saved = d.saved, nil
	}
	d.mu.Unlock()
	if staging != "" {
		_ = os.RemoveAll(staging)
	}
	for _, f := range saved {
		f.remove()
	}
}

// stopBrowser tells the session's browser contexts to deny downloads and
// cancels the downloads still going, before End removes the staging
// directory: the browser writing on would make it again.
func (d *Tracker) stopBrowser() {
	d.mu.Lock()
	if d.ended || d.staging == "" {
		d.mu.Unlock()
		return
	}
	type stop struct {
		ctx  context.Context
		bc   cdp.BrowserContextID
		guid string // "": the context's downloads are denied
	}
	var stops []stop
	for _, bc := range d.staged {
		if ctx := d.browserCtx[bc]; ctx != nil {
			stops = append(stops, stop{ctx: ctx, bc: bc})
		}
	}
	for _, x := range d.byGUID {
		if x.bctx == nil || !(x.state == dlGoing || x.cancelling) {
			continue
		}
		for _, bc := range d.contextsOf(x) {
			stops = append(stops, stop{ctx: x.bctx, bc: bc, guid: x.guid})
		}
	}
	d.mu.Unlock()
	// Bounded together: a browser that does not answer ends the session
	// no later.
	deadline := time.Now().Add(3 * time.Second)
	for _, st := range stops {
		ctx, cancel := context.WithDeadline(st.ctx, deadline)
		if st.guid == "" {
			denyIn(ctx, st.bc)
		} else {
			cancelIn(ctx, st.guid, st.bc)
		}
		cancel()
	}
}

// Sweep removes the staging directory again, once the session's browser
// contexts are gone: a file the browser was writing as End ran may have
// made it again.
func (d *Tracker) Sweep() {
	d.mu.Lock()
	staging := d.staging
	d.mu.Unlock()
	if staging != "" {
		_ = os.RemoveAll(staging)
	}
}

// savedFile is a file the session saved, as it was saved.
type savedFile struct {
	path string
	fi   os.FileInfo
}

// remove removes the file if it is still the one saved: one moved away
// and replaced (by another session, under the same name) stays.
func (f savedFile) remove() {
	if fi, err := os.Lstat(f.path); err == nil && os.SameFile(fi, f.fi) {
		_ = os.Remove(f.path)
	}
}

// Mark is where a call's downloads start: the newest download and
// aborted load before it.
type Mark struct{ seq, aborts int }

// Mark is taken before a call's body runs; Settle reports what came after it.
func (d *Tracker) Mark() Mark {
	d.mu.Lock()
	defer d.mu.Unlock()
	return Mark{d.seq, d.aborts}
}

// own makes a download the session's, keeps it in the bounded list, and
// counts it against the session's bounds. Called with d.mu held.
func (d *Tracker) own(x *download) {
	if x.mine {
		return
	}
	x.mine = true
	if len(d.list) >= maxDownloadsKept {
		d.list = append(d.list[:0], d.list[1:]...)
		d.dropped++
	}
	d.list = append(d.list, x)
	d.admit(x)
}

// admit counts a download of the session's against its bounds: past the
// number of files or the rate, the session's downloads are cut off, this
// one with them. Called with d.mu held.
func (d *Tracker) admit(x *download) {
	if x.admitted || x.state != dlGoing {
		return
	}
	x.admitted = true
	if d.cutoff != "" {
		d.refuse(x, d.cutoff)
		return
	}
	d.started++
	now := time.Now()
	keep := d.starts[:0]
	for _, t := range d.starts {
		if now.Sub(t) < time.Minute {
			keep = append(keep, t)
		}
	}
	d.starts = append(keep, now)
	switch {
	case d.cfg.MaxFiles > 0 && d.started > d.cfg.MaxFiles:
		d.cutOff(fmt.Sprintf("the page started more than the %d downloads a session may make", d.cfg.MaxFiles))
	case d.cfg.PerMinute > 0 && len(d.starts) > d.cfg.PerMinute:
		d.cutOff(fmt.Sprintf("the page started %d downloads within a minute, more than the %d a session may", len(d.starts), d.cfg.PerMinute))
	default:
		return
	}
	d.refuse(x, d.cutoff)
}

// overTotal cuts the session's downloads off when the bytes of its
// downloads together pass Config.MaxTotal. Called with d.mu held.
func (d *Tracker) overTotal() bool {
	if d.cfg.MaxTotal <= 0 || d.cutoff != "" {
		return false
	}
	n := d.savedBytes
	for _, x := range d.list {
		if x.state == dlGoing {
			n += max(x.received, x.total)
		}
	}
	if n <= d.cfg.MaxTotal {
		return false
	}
	d.cutOffTotal()
	return true
}

// cutOffTotal cuts the session's downloads off for passing
// Config.MaxTotal. Called with d.mu held.
func (d *Tracker) cutOffTotal() {
	d.cutOff(fmt.Sprintf("the session's downloads passed the %s they may take together", modeltext.Size(d.cfg.MaxTotal)))
}

// denyIn tells the browser to deny the downloads of browser context bc,
// and cancelIn to cancel the download guid in it. Best effort: the
// session's bounds hold by its own record whatever the browser answers.
func denyIn(ctx context.Context, bc cdp.BrowserContextID) {
	_, _ = chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorDeny, BrowserContextID: bc, EventsEnabled: new(true)})
}

func cancelIn(ctx context.Context, guid string, bc cdp.BrowserContextID) {
	_, _ = chromedp.CallBrowser(ctx, browser.CancelDownload, browser.CancelDownloadParams{GUID: guid, BrowserContextID: bc})
}

// cutOff refuses every download of the session from now on, why: its
// browser contexts are told to deny downloads, and the downloads still
// going are cancelled. The next call's result says so. Called with d.mu
// held.
func (d *Tracker) cutOff(why string) {
	d.cutoff = "downloads are cut off for this session: " + why + "; the browser refuses every further download of the session"
	for bc, deny := range d.contexts {
		if deny != "" {
			continue
		}
		d.contexts[bc] = d.cutoff
		if ctx := d.browserCtx[bc]; ctx != nil && !d.ended {
			d.cfg.Go(func() {
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				denyIn(cctx, bc)
			})
		}
	}
	for _, x := range d.list {
		if x.state == dlGoing && !x.finishing {
			d.refuse(x, d.cutoff)
		}
	}
}

// refuse ends a download of the session's that is going: refused, why,
// and cancelled in the browser. Called with d.mu held.
func (d *Tracker) refuse(x *download, why string) {
	x.state, x.why = dlRefused, why
	if x.cancelling || x.finishing || x.bctx == nil || d.ended {
		return
	}
	x.cancelling = true
	d.cancel(x)
}

// cancel asks the browser to cancel x, in its browser context, or, for a
// download the session's staging directory told of, in each context that
// saves there. Called with d.mu held.
func (d *Tracker) cancel(x *download) {
	ctx, bcs := x.bctx, d.contextsOf(x)
	if ctx == nil {
		return
	}
	d.cfg.Go(func() {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		for _, bc := range bcs {
			cancelIn(cctx, x.guid, bc)
		}
	})
}

// contextsOf is the browser contexts x may be in. Called with d.mu held.
func (d *Tracker) contextsOf(x *download) []cdp.BrowserContextID {
	if x.bc != "" || len(d.staged) == 0 {
		return []cdp.BrowserContextID{x.bc}
	}
	return append([]cdp.BrowserContextID(nil), d.staged...)
}

// Watch sets up the tab of ctx the first time a call runs in it: the
// download behavior of its browser context (deny says why its downloads
// are denied there, "" to save them in Config.Dir), the listener of its
// browser's download events, and the tab's listener of aborted loads.
func (d *Tracker) Watch(ctx context.Context, tab target.ID, deny string) error {
	d.mu.Lock()
	d.init()
	_, seen := d.tabs[tab]
	ended := d.ended
	d.mu.Unlock()
	if seen || ended {
		return nil
	}
	ti, err := chromedp.CallBrowser(ctx, target.GetTargetInfo, target.GetTargetInfoParams{TargetID: tab})
	if err != nil {
		return fmt.Errorf("reading the tab's browser context: %w", err)
	}
	var bc cdp.BrowserContextID
	if ti.TargetInfo != nil {
		bc = ti.TargetInfo.BrowserContextID
	}
	d.mu.Lock()
	_, set := d.contexts[bc]
	d.mu.Unlock()
	if !set {
		why := deny
		d.mu.Lock()
		if why == "" && d.cutoff != "" {
			why = d.cutoff
		}
		d.mu.Unlock()
		p := browser.SetDownloadBehaviorParams{Behavior: browser.SetDownloadBehaviorBehaviorDeny, BrowserContextID: bc, EventsEnabled: new(true)}
		if why == "" {
			dir, err := d.stagingDir(d.cfg.Dir)
			if err != nil {
				why = "downloads are off: the download directory cannot be used (" + err.Error() + ")"
			} else {
				p.Behavior, p.DownloadPath = browser.SetDownloadBehaviorBehaviorAllowAndName, dir
			}
		}
		if why != "" {
			p.Behavior = browser.SetDownloadBehaviorBehaviorDeny
		}
		if _, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, p); err != nil {
			return fmt.Errorf("setting the browser's download behavior: %w", err)
		}
		d.mu.Lock()
		d.contexts[bc] = why
		d.browserCtx[bc] = context.WithoutCancel(ctx)
		if why == "" {
			d.staged = append(d.staged, bc)
		}
		d.mu.Unlock()
	}
	if err := d.listenDownloads(ctx); err != nil {
		return err
	}
	if err := d.listenTab(ctx, tab); err != nil {
		return err
	}
	d.mu.Lock()
	d.tabs[tab] = bc
	d.mu.Unlock()
	// The frames the tab has already; those it attaches later come by
	// its events.
	if frames, err := tabFrames(ctx); err == nil {
		d.mu.Lock()
		for f := range frames {
			d.addFrame(f, tab)
		}
		d.mu.Unlock()
	}
	return nil
}

// maxFrames bounds the frames (and popups) remembered; past it half are
// forgotten (their downloads are found by the call's or the file's check,
// as a frame never seen).
const maxFrames = 4096

// addFrame records a frame of tab. Called with d.mu held.
func (d *Tracker) addFrame(f cdp.FrameID, tab target.ID) {
	if target.ID(f) == tab {
		return
	}
	if len(d.frames) >= maxFrames {
		for k := range d.frames {
			delete(d.frames, k)
			if len(d.frames) < maxFrames/2 {
				break
			}
		}
	}
	d.frames[f] = tab
}

// stagingDir makes the session's staging directory inside dir.
func (d *Tracker) stagingDir(dir string) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.staging != "" {
		return d.staging, nil
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", dir)
	}
	st, err := os.MkdirTemp(dir, ".hybroute-partial-")
	if err != nil {
		return "", err
	}
	d.staging = st
	return st, nil
}

// listenDownloads starts the listener of the browser's download events
// once per browser. The events of every browser context of that browser
// come to it; a download is the session's when its frame is a tab of the
// session's, or when the browser saved it in the session's staging
// directory.
func (d *Tracker) listenDownloads(ctx context.Context) error {
	cc := chromedp.FromContext(ctx)
	if cc == nil || cc.Browser == nil {
		return errors.New("no browser in the call's context")
	}
	d.mu.Lock()
	if _, ok := d.browsers[cc.Browser]; ok || d.ended {
		d.mu.Unlock()
		return nil
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d.browsers[cc.Browser] = cancel
	d.mu.Unlock()
	err := chromedp.ListenBrowser(lctx, func(ev any) {
		switch ev := ev.(type) {
		case *browser.EventDownloadWillBegin:
			d.begins(lctx, ev)
		case *browser.EventDownloadProgress:
			d.progress(lctx, ev)
		}
	})
	if err != nil {
		cancel()
		d.mu.Lock()
		delete(d.browsers, cc.Browser)
		d.mu.Unlock()
	}
	return err
}

// listenTab follows the tab's frames, and counts its document loads that
// the browser aborted: a response that becomes a download ends its
// navigation so, and the browser reports the download on its own session,
// maybe after the tab has answered the action. A call that saw one waits
// for it, within downloadStartWait: on a loaded machine the report took
// over 2 s.
func (d *Tracker) listenTab(ctx context.Context, tab target.ID) error {
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	err := chromedp.Listen(lctx, func(ev any) {
		switch ev := ev.(type) {
		case *network.EventLoadingFailed:
			if ev.Type == network.ResourceTypeDocument && strings.Contains(ev.ErrorText, "ERR_ABORTED") {
				d.mu.Lock()
				d.aborts++
				d.mu.Unlock()
			}
		case *page.EventFrameAttached:
			d.mu.Lock()
			d.addFrame(ev.FrameID, tab)
			d.mu.Unlock()
		case *target.EventTargetCreated:
			// A page one of the session's pages opened (a popup) is the
			// session's: its downloads are counted as they begin.
			ti := ev.TargetInfo
			if ti == nil || ti.Type != "page" || ti.OpenerID == "" {
				return
			}
			d.mu.Lock()
			if len(d.popups) >= maxFrames {
				// Bounded: a popup past it is found as a frame never seen.
				clear(d.popups)
			}
			if opener, ok := d.popups[ti.OpenerID]; ok {
				d.popups[ti.TargetID] = opener
			} else if _, ok := d.tabs[ti.OpenerID]; ok {
				d.popups[ti.TargetID] = ti.OpenerID
			}
			d.mu.Unlock()
		case *page.EventFrameDetached:
			// Kept while the frame's download may yet be reported: a
			// page that removes the frame at once still started it.
			if ev.Reason == page.FrameDetachedReasonRemove {
				d.mu.Lock()
				d.forget = append(d.forget, ev.FrameID)
				if len(d.forget) > maxFrames/4 {
					for _, f := range d.forget[:len(d.forget)/2] {
						delete(d.frames, f)
					}
					d.forget = append(d.forget[:0], d.forget[len(d.forget)/2:]...)
				}
				d.mu.Unlock()
			}
		}
	})
	if err != nil {
		cancel()
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ended {
		cancel()
		return nil
	}
	d.listeners = append(d.listeners, cancel)
	return nil
}

// begins runs on the browser's reader: it only records.
func (d *Tracker) begins(ctx context.Context, ev *browser.EventDownloadWillBegin) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.byGUID) >= maxPendingGUIDs {
		// Forget the downloads that are over first, then any.
		for g, x := range d.byGUID {
			if x.state != dlGoing || len(d.byGUID) >= maxPendingGUIDs {
				delete(d.byGUID, g)
			}
			if len(d.byGUID) < maxPendingGUIDs/2 {
				break
			}
		}
	}
	d.seq++
	x := &download{guid: ev.GUID, url: ev.URL, suggested: ev.SuggestedFilename, frame: ev.FrameID, seq: d.seq, state: dlGoing, bctx: ctx, began: time.Now()}
	// A tab's main frame, a frame inside a tab, a popup a tab opened.
	tab := target.ID(ev.FrameID)
	_, ok := d.tabs[tab]
	if !ok {
		tab, ok = d.frames[ev.FrameID]
	}
	if !ok {
		tab, ok = d.popups[target.ID(ev.FrameID)]
	}
	if ok {
		d.claimIn(tab, x)
	}
	d.byGUID[ev.GUID] = x
	d.startWatch()
	d.notify()
}

// progress runs on the browser's reader: it records, and hands
// what needs the browser or the disk to goroutines of their own.
func (d *Tracker) progress(ctx context.Context, ev *browser.EventDownloadProgress) {
	d.mu.Lock()
	defer d.mu.Unlock()
	x := d.byGUID[ev.GUID]
	if x == nil {
		return
	}
	x.received, x.total = int64(ev.ReceivedBytes), int64(ev.TotalBytes)
	switch ev.State {
	case browser.DownloadProgressStateCompleted:
		staged := d.staging != "" && ev.FilePath != "" && filepath.Dir(ev.FilePath) == d.staging
		if staged {
			d.own(x)
		}
		if staged && x.state == dlGoing && d.overTotal() {
			d.refuse(x, d.cutoff)
		}
		if staged && x.state != dlGoing && !x.finishing {
			// Refused while the browser wrote it: the file goes.
			tmp := ev.FilePath
			d.cfg.Go(func() { _ = os.Remove(tmp) })
		}
		if !x.mine || x.state != dlGoing {
			break
		}
		x.tmp, x.finishing = ev.FilePath, true
		d.cfg.Go(func() { d.finish(x) })
	case browser.DownloadProgressStateCanceled:
		if x.state == dlGoing {
			x.state = dlFailed
			x.why = "the download was cancelled"
			if why, ok := d.contexts[x.bc]; ok && why != "" {
				x.state, x.why = dlRefused, why
			}
		}
	default:
		if !x.mine && x.state == dlGoing && d.inStaging(x) {
			// Begun by a frame the session's tabs never told of (a frame
			// inside a popup, a frame of another site's process): the
			// browser writes it in the session's staging directory, so it
			// is the session's and counts against its bounds.
			d.own(x)
		}
		d.check(x)
		d.startWatch()
	}
	d.notify()
}

// startWatch starts the watch of the downloads going unless it runs.
// The browser reports progress about twice a second; the watch reads the
// files between reports, so a fast link goes little past a bound. Called
// with d.mu held.
func (d *Tracker) startWatch() {
	if d.watching || d.ended || d.staging == "" {
		return
	}
	d.watching = true
	d.cfg.Go(d.watch)
}

// check holds x, a download going, to the file's and the session's
// bounds. Called with d.mu held.
func (d *Tracker) check(x *download) {
	if x.mine && !x.cancelling && x.state == dlGoing && d.overTotal() {
		d.refuse(x, d.cutoff)
	}
	if x.mine && !x.cancelling && x.state == dlGoing && (x.received > d.cfg.MaxBytes || x.total > d.cfg.MaxBytes) {
		x.cancelling = true
		x.state, x.why = dlTooBig, fmt.Sprintf("it is larger than the %s a download may be, so it was cancelled", modeltext.Size(d.cfg.MaxBytes))
		d.cancel(x)
	}
}

// watchEvery is how often the watch reads the files of the session's
// downloads going.
const watchEvery = 50 * time.Millisecond

// watchUnclaimed is how long the watch looks in the staging directory for
// a download no tab of the session's told of: the browser makes its file
// as the download begins.
const watchUnclaimed = 5 * time.Second

// watch reads, while the browser has downloads going, how much it wrote
// of each in the session's staging directory, and holds them to the
// bounds by it; one found there that no tab of the session's told of is
// the session's.
func (d *Tracker) watch() {
	tick := time.NewTicker(watchEvery)
	defer tick.Stop()
	for range tick.C {
		d.mu.Lock()
		going := false
		if !d.ended {
			for _, x := range d.byGUID {
				if x.state != dlGoing || x.cancelling || x.finishing {
					continue
				}
				if !x.mine && time.Since(x.began) > watchUnclaimed {
					// Another session's, most likely: its progress
					// reports still look for it in the staging directory.
					continue
				}
				going = true
				if !x.mine && !d.inStaging(x) {
					continue
				}
				d.own(x)
				x.received = max(x.received, d.stagedSize(x))
				d.check(x)
			}
		}
		if !going {
			d.watching = false
			d.mu.Unlock()
			return
		}
		d.mu.Unlock()
	}
}

// stagingLook bounds how often the staging directory is looked at for a
// download's file.
const stagingLook = 100 * time.Millisecond

// inStaging reports whether the browser writes x in the session's
// staging directory (allowAndName names the file by the download's GUID).
// Called with d.mu held.
func (d *Tracker) inStaging(x *download) bool {
	if d.staging == "" || time.Since(x.looked) < stagingLook {
		return false
	}
	x.looked = time.Now()
	return d.stagedSize(x) >= 0
}

// stagedSize is the size of x's file in the staging directory, -1 when
// it has none: the browser writes it as GUID.crdownload, then renames it
// GUID. Called with d.mu held.
func (d *Tracker) stagedSize(x *download) int64 {
	if d.staging == "" {
		return -1
	}
	for _, name := range []string{x.guid + ".crdownload", x.guid} {
		if fi, err := os.Lstat(filepath.Join(d.staging, name)); err == nil {
			return fi.Size()
		}
	}
	return -1
}

// finish moves a completed file from the staging directory into
// the download directory under its cleaned suggested name.
func (d *Tracker) finish(x *download) {
	path, mimeType, n, err := d.saveFile(x.tmp, x.suggested, x.url)
	d.mu.Lock()
	defer d.mu.Unlock()
	x.finishing = false
	switch {
	case errors.Is(err, errTooBig):
		x.state, x.why = dlTooBig, fmt.Sprintf("it is larger than the %s a download may be, so it was removed", modeltext.Size(d.cfg.MaxBytes))
	case err != nil:
		x.state, x.why = dlFailed, "saving it failed: "+err.Error()
	case d.ended && !d.cfg.Keep:
		// The session ended while the file was moved: it goes with the
		// session's other files.
		_ = os.Remove(path)
		x.state, x.why = dlFailed, "the session ended"
	case d.cfg.MaxTotal > 0 && d.savedBytes+n > d.cfg.MaxTotal:
		_ = os.Remove(path)
		if d.cutoff == "" {
			d.cutOffTotal()
		}
		x.state, x.why = dlRefused, d.cutoff
	default:
		x.state, x.path, x.mime, x.size = dlSaved, path, mimeType, n
		d.savedBytes += n
		if fi, err := os.Lstat(path); err == nil {
			d.saved = append(d.saved, savedFile{path, fi})
		}
	}
	d.notify()
}

var errTooBig = errors.New("the file is too big")

// saveFile moves the browser's file tmp into the download directory as
// a cleaned form of name, and returns where, its type and size. The
// browser's file must be a regular file (not a link out of the
// directory) and no larger than the bound.
func (d *Tracker) saveFile(tmp, name, rawURL string) (string, string, int64, error) {
	fi, err := os.Lstat(tmp)
	if err != nil {
		return "", "", 0, err
	}
	if !fi.Mode().IsRegular() {
		_ = os.Remove(tmp)
		return "", "", 0, errors.New("the browser's file is not a regular file")
	}
	if fi.Size() > d.cfg.MaxBytes {
		_ = os.Remove(tmp)
		return "", "", 0, errTooBig
	}
	dst, err := Reserve(d.cfg.Dir, CleanName(name, rawURL))
	if err != nil {
		_ = os.Remove(tmp)
		return "", "", 0, err
	}
	if err := os.Rename(tmp, dst); err != nil {
		_ = os.Remove(dst)
		_ = os.Remove(tmp)
		return "", "", 0, err
	}
	return dst, fileType(dst), fi.Size(), nil
}

// Reserve creates an empty file for name in dir, never over one that is
// there (a file, or a link another may have put there): name, then
// "name (2).ext" and so on. The name has no separator, so the file is in
// dir.
func Reserve(dir, name string) (string, error) {
	ext := filepath.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	for i := 1; i <= 1000; i++ {
		n := name
		if i > 1 {
			n = fmt.Sprintf("%s (%d)%s", stem, i, ext)
		}
		p := filepath.Join(dir, n)
		if filepath.Dir(p) != filepath.Clean(dir) {
			return "", fmt.Errorf("the name %q leaves the directory", n)
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		return p, f.Close()
	}
	return "", fmt.Errorf("too many files named like %q", name)
}

// CleanName makes the name a page suggested safe to create: one path
// element, no control characters, no characters file systems refuse, not
// hidden, bounded. Without one, the URL's last segment, or "download".
func CleanName(name, rawURL string) string {
	if strings.TrimSpace(name) == "" {
		if i := strings.LastIndexAny(strings.SplitN(strings.SplitN(rawURL, "?", 2)[0], "#", 2)[0], "/"); i >= 0 {
			name = rawURL[i+1:]
			name = strings.SplitN(strings.SplitN(name, "?", 2)[0], "#", 2)[0]
		}
	}
	name = strings.Map(func(r rune) rune {
		switch {
		case r == '/' || r == '\\' || r == ':' || r == '*' || r == '?' || r == '"' || r == '<' || r == '>' || r == '|':
			return '_'
		case unicode.IsControl(r) || r == utf8.RuneError || unicode.Is(unicode.Cf, r):
			return -1
		}
		return r
	}, name)
	name = strings.TrimLeft(strings.TrimSpace(name), ". ")
	name = strings.TrimRight(name, ". ")
	if len(name) > maxFileName {
		ext := filepath.Ext(name)
		if len(ext) > 20 {
			ext = ""
		}
		stem := name[:maxFileName-len(ext)]
		for !utf8.ValidString(stem) {
			stem = stem[:len(stem)-1]
		}
		name = stem + ext
	}
	if name == "" {
		name = "download"
	}
	return name
}

// fileType is a saved file's type: by its extension, else by its first
// bytes.
func fileType(path string) string {
	if t := mime.TypeByExtension(filepath.Ext(path)); t != "" {
		return t
	}
	f, err := os.Open(path)
	if err != nil {
		return "application/octet-stream"
	}
	defer f.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	return http.DetectContentType(head[:n])
}

// Outcome is what a call's downloads add to its result.
type Outcome struct {
	// Report lists the downloads the call started, for the model; "" for
	// none.
	Report string
	// Nav: a navigation of the call turned into a download, so the page
	// stayed where it was.
	Nav bool
}

// Settle runs after a call's body ran in tab, with the body's error. A
// navigation the browser aborted because its response was a download is
// no failure: it waits a moment for that download's report. Then it
// waits, within a bound, for the downloads that began during the call to
// end, and reports them. Its error is the body's, unless a download
// explains it.
func (d *Tracker) Settle(ctx context.Context, tab target.ID, m Mark, runErr error) (Outcome, error) {
	if runErr != nil && !aborted(runErr) {
		return Outcome{}, runErr
	}
	var out Outcome
	d.mu.Lock()
	abortedLoad := d.aborts > m.aborts
	d.mu.Unlock()
	if runErr != nil || abortedLoad {
		began := d.waitFor(ctx, downloadStartWait, func() bool {
			d.mu.Lock()
			defer d.mu.Unlock()
			return d.seq > m.seq
		})
		if !began && runErr != nil {
			return Outcome{}, runErr
		}
		out.Nav = began
	}
	mark := m.seq
	d.mu.Lock()
	pending := false
	for _, x := range d.byGUID {
		if x.seq > mark && !x.mine {
			pending = true
		}
	}
	d.mu.Unlock()
	if pending {
		// A download of a frame inside the tab: ask the tab for its frames.
		if frames, err := tabFrames(ctx); err == nil {
			d.mu.Lock()
			for _, x := range d.byGUID {
				if x.seq > mark && frames[x.frame] {
					d.claimIn(tab, x)
				}
			}
			d.mu.Unlock()
		}
	}
	wait := downloadWaitMax
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl)-time.Second)
	}
	d.waitFor(ctx, wait, func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, x := range d.list {
			if x.seq > mark && (x.state == dlGoing || x.finishing) {
				return false
			}
		}
		return true
	})
	out.Report = d.report(d.since(mark))
	d.mu.Lock()
	if d.cutoff != "" && !d.told {
		// Once, in the first result after it: the page may have sprayed
		// between calls, with no call of its own to report it.
		d.told = true
		out.Report = strings.TrimSpace("Refused: " + d.cutoff + " (browser_downloads lists what was saved before).\n" + out.Report)
	}
	d.mu.Unlock()
	return out, nil
}

// tabFrames is every frame of the tab of ctx.
func tabFrames(ctx context.Context) (map[cdp.FrameID]bool, error) {
	ft, err := chromedp.Call(ctx, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		return nil, err
	}
	frames := map[cdp.FrameID]bool{}
	var walk func(*page.FrameTree)
	walk = func(n *page.FrameTree) {
		if n == nil {
			return
		}
		if n.Frame != nil {
			frames[n.Frame.ID] = true
		}
		for _, ch := range n.ChildFrames {
			walk(ch)
		}
	}
	walk(ft.FrameTree)
	return frames, nil
}

// claimIn makes x, a download of tab or of a frame or popup of it, the
// session's.
// Called with d.mu held.
func (d *Tracker) claimIn(tab target.ID, x *download) {
	if x.mine {
		return
	}
	bc := d.tabs[tab]
	x.bc = bc
	if why := d.contexts[bc]; why != "" && x.state == dlGoing {
		x.state, x.why = dlRefused, why
	}
	d.own(x)
}

// since is the session's downloads after mark. It takes d.mu.
func (d *Tracker) since(mark int) []*download {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []*download
	for _, x := range d.list {
		if x.seq > mark {
			out = append(out, x)
		}
	}
	return out
}

// waitFor waits until ok, at most limit.
func (d *Tracker) waitFor(ctx context.Context, limit time.Duration, ok func() bool) bool {
	if limit <= 0 {
		return ok()
	}
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		d.mu.Lock()
		ch := d.changed
		d.mu.Unlock()
		if ok() {
			return true
		}
		select {
		case <-ch:
		case <-timer.C:
			return ok()
		case <-ctx.Done():
			return ok()
		}
	}
}

// aborted reports a navigation the browser gave up (net::ERR_ABORTED),
// which is what a response turned into a download does to it.
func aborted(err error) bool {
	var le *chromedp.LoadError
	return errors.As(err, &le) && strings.Contains(le.ErrorText, "ERR_ABORTED") ||
		err != nil && strings.Contains(err.Error(), "net::ERR_ABORTED")
}

// report renders downloads for the model.
func (d *Tracker) report(xs []*download) string {
	if len(xs) == 0 {
		return ""
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var b strings.Builder
	b.WriteString("The page started downloads:")
	for _, x := range xs {
		b.WriteString("\n- ")
		b.WriteString(downloadLine(x))
	}
	return b.String()
}

// downloadLine is one download as the model reads it. Called with the
// state's lock held.
func downloadLine(x *download) string {
	name := modeltext.Quote(x.suggested, 150)
	from := " from " + modeltext.URL(x.url)
	switch x.state {
	case dlSaved:
		return fmt.Sprintf("saved %s (%s, %s) as %s%s", modeltext.Quote(filepath.Base(x.path), 150), modeltext.Size(x.size), x.mime, x.path, from)
	case dlGoing:
		if x.finishing {
			return fmt.Sprintf("%s: being saved%s", name, from)
		}
		got := modeltext.Size(x.received)
		if x.total > 0 {
			got += " of " + modeltext.Size(x.total)
		}
		return fmt.Sprintf("%s: still downloading (%s)%s; browser_downloads reports it when it is done", name, got, from)
	}
	return fmt.Sprintf("%s %s%s: %s", name, x.state, from, x.why)
}

// Listing is every download of the session kept, as browser_downloads
// shows them, under where they are saved.
func (d *Tracker) Listing() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var b strings.Builder
	if d.cfg.Dir == "" {
		b.WriteString("Downloads are off: the operator set no download directory, so the browser refuses files.\n")
	} else {
		b.WriteString("Downloads are saved in " + d.cfg.Dir + " (from the local browser only).\n")
	}
	if d.cutoff != "" {
		b.WriteString("Refused: " + d.cutoff + ".\n")
	}
	if len(d.list) == 0 {
		b.WriteString("No downloads in this session.")
		return b.String()
	}
	if d.dropped > 0 {
		fmt.Fprintf(&b, "(%d older downloads are not listed)\n", d.dropped)
	}
	for _, x := range d.list {
		b.WriteString("- ")
		b.WriteString(downloadLine(x))
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}
