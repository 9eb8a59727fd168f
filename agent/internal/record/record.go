// Package record keeps the record of one toolset session, bounded, and
// writes it as one self-contained HTML replay file (the frames as JPEG
// data URLs, the timeline of tool calls, a player), and as a WebM when
// ffmpeg is installed.
//
// What it keeps it is handed already redacted: the toolset passes every
// text through the same redaction as the results it returns. The bounds
// (Limits) hold whatever it is handed: the frame rate is the caller's
// (the toolset's screencast hands a frame at most every FrameInterval),
// and the rest is held here.
package record

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/template"
	"time"
	"unicode/utf8"
)

// The bounds of one record.
const (
	// FrameInterval is the least time between two frames: 2 a second.
	FrameInterval = 500 * time.Millisecond
	// MaxFrames is how many frames a record keeps.
	MaxFrames = 600
	// MaxFrameBytes is how many bytes of JPEG the frames take together.
	MaxFrameBytes = 16 << 20
	// MaxEntries is how many tool calls the timeline keeps: the newest; the
	// older ones are counted.
	MaxEntries = 1000
	// The most one entry's texts take in the file, once encoded: its
	// arguments, its result, its page.
	MaxArgsBytes   = 2 << 10
	MaxResultBytes = 6 << 10
	MaxPageBytes   = 1 << 10
	// MaxFileBytes bounds the replay file: the frames in base64, the
	// timeline and the player.
	MaxFileBytes = MaxFrameBytes*4/3 + MaxEntries*maxEntryBytes + playerBytes
	// maxEntryBytes bounds one entry in the file: its texts and the rest.
	maxEntryBytes = MaxArgsBytes + MaxResultBytes + 2*MaxPageBytes + 512
	// playerBytes bounds the player and the record's other fields.
	playerBytes = 64 << 10
)

// limits are a record's bounds: the constants, smaller in tests.
type limits struct{ frames, frameBytes, entries int }

// fileBytes bounds the file of a record of these limits.
func (l limits) fileBytes() int { return l.frameBytes*4/3 + l.entries*maxEntryBytes + playerBytes }

// Frame is one picture of the session's page.
type Frame struct {
	At   time.Time
	JPEG []byte
}

// Entry is one tool call on the timeline. Its texts are redacted by the
// caller.
type Entry struct {
	Start   time.Time
	End     time.Time
	Tool    string
	Args    string // the call's JSON arguments
	Result  string // the result's text
	IsError bool
	Images  int    // the images the result had (not kept: the frames show the page)
	Route   string // "local", "cloud", or "" for a call no browser ran
	URL     string // the page after the call
	Title   string
}

// Info is what the record says of the session as a whole.
type Info struct {
	Session  string // the session key, redacted
	Provider string // the Router's cloud provider, "" with none
	// ReplayURL is the provider's own recording of the session's cloud
	// browser, when it gave one.
	ReplayURL string
}

// Files are what Write wrote.
type Files struct {
	HTML string
	WebM string // "" without ffmpeg, or when it failed (WebMErr)
	// WebMErr is why there is no WebM although ffmpeg is installed.
	WebMErr error
}

// Recorder is one session's record, safe for concurrent use. Its calls
// bracket each tool call (Begin, End) so that a Finish that comes during
// a call (browser_close's own, or a release from elsewhere) writes the file
// once that call is on the timeline too.
type Recorder struct {
	dir     string
	started time.Time
	lim     limits

	mu         sync.Mutex
	frames     []Frame
	frameBytes int
	thinned    int // frames dropped to keep the bounds
	taken      int // frames AddFrame took, kept or in the last one's place
	entries    []Entry
	dropped    int // entries dropped, the oldest
	busy       int // calls between Begin and End
	finished   bool
	written    bool
	info       Info
	done       func(Files, error) // called once the files are written
}

// New starts the record of a session whose files go to dir.
func New(dir string) *Recorder {
	return &Recorder{dir: dir, started: time.Now(), lim: limits{frames: MaxFrames, frameBytes: MaxFrameBytes, entries: MaxEntries}}
}

// AddFrame keeps a frame, dropping the oldest frames' every other one
// while the bounds are passed. A frame sooner than FrameInterval after the
// last one kept takes that one's picture, at its time: the record always
// ends on the newest picture of the page, and its frames stay
// FrameInterval apart. Nothing is kept after Finish. The JPEG is the
// caller's to share, never changed.
func (r *Recorder) AddFrame(f Frame) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.written || len(f.JPEG) == 0 || len(f.JPEG) > r.lim.frameBytes/8 {
		return
	}
	r.taken++
	if n := len(r.frames); n > 0 && f.At.Sub(r.frames[n-1].At) < FrameInterval {
		r.frameBytes += len(f.JPEG) - len(r.frames[n-1].JPEG)
		r.frames[n-1].JPEG = f.JPEG
	} else {
		r.frames = append(r.frames, f)
		r.frameBytes += len(f.JPEG)
	}
	for len(r.frames) > r.lim.frames || r.frameBytes > r.lim.frameBytes {
		r.thin()
	}
}

// thin drops every other frame of the older half, keeping the first: the
// start of the session plays at a lower rate, its end at the full one.
func (r *Recorder) thin() {
	half := len(r.frames) / 2
	if half < 2 {
		r.frameBytes -= len(r.frames[0].JPEG)
		r.frames = r.frames[1:]
		r.thinned++
		return
	}
	kept := r.frames[:1]
	for i := 1; i < half; i++ {
		if i%2 == 1 {
			r.frameBytes -= len(r.frames[i].JPEG)
			r.thinned++
			continue
		}
		kept = append(kept, r.frames[i])
	}
	r.frames = append(kept, r.frames[half:]...)
}

// Begin notes that a tool call started.
func (r *Recorder) Begin() {
	r.mu.Lock()
	r.busy++
	r.mu.Unlock()
}

// End puts the call Begin noted on the timeline, and writes the files
// when the record was finished while the call ran.
func (r *Recorder) End(e Entry) {
	e.Args = clip(e.Args, MaxArgsBytes)
	e.Result = clip(e.Result, MaxResultBytes)
	e.URL = clip(e.URL, MaxPageBytes)
	e.Title = clip(e.Title, MaxPageBytes)
	e.Tool = clip(e.Tool, 100)
	r.mu.Lock()
	r.busy--
	if !r.written {
		r.entries = append(r.entries, e)
		if len(r.entries) > r.lim.entries {
			n := len(r.entries) - r.lim.entries
			r.entries = append(r.entries[:0], r.entries[n:]...)
			r.dropped += n
		}
	}
	write := r.finished && !r.written && r.busy == 0
	if write {
		r.written = true
	}
	r.mu.Unlock()
	if write {
		r.write()
	}
}

// Finish ends the record with info and writes its files, now, or when
// the call that runs ends; then done is called with what was written.
// Later calls of Finish do nothing.
func (r *Recorder) Finish(info Info, done func(Files, error)) {
	r.mu.Lock()
	if r.finished {
		r.mu.Unlock()
		return
	}
	r.finished, r.info, r.done = true, info, done
	write := r.busy == 0
	if write {
		r.written = true
	}
	r.mu.Unlock()
	if write {
		r.write()
	}
}

// write writes the files and reports them.
func (r *Recorder) write() {
	files, err := r.writeFiles()
	if r.done != nil {
		r.done(files, err)
	}
}

// ErrWrite is wrapped by the error of a record that could not be written.
var ErrWrite = errors.New("record: writing the replay file")

func (r *Recorder) writeFiles() (Files, error) {
	// Written once: nothing changes the record any more.
	if err := os.MkdirAll(r.dir, 0o700); err != nil {
		return Files{}, fmt.Errorf("%w: %w", ErrWrite, err)
	}
	base := filepath.Join(r.dir, fileName(r.info.Session, r.started))
	html, err := r.html()
	if err != nil {
		return Files{}, fmt.Errorf("%w: %w", ErrWrite, err)
	}
	path, err := writeNew(base, ".html", html)
	if err != nil {
		return Files{}, fmt.Errorf("%w: %w", ErrWrite, err)
	}
	files := Files{HTML: path}
	files.WebM, files.WebMErr = webm(strings.TrimSuffix(path, ".html")+".webm", r.frames)
	return files, nil
}

// fileName names a session's files: its key, in the characters a file
// name keeps everywhere, and when it started.
func fileName(key string, started time.Time) string {
	var b strings.Builder
	for _, c := range key {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 64 {
			break
		}
	}
	name := strings.Trim(b.String(), ".")
	if name == "" {
		name = "session"
	}
	return "hybroute-" + name + "-" + started.UTC().Format("20060102T150405.000Z")
}

// writeNew writes data to base+ext, or base-2+ext… when that exists, with
// only the owner allowed to read it, through a temporary file so that no
// half-written record is ever at the name.
func writeNew(base, ext string, data []byte) (string, error) {
	tmp, err := os.CreateTemp(filepath.Dir(base), ".record-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	for i := 1; i < 100; i++ {
		path := base + ext
		if i > 1 {
			path = fmt.Sprintf("%s-%d%s", base, i, ext)
		}
		// A link, not a rename: it fails when the name is taken.
		if err := os.Link(tmp.Name(), path); err == nil {
			return path, nil
		} else if !errors.Is(err, os.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("%s%s: too many records of the same name", base, ext)
}

// clip cuts s so that it takes at most max bytes as a JSON string in the
// file (where <, > and & take six), marking the cut.
func clip(s string, limit int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	const mark = "… (cut)"
	n, cut := 2, -1 // the quotes
	for i, c := range s {
		if cut < 0 && n+runeLen(c)+encodedLen(mark)-2 > limit {
			cut = i
		}
		if n += runeLen(c); n > limit {
			return s[:max(cut, 0)] + mark
		}
	}
	return s
}

// encodedLen is the length of s as json.Marshal writes it.
func encodedLen(s string) int {
	n := 2
	for _, c := range s {
		n += runeLen(c)
	}
	return n
}

// runeLen is what json.Marshal writes for c in a string (HTML escaped).
func runeLen(c rune) int {
	switch {
	case c == '"', c == '\\', c == '\n', c == '\r', c == '\t':
		return 2
	case c < 0x20, c == '<', c == '>', c == '&', c == '\u2028', c == '\u2029':
		return 6
	}
	return utf8.RuneLen(c)
}

//go:embed player.html
var playerHTML string

var player = template.Must(template.New("player").Parse(playerHTML))

// data is what the player reads: the record as JSON.
type data struct {
	Session   string      `json:"session"`
	Provider  string      `json:"provider,omitempty"`
	ReplayURL string      `json:"replay_url,omitempty"`
	Started   time.Time   `json:"started"`
	Ended     time.Time   `json:"ended"`
	Frames    []dataFrame `json:"frames"`
	Thinned   int         `json:"thinned"`
	Entries   []dataEntry `json:"entries"`
	Dropped   int         `json:"dropped"`
	Bounds    dataBounds  `json:"bounds"`
}

type dataFrame struct {
	T   int64  `json:"t"` // ms since Started
	Src string `json:"src"`
}

type dataEntry struct {
	T       int64  `json:"t"` // ms since Started
	Ms      int64  `json:"ms"`
	Tool    string `json:"tool"`
	Args    string `json:"args"`
	Result  string `json:"result"`
	IsError bool   `json:"error,omitempty"`
	Images  int    `json:"images,omitempty"`
	Route   string `json:"route,omitempty"`
	URL     string `json:"url,omitempty"`
	Title   string `json:"title,omitempty"`
}

type dataBounds struct {
	FPS        float64 `json:"fps"`
	MaxFrames  int     `json:"max_frames"`
	MaxMiB     int     `json:"max_frame_mib"`
	MaxEntries int     `json:"max_entries"`
}

// html renders the replay file.
func (r *Recorder) html() ([]byte, error) {
	d := data{Session: r.info.Session, Provider: r.info.Provider, Started: r.started.UTC(), Ended: time.Now().UTC(),
		Thinned: r.thinned, Dropped: r.dropped,
		Bounds: dataBounds{FPS: float64(time.Second) / float64(FrameInterval), MaxFrames: r.lim.frames, MaxMiB: r.lim.frameBytes >> 20, MaxEntries: r.lim.entries},
		Frames: make([]dataFrame, 0, len(r.frames)), Entries: make([]dataEntry, 0, len(r.entries))}
	if u := r.info.ReplayURL; strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
		d.ReplayURL = clip(u, MaxPageBytes)
	}
	ms := func(t time.Time) int64 { return max(0, t.Sub(r.started).Milliseconds()) }
	for _, f := range r.frames {
		d.Frames = append(d.Frames, dataFrame{T: ms(f.At), Src: "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(f.JPEG)})
	}
	for _, e := range r.entries {
		d.Entries = append(d.Entries, dataEntry{T: ms(e.Start), Ms: e.End.Sub(e.Start).Milliseconds(), Tool: e.Tool, Args: e.Args,
			Result: e.Result, IsError: e.IsError, Images: e.Images, Route: e.Route, URL: e.URL, Title: e.Title})
	}
	// json.Marshal escapes <, > and &: the JSON cannot end the script
	// element it sits in.
	js, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(len(js) + len(playerHTML))
	err = player.Execute(&b, struct{ Title, Data string }{Title: html.EscapeString("hybroute record: " + d.Session), Data: string(js)})
	return b.Bytes(), err
}

// Frames counts the frames the record keeps, and those AddFrame took
// (kept, or in the last one's place).
func (r *Recorder) Frames() (kept, taken int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.frames), r.taken
}
