package agent

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute/agent/internal/modeltext"
	"github.com/hybroute/hybroute/agent/internal/record"
	"github.com/hybroute/hybroute/internal/screencast"
)

// The record of each session ([WithRecording]): the frames of its tabs,
// filmed through the tab's screencast while the session lives, and the
// timeline of its tool calls as they left Call, written as one replay file
// when the session ends (agent/internal/record has the format and the
// bounds).

// WithRecording makes the toolset keep a record of each session and write
// it into dir when the session ends (browser_close, [Toolset.Release],
// [Toolset.Close]): one self-contained HTML file a browser opens, with the
// page's frames (at most 2 a second, 600 frames, 16 MiB of JPEG; the
// oldest thinned out first) and the timeline of the tool calls, their
// arguments and results redacted as the results are, and a player; a WebM
// of the frames beside it when ffmpeg is installed; and the provider's
// own replay URL when its cloud session had one. The files are the
// owner's only (0600). "" records nothing (the default).
func WithRecording(dir string) Option {
	return func(c *config) { c.recordDir = dir }
}

// The screencast a record films with: smaller and coarser than a live
// view's, as it is kept.
const (
	recordQuality   = 60
	recordMaxWidth  = 1024
	recordMaxHeight = 768
	// replayTimeout bounds the question for the provider's replay URL.
	replayTimeout = 10 * time.Second
)

// sessionRecord is a session's record and the screencasts that film it.
type sessionRecord struct {
	*record.Recorder

	mu     sync.Mutex
	casts  map[target.ID]*screencast.Cast
	hidden map[target.ID]bool // tabs no frame is taken of (hideFromRecord)
	ended  bool
	// secret: the call that runs types a secret (set by Call, which holds
	// the session's turn, read by the call's hook).
	secret bool
}

// hideFromRecord stops the record's filming of tab for good, so that no
// frame of the record shows a secret typed there (a text field shows what
// it holds). It is a no-op on a session without a record.
func (s *session) hideFromRecord(tab target.ID) {
	r := s.rec
	if r == nil {
		return
	}
	r.mu.Lock()
	r.hidden[tab] = true
	c := r.casts[tab]
	delete(r.casts, tab)
	r.mu.Unlock()
	if c != nil {
		c.Stop()
	}
}

// shows reports whether the record takes frames of tab.
func (r *sessionRecord) shows(tab target.ID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.hidden[tab] && !r.ended
}

// newRecord is a new session's record; nil when the toolset records none.
func (t *Toolset) newRecord() *sessionRecord {
	if t.cfg.recordDir == "" {
		return nil
	}
	return &sessionRecord{Recorder: record.New(t.cfg.recordDir), casts: map[target.ID]*screencast.Cast{}, hidden: map[target.ID]bool{}}
}

// film starts filming the tab of ctx, unless it is filmed already. The
// screencast outlives the call (it keeps the tab's values, not the call's
// end) and stops with the session (stopFilming) or the tab.
func (r *sessionRecord) film(ctx context.Context, id target.ID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended || r.hidden[id] {
		return nil
	}
	if c := r.casts[id]; c != nil {
		select {
		case <-c.Done():
		default:
			return nil
		}
	}
	c, err := screencast.Start(context.WithoutCancel(ctx), screencast.Options{
		Interval: record.FrameInterval, Quality: recordQuality, MaxWidth: recordMaxWidth, MaxHeight: recordMaxHeight,
	}, func(f screencast.Frame) {
		if r.shows(id) {
			r.AddFrame(record.Frame{At: f.At, JPEG: f.JPEG})
		}
	})
	if err != nil {
		return err
	}
	r.casts[id] = c
	return nil
}

// stopFilming stops the session's screencasts, for good.
func (r *sessionRecord) stopFilming() {
	r.mu.Lock()
	r.ended = true
	casts := r.casts
	r.casts = nil
	r.mu.Unlock()
	for _, c := range casts {
		c.Stop()
	}
}

// recordHook films every CDP tab a call of the session runs in, and
// takes the page as the call leaves it: the screencast hands a frame on
// only after FrameInterval, so the last picture of a session that ends
// sooner would be lost.
type recordHook struct{}

func (recordHook) before(ctx context.Context, s *session, c *call) (func(error) error, error) {
	if s.rec == nil {
		return nil, nil
	}
	if s.rec.secret {
		s.hideFromRecord(c.target)
	}
	after := func(err error) error {
		if s.rec.shows(c.target) {
			s.rec.snap(ctx)
		}
		return err
	}
	return after, s.rec.film(ctx, c.target)
}

// snapTimeout bounds the picture a call ends with: it is the record's,
// and best effort.
const snapTimeout = 2 * time.Second

// snap keeps the tab of ctx as it is now, as a frame.
func (r *sessionRecord) snap(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, snapTimeout)
	defer cancel()
	q := int64(recordQuality)
	shot, err := chromedp.Call(ctx, page.CaptureScreenshot, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatJpeg, Quality: &q, OptimizeForSpeed: new(true)})
	if err == nil {
		r.AddFrame(record.Frame{At: time.Now(), JPEG: shot.Data})
	}
}

func (recordHook) watches() string { return "screencast, for the session's record" }

// recordText is a text as the record keeps it: redacted as the results
// are (the URLs' credentials, and whatever else the results' redaction
// takes out).
func (t *Toolset) recordText(s string) string { return t.cfg.secrets.Scrub(modeltext.PageText(s)) }

// recordCall puts a call on its session's timeline as the call left Call:
// res is read once Call has returned.
func (t *Toolset) recordCall(s *session, name string, args json.RawMessage, start time.Time, res *Result) {
	// res left Call scrubbed of the secrets (Toolset.scrub); its
	// arguments did not go through it.
	e := record.Entry{Start: start, End: time.Now(), Tool: name, Args: t.recordText(string(args)),
		Result: modeltext.PageText(res.Text), IsError: res.IsError, Images: len(res.Images)}
	if len(args) == 0 {
		e.Args = "{}"
	}
	if res.Where.Ran {
		e.Route, e.URL, e.Title = res.Where.Route.String(), modeltext.PageText(res.Where.URL), modeltext.PageText(res.Where.Title)
	}
	s.rec.End(e)
}

// finishRecord ends the record of session s of key, which has ended: it
// stops the filming, asks the provider's replay URL, and writes the files
// (now, or when the call that ends the session returns).
func (t *Toolset) finishRecord(ctx context.Context, key string, s *session) {
	if s.rec == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), replayTimeout)
	defer cancel()
	info := record.Info{Session: t.recordText(key)}
	if st, err := t.r.Status(ctx, key); err == nil {
		info.Provider = st.Provider
	}
	if info.Provider != "" && !t.r.Rules().LocalOnly {
		// ErrNoReplay without a call when the session ran locally only.
		info.ReplayURL, _ = t.r.Replay(ctx, key)
	}
	log, lctx := t.cfg.log, context.Background() // done may run after ctx, at the end of the call that ended the session
	s.rec.Finish(info, func(f record.Files, err error) {
		if err != nil {
			log.LogAttrs(lctx, slog.LevelWarn, "hybroute agent: writing the session's record", slog.String("error", err.Error()))
			return
		}
		attrs := []slog.Attr{slog.String("file", f.HTML)}
		if f.WebM != "" {
			attrs = append(attrs, slog.String("webm", f.WebM))
		}
		if f.WebMErr != nil {
			attrs = append(attrs, slog.String("webm_error", f.WebMErr.Error()))
		}
		log.LogAttrs(lctx, slog.LevelInfo, "hybroute agent: wrote the session's record", attrs...)
	})
}
