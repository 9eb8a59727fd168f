// Package cdpmux puts a multiplexer between chromedp and a browser's CDP
// connection, so that hybroute's guard can drive the sessions chromedp did
// not create.
//
// Why: chromedp v0.23 routes a message that carries a sessionId only to a
// *chromedp.Target it made itself (Browser.run drops the rest), Browser.Call
// never sets a sessionId, and there is no exported way to wrap an existing
// session. Browser-level auto-attach (every popup, worker and frame paused
// until the guard is on) only works with flat sessions. So the Mux sits on
// the connection itself: it owns the auto-attached sessions, sends its own
// commands on any session with ids chromedp never uses, sees every command
// chromedp sends (and can refuse it before the browser sees it), and lets
// chromedp see everything else unchanged. See
// docs/decisions/2026-12-01-a-mux-under-chromedp-guards-every-target.md.
package cdpmux

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/chromedp/cdproto"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// IDBase starts the ids of the Mux's own commands. chromedp counts its ids
// up from 1 for the whole browser, so the two ranges only meet after a
// billion commands of one connection. Chromium reads an id as a 32-bit int:
// an id of 2^31 or more is answered with an error that carries no id, so
// the range must stay below 2^31.
const IDBase = int64(1) << 30

// idLimit is where the Mux stops: past it its ids would reach 2^31.
const idLimit = int64(1)<<31 - 1

// ErrClosed is the error of a command sent after the connection ended.
var ErrClosed = errors.New("cdpmux: the browser connection is closed")

// Hooks are what the Mux's user decides. Every hook runs on the Mux's reader
// goroutine (Refuse on chromedp's writer): it must return fast and must not
// wait for a reply of the Mux (start a goroutine for that).
type Hooks struct {
	// OnAttach is called for every Target.attachedToTarget that is not the
	// answer to chromedp's own Target.attachToTarget. Returning true makes
	// the new session the Mux's: its messages no longer reach chromedp.
	OnAttach func(parent target.SessionID, ev *target.EventAttachedToTarget) bool
	// OnEvent sees every event (a message with a method), on any session,
	// before it is routed. Returning true consumes it: chromedp never sees
	// it. Events of owned sessions never reach chromedp whatever it returns.
	OnEvent func(session target.SessionID, msg *cdproto.Message) (consume bool)
	// OnDetach is called when an owned session ends.
	OnDetach func(session target.SessionID)
	// Refuse sees every command chromedp sends; a non-nil error stops it:
	// chromedp gets the error as the browser's answer and the browser never
	// sees the command.
	Refuse func(msg *cdproto.Message) error
}

// Mux is a chromedp.Transport that wraps the real one.
type Mux struct {
	down  chromedp.Transport
	hooks Hooks
	wmu   sync.Mutex
	next  atomic.Int64

	mu       sync.Mutex
	pend     map[int64]chan *cdproto.Message
	owned    map[target.SessionID]bool
	cdAttach map[target.ID]int // chromedp's attachToTarget commands not yet matched to their event

	toCD      chan *cdproto.Message
	done      chan struct{}
	err       error
	closeOnce sync.Once
}

// New starts reading down. The hooks are fixed from here on.
func New(down chromedp.Transport, hooks Hooks) *Mux {
	m := &Mux{down: down, hooks: hooks, pend: map[int64]chan *cdproto.Message{},
		owned: map[target.SessionID]bool{}, cdAttach: map[target.ID]int{},
		toCD: make(chan *cdproto.Message, 1024), done: make(chan struct{})}
	m.next.Store(IDBase)
	go m.read()
	return m
}

// Done is closed when the connection has ended and the reader is gone.
func (m *Mux) Done() <-chan struct{} { return m.done }

// read is the only reader of the connection. It never closes toCD: Write
// may still put a refusal there after the end, and a send on a closed
// channel would panic; Read sees the end on done instead.
func (m *Mux) read() {
	defer close(m.done)
	for {
		msg := new(cdproto.Message)
		if err := m.down.Read(context.Background(), msg); err != nil {
			m.mu.Lock()
			m.err = err
			for id, ch := range m.pend {
				close(ch)
				delete(m.pend, id)
			}
			m.mu.Unlock()
			return
		}
		if msg.ID >= IDBase {
			m.mu.Lock()
			ch := m.pend[msg.ID]
			delete(m.pend, msg.ID)
			m.mu.Unlock()
			if ch != nil {
				ch <- msg
			}
			continue
		}
		if msg.Method == "" {
			m.toCD <- msg // chromedp's reply
			continue
		}
		m.mu.Lock()
		parentOwned := m.owned[msg.SessionID]
		m.mu.Unlock()
		switch msg.Method {
		case cdproto.MethodType(target.AttachedToTarget.Method):
			m.attached(msg)
		case cdproto.MethodType(target.DetachedFromTarget.Method):
			ev := new(target.EventDetachedFromTarget)
			if jsonv2.Unmarshal(msg.Params, ev, chromedp.DefaultUnmarshalOptions) == nil {
				m.mu.Lock()
				ours := m.owned[ev.SessionID]
				delete(m.owned, ev.SessionID)
				m.mu.Unlock()
				if ours {
					if m.hooks.OnDetach != nil {
						m.hooks.OnDetach(ev.SessionID)
					}
					continue // chromedp never knew the session
				}
			}
		}
		consumed := m.hooks.OnEvent != nil && m.hooks.OnEvent(msg.SessionID, msg)
		if parentOwned || consumed {
			continue
		}
		m.toCD <- msg
	}
}

// attached decides, on the reader goroutine, whose a new session is: no
// message of it can arrive before this returns.
func (m *Mux) attached(msg *cdproto.Message) {
	ev := new(target.EventAttachedToTarget)
	if jsonv2.Unmarshal(msg.Params, ev, chromedp.DefaultUnmarshalOptions) != nil || ev.TargetInfo == nil {
		return
	}
	m.mu.Lock()
	// chromedp's own Target.attachToTarget produces the same event (before
	// its reply, never waiting for the debugger): that session stays
	// chromedp's.
	chromedps := msg.SessionID == "" && !ev.WaitingForDebugger && m.cdAttach[ev.TargetInfo.TargetID] > 0
	if chromedps {
		m.cdAttach[ev.TargetInfo.TargetID]--
		if m.cdAttach[ev.TargetInfo.TargetID] == 0 {
			delete(m.cdAttach, ev.TargetInfo.TargetID)
		}
	}
	m.mu.Unlock()
	if !chromedps && m.hooks.OnAttach != nil && m.hooks.OnAttach(msg.SessionID, ev) {
		m.mu.Lock()
		m.owned[ev.SessionID] = true
		m.mu.Unlock()
	}
}

// Read is chromedp's side of the Transport. After the end it still hands
// over what came before, then the connection's error (io.EOF for a clean
// end).
func (m *Mux) Read(ctx context.Context, msg *cdproto.Message) error {
	select {
	case in := <-m.toCD:
		*msg = *in
		return nil
	case <-m.done:
		select {
		case in := <-m.toCD:
			*msg = *in
			return nil
		default:
		}
		if m.err != nil && !errors.Is(m.err, io.EOF) {
			return m.err
		}
		return io.EOF
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Write is chromedp's side of the Transport: its commands, after Refuse.
func (m *Mux) Write(ctx context.Context, msg *cdproto.Message) error {
	if m.hooks.Refuse != nil {
		if err := m.hooks.Refuse(msg); err != nil {
			reply := &cdproto.Message{ID: msg.ID, SessionID: msg.SessionID,
				Error: &cdproto.Error{Code: -32000, Message: err.Error()}}
			select {
			case m.toCD <- reply:
			case <-m.done:
			case <-ctx.Done():
				return ctx.Err()
			}
			return nil
		}
	}
	if msg.Method == target.CommandAttachToTarget && msg.SessionID == "" {
		var p target.AttachToTargetParams
		if jsonv2.Unmarshal(msg.Params, &p, chromedp.DefaultUnmarshalOptions) == nil {
			m.mu.Lock()
			m.cdAttach[p.TargetID]++
			m.mu.Unlock()
		}
	}
	if msg.Method == target.CommandSetAutoAttach && msg.SessionID != "" {
		// chromedp auto-attaches on its page sessions without waiting: its
		// frames and workers would run before the guard is on them.
		var p target.SetAutoAttachParams
		if jsonv2.Unmarshal(msg.Params, &p, chromedp.DefaultUnmarshalOptions) == nil && p.AutoAttach {
			p.WaitForDebuggerOnStart = true
			if b, err := jsonv2.Marshal(p, chromedp.DefaultMarshalOptions); err == nil {
				c := *msg
				c.Params = b
				msg = &c
			}
		}
	}
	m.wmu.Lock()
	defer m.wmu.Unlock()
	return m.down.Write(ctx, msg)
}

// Close closes the browser's connection; the reader ends with it.
func (m *Mux) Close() error {
	var err error
	m.closeOnce.Do(func() { err = m.down.Close() })
	return err
}

// Go sends a command on any session (owned, chromedp's, or "" for the
// browser) and returns a channel with its outcome. Commands to a target
// that waits for the debugger must be sent this way, not awaited one by
// one: a paused page answers some of them only after it is resumed.
func (m *Mux) Go(ctx context.Context, session target.SessionID, method string, params any) <-chan error {
	out := make(chan error, 1)
	ch, err := m.send(ctx, session, method, params)
	if err != nil {
		out <- err
		return out
	}
	go func() { _, err := m.wait(ctx, method, ch); out <- err }()
	return out
}

// Call sends a command and waits for its result.
func (m *Mux) Call(ctx context.Context, session target.SessionID, method string, params any) ([]byte, error) {
	ch, err := m.send(ctx, session, method, params)
	if err != nil {
		return nil, err
	}
	return m.wait(ctx, method, ch)
}

type pending struct {
	id int64
	ch chan *cdproto.Message
}

func (m *Mux) send(ctx context.Context, session target.SessionID, method string, params any) (pending, error) {
	id := m.next.Add(1)
	if id >= idLimit {
		return pending{}, fmt.Errorf("%s: cdpmux: out of command ids", method)
	}
	var buf []byte
	if params != nil {
		var err error
		if buf, err = jsonv2.Marshal(params, chromedp.DefaultMarshalOptions); err != nil {
			return pending{}, fmt.Errorf("%s: %w", method, err)
		}
	}
	ch := make(chan *cdproto.Message, 1)
	m.mu.Lock()
	// m.err is set in the same hold of m.mu as the pending replies are
	// failed: a command registered after that would wait for ever.
	if m.err != nil {
		m.mu.Unlock()
		return pending{}, fmt.Errorf("%s: %w", method, ErrClosed)
	}
	m.pend[id] = ch
	m.mu.Unlock()
	m.wmu.Lock()
	err := m.down.Write(ctx, &cdproto.Message{ID: id, SessionID: session, Method: cdproto.MethodType(method), Params: buf})
	m.wmu.Unlock()
	if err != nil {
		m.mu.Lock()
		delete(m.pend, id)
		m.mu.Unlock()
		return pending{}, fmt.Errorf("%s: %w", method, err)
	}
	return pending{id, ch}, nil
}

func (m *Mux) wait(ctx context.Context, method string, p pending) ([]byte, error) {
	select {
	case <-ctx.Done():
		m.mu.Lock()
		delete(m.pend, p.id)
		m.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	case msg, ok := <-p.ch:
		switch {
		case !ok:
			return nil, fmt.Errorf("%s: %w", method, ErrClosed)
		case msg.Error != nil:
			return nil, fmt.Errorf("%s: %w", method, msg.Error)
		}
		return msg.Result, nil
	}
}
