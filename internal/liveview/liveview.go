// Package liveview serves a person a live view of one browser session: a
// page that shows the session's tab (its screencast) and sends the
// person's clicks, keys, scrolling, typing and navigation back to it.
//
// The view drives nothing itself: every input it relays is a call of the
// session (Session.Do, Session.Navigate), which the Router makes as it
// makes an agent's, under the same key. So the guard, the landed-URL
// check and the operator's rules hold for the person as for the agent: a
// metadata address is refused, a private one stays on the local browser.
//
// A view is opened by a token (256 random bits) bound to one session; it
// expires, and the handler answers only requests whose Host and Origin
// are the server's own (internal/hostguard). The caller serves it on
// loopback unless it chooses otherwise.
package liveview

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"errors"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/hybroute/hybroute/internal/hostguard"
)

// Errors of Open.
var (
	ErrClosed = errors.New("liveview: the server is closed")
	// ErrSessionGone is wrapped by a Session's error once its session was
	// released: the view ends (Closed).
	ErrSessionGone = errors.New("liveview: the session was released")
)

// DefaultTTL is how long a view's token is good when Open is given none.
const DefaultTTL = 15 * time.Minute

// Options configure a Server.
type Options struct {
	// AllowHosts are further Host names (or host:port) the handler answers
	// to, beyond the address a request arrived on (and, on loopback,
	// localhost), as the MCP server's.
	AllowHosts []string
	// Remote lets the handler answer requests from addresses other than
	// loopback. Off, it answers only a person on this machine, wherever
	// the caller serves it.
	Remote bool
	// Logger logs what the person cannot be told. Default slog.Default().
	Logger *slog.Logger
}

// Outcome is how a view ended.
type Outcome string

// The outcomes of a view. A view that has not ended has none ("").
const (
	Done    Outcome = "done"    // the person pressed Done
	GaveUp  Outcome = "gave_up" // the person pressed Give up
	Expired Outcome = "expired" // the token's time ran out
	Closed  Outcome = "closed"  // the view (or its server) was closed
)

// Server serves the views opened on it: an http.Handler, answering
// /{token} (the page) and /{token}/ws (its WebSocket). Mount it under a
// prefix with http.StripPrefix.
type Server struct {
	opts    Options
	handler http.Handler

	mu     sync.Mutex
	views  map[[32]byte]*View // by the token's SHA-256: a lookup learns nothing of the tokens
	closed bool
	conns  sync.WaitGroup
}

// New returns a Server with no views.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Server{opts: opts, views: map[[32]byte]*View{}}
	s.handler = hostguard.Wrap(opts.AllowHosts, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !opts.Remote && !fromLoopback(r) {
			http.Error(w, "hybroute: forbidden: the live view answers on loopback only", http.StatusForbidden)
			return
		}
		s.serve(w, r)
	}))
	return s
}

// View is one person's view of one session.
type View struct {
	s       *Server
	sess    Session
	task    string
	token   string
	hash    [32]byte
	expires time.Time
	timer   *time.Timer

	ended   chan struct{}
	once    sync.Once
	outcome Outcome // set before ended closes
}

// Open opens a view of sess, good for ttl (DefaultTTL when 0), showing the
// person task (what they are asked to do; may be empty).
func (s *Server) Open(sess Session, task string, ttl time.Duration) (*View, error) {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	v := &View{s: s, sess: sess, task: task, token: rand.Text() + rand.Text(), ended: make(chan struct{})}
	v.hash = sha256.Sum256([]byte(v.token))
	v.expires = time.Now().Add(ttl)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	s.views[v.hash] = v
	v.timer = time.AfterFunc(ttl, func() { v.end(Expired) })
	return v, nil
}

// Token is the view's secret: its page is at /{token} under the handler.
func (v *View) Token() string { return v.token }

// Expires is when the token stops working.
func (v *View) Expires() time.Time { return v.expires }

// Ended is closed when the view has ended; Outcome then says how.
func (v *View) Ended() <-chan struct{} { return v.ended }

// Outcome is how the view ended, "" while it has not.
func (v *View) Outcome() Outcome {
	select {
	case <-v.ended:
		return v.outcome
	default:
		return ""
	}
}

// Close ends the view (Outcome Closed, unless it had ended already): its
// token stops working and its connections close.
func (v *View) Close() { v.end(Closed) }

func (v *View) end(o Outcome) {
	v.once.Do(func() {
		v.s.mu.Lock()
		delete(v.s.views, v.hash)
		v.s.mu.Unlock()
		v.timer.Stop()
		v.outcome = o
		close(v.ended)
	})
}

// Close ends every view and waits for their connections to close.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	views := make([]*View, 0, len(s.views))
	for _, v := range s.views {
		views = append(views, v)
	}
	s.mu.Unlock()
	for _, v := range views {
		v.Close()
	}
	s.conns.Wait()
}

// ServeHTTP serves the views' pages and WebSockets.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// lookup is the view of token, nil when none is open (a wrong token, or
// one whose view ended: expired, done, closed).
func (s *Server) lookup(token string) *View {
	h := sha256.Sum256([]byte(token))
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.views[h]
	if v == nil || time.Now().After(v.expires) {
		return nil
	}
	return v
}

// fromLoopback says whether r came from this machine.
func fromLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

//go:embed view.html
var pageHTML string

var page = template.Must(template.New("view").Parse(pageHTML))

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	token, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	v := s.lookup(token)
	if v == nil {
		// A wrong token and an ended view answer alike.
		http.Error(w, "hybroute: no such live view (the link is wrong, or it expired or ended)", http.StatusNotFound)
		return
	}
	switch {
	case rest == "" && r.Method == http.MethodGet:
		nonce := rand.Text()
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		// The token is in the URL: it must not leave in a Referer, and
		// nothing but this page's own script and WebSocket may run.
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Content-Security-Policy", "default-src 'none'; img-src blob:; connect-src 'self'; "+
			"script-src 'nonce-"+nonce+"'; style-src 'nonce-"+nonce+"'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'")
		task := v.task
		if task == "" {
			task = "Do what the agent asked in this page, then press Done."
		}
		if err := page.Execute(w, struct{ Nonce, Task string }{nonce, task}); err != nil {
			s.opts.Logger.Debug("liveview: writing the page", "err", err)
		}
	case rest == "ws":
		s.serveConn(w, r, v)
	default:
		http.Error(w, "hybroute: not found", http.StatusNotFound)
	}
}

// Wait waits until the view ends, and returns how. When ctx ends first it
// closes the view and returns ctx's error.
func (v *View) Wait(ctx context.Context) (Outcome, error) {
	select {
	case <-v.ended:
		return v.outcome, nil
	case <-ctx.Done():
		v.Close()
		return v.Outcome(), context.Cause(ctx)
	}
}

// Handoff is one hand-off: the request and, when it ends, its result.
type Handoff struct {
	Task    string
	Timeout time.Duration
	OnURL   func(url string)
	BaseURL string // a view's URL is BaseURL followed by its token

	ViewURL string
	Outcome Outcome
	Page    Page // where the page is after the hand-off
}

// Handoff opens a view of sess, whose session has a page to show, tells
// h.OnURL its URL, waits until the person ends it or h.Timeout, and fills
// in h's result.
func (s *Server) Handoff(ctx context.Context, sess Session, h *Handoff) error {
	view, err := s.Open(sess, h.Task, h.Timeout)
	if err != nil {
		return err
	}
	defer view.Close()
	h.ViewURL = h.BaseURL + view.Token()
	if h.OnURL != nil {
		h.OnURL(h.ViewURL)
	}
	if h.Outcome, err = view.Wait(ctx); err != nil {
		return err
	}
	h.Page, err = sess.Do(ctx, nil)
	return err
}
