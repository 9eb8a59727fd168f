package cdpmux

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"github.com/chromedp/cdproto"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/chromedp"
)

// Splice puts a Mux between chromedp's exec allocator and the Chromium it
// launches over the pipe. The allocator keeps doing everything else
// (process start and teardown, Pdeathsig, its pipes); the splice relies on
// what chromedp documents for ModifyCmdFunc in pipe mode: the pipes are set
// when it runs, as ExtraFiles[0] (fd 3, which Chromium reads) and
// ExtraFiles[1] (fd 4, which Chromium writes).
type Splice struct {
	hooks Hooks
	// Modify, when set, runs on the command after the splice (the caller's
	// own ModifyCmdFunc: only one can be given to the allocator).
	Modify func(cmd *exec.Cmd)

	mu   sync.Mutex
	mux  *Mux
	err  error
	wg   sync.WaitGroup
	made chan struct{}

	// The child's ends of the pipes may be closed only once the process
	// has started, or will never start: os/exec reads their descriptors
	// while it starts it, and a descriptor closed then may be reused by
	// another file and handed to the browser. launched says the start is
	// over; dropChild is set once the ends are wanted closed before that.
	launched  bool
	dropChild bool
	closeKids func()
}

// Launched tells the splice that the allocation has returned: Chromium
// has started with its own copies of the pipe ends, or it never will. The
// caller calls it once chromedp's allocation (the first Run of the
// browser's context) has returned, whatever its outcome; the child's ends
// a connection that ended early left open are closed then.
func (s *Splice) Launched() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.launched = true
	if s.dropChild && s.closeKids != nil {
		s.closeKids()
	}
}

// dropChildEnds closes the child's ends now if the start is over, or as
// soon as Launched says it is.
func (s *Splice) dropChildEnds() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.launched {
		s.closeKids()
		return
	}
	s.dropChild = true
}

// NewSplice returns a splice whose Mux will have hooks.
func NewSplice(hooks Hooks) *Splice {
	return &Splice{hooks: hooks, made: make(chan struct{})}
}

// Option is the exec allocator option that makes the splice.
func (s *Splice) Option() chromedp.ExecAllocatorOption {
	return chromedp.ModifyCmdFunc(s.modify)
}

// Mux is the splice's Mux once Chromium's command is made, nil before (or
// when the command was not in pipe mode).
func (s *Splice) Mux() *Mux {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mux
}

// Err is why the splice could not be made, if it could not: the browser
// then runs with no Mux, and its user must not go on.
func (s *Splice) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Wait waits until the splice's goroutines are gone: after Chromium exited
// and chromedp closed its end.
func (s *Splice) Wait() { s.wg.Wait() }

func (s *Splice) fail(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

func (s *Splice) modify(cmd *exec.Cmd) {
	// ModifyCmdFunc replaces the allocator's own process options: the
	// browser must still die with us.
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = new(syscall.SysProcAttr)
	}
	setPdeathsig(cmd.SysProcAttr)
	defer func() {
		if s.Modify != nil {
			s.Modify(cmd)
		}
	}()
	if len(cmd.ExtraFiles) < 2 {
		s.fail(fmt.Errorf("cdpmux: the browser is not started in pipe mode"))
		return
	}
	// chromedp closes its copies of the child ends once Chromium has
	// started; ours are duplicates, so they stay open.
	cdR, err := dupFile(cmd.ExtraFiles[0]) // what chromedp writes arrives here
	if err != nil {
		s.fail(err)
		return
	}
	cdW, err := dupFile(cmd.ExtraFiles[1]) // what we write here, chromedp reads
	if err != nil {
		cdR.Close()
		s.fail(err)
		return
	}
	brR, ourW, err := os.Pipe() // we write commands; Chromium reads fd 3
	if err != nil {
		cdR.Close()
		cdW.Close()
		s.fail(err)
		return
	}
	ourR, brW, err := os.Pipe() // Chromium writes fd 4; we read
	if err != nil {
		cdR.Close()
		cdW.Close()
		brR.Close()
		ourW.Close()
		s.fail(err)
		return
	}
	cmd.ExtraFiles = []*os.File{brR, brW}
	m := New(newPipeConn(ourR, ourW), s.hooks)
	s.mu.Lock()
	s.mux = m
	s.mu.Unlock()
	up := newPipeConn(cdR, cdW)    // reads chromedp's commands
	toCD := &rawPipeWriter{w: cdW} // writes what chromedp reads
	var childOnce sync.Once
	closeChild := func() {
		// Chromium has its own copies once it runs: drop ours, or its
		// exit would never reach us as EOF.
		childOnce.Do(func() { brR.Close(); brW.Close() })
	}
	s.mu.Lock()
	s.closeKids = closeChild
	s.mu.Unlock()
	s.wg.Go(func() { // chromedp -> Chromium
		defer m.Close()
		// chromedp may give up while the process is still being started:
		// the ends are closed only once the start is over (Launched).
		defer s.dropChildEnds()
		for {
			msg := new(cdproto.Message)
			if err := up.Read(context.Background(), msg); err != nil {
				return
			}
			closeChild() // chromedp writes only once Chromium runs: the start is over
			if err := m.Write(context.Background(), msg); err != nil {
				return
			}
		}
	})
	s.wg.Go(func() { // Chromium -> chromedp
		defer up.Close()
		for {
			msg := new(cdproto.Message)
			if err := m.Read(context.Background(), msg); err != nil {
				return
			}
			if err := toCD.write(msg); err != nil {
				return
			}
		}
	})
	s.wg.Go(func() { <-m.Done() })
}

func dupFile(f *os.File) (*os.File, error) {
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		return nil, fmt.Errorf("cdpmux: duplicating the browser pipe: %w", err)
	}
	syscall.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), f.Name()+"-mux"), nil
}

// rawPipeWriter frames messages for chromedp's side of the pipe. It does not
// re-encode a cdproto.Message: that drops an empty "result":{} (omitempty
// in json v2 omits {}), and chromedp then fails to decode the reply of
// every command without a result.
type rawPipeWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *rawPipeWriter) write(msg *cdproto.Message) error {
	b := make([]byte, 0, 64+len(msg.Params)+len(msg.Result))
	b = append(b, '{')
	sep := func() {
		if len(b) > 1 {
			b = append(b, ',')
		}
	}
	if msg.ID != 0 {
		b = fmt.Appendf(b, `"id":%d`, msg.ID)
	}
	if msg.SessionID != "" {
		sep()
		q, _ := jsonv2.Marshal(string(msg.SessionID))
		b = append(append(b, `"sessionId":`...), q...)
	}
	if msg.Method != "" {
		sep()
		q, _ := jsonv2.Marshal(string(msg.Method))
		b = append(append(b, `"method":`...), q...)
	}
	if len(msg.Params) > 0 {
		sep()
		b = append(append(b, `"params":`...), msg.Params...)
	}
	switch {
	case msg.Error != nil:
		sep()
		e, err := jsonv2.Marshal(msg.Error, chromedp.DefaultMarshalOptions)
		if err != nil {
			return err
		}
		b = append(append(b, `"error":`...), e...)
	case msg.ID != 0:
		sep()
		r := []byte(msg.Result)
		if len(r) == 0 {
			r = []byte("{}")
		}
		b = append(append(b, `"result":`...), r...)
	}
	b = append(b, '}', 0)
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := p.w.Write(b)
	return err
}
