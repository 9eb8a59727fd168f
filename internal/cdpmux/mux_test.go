package cdpmux

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeBrowser is the browser's end of a CDP connection, in memory: what the
// Mux writes arrives on sent, in order; what the test emits, the Mux reads,
// in order. Once closed (by the Mux, or by the test as a browser that goes
// away) Read answers end, after the messages emitted before.
type fakeBrowser struct {
	in     chan *cdproto.Message
	sent   chan *cdproto.Message
	closed chan struct{}
	once   sync.Once
	closes atomic.Int32
	end    error // what Read answers once closed

	writeErr atomic.Value // error: every Write fails with it when set
	writing  atomic.Int32 // Writes in flight
	overlap  atomic.Bool  // two Writes were in flight at once
}

func newFakeBrowser() *fakeBrowser {
	return &fakeBrowser{in: make(chan *cdproto.Message, 4096), sent: make(chan *cdproto.Message, 4096),
		closed: make(chan struct{}), end: io.EOF}
}

func (f *fakeBrowser) Read(ctx context.Context, msg *cdproto.Message) error {
	select {
	case in := <-f.in:
		*msg = *in
		return nil
	default:
	}
	select {
	case in := <-f.in:
		*msg = *in
		return nil
	case <-f.closed:
		return f.end
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *fakeBrowser) Write(_ context.Context, msg *cdproto.Message) error {
	if f.writing.Add(1) > 1 {
		f.overlap.Store(true)
	}
	defer f.writing.Add(-1)
	runtime.Gosched() // give another writer the chance to overlap
	if err, _ := f.writeErr.Load().(error); err != nil {
		return err
	}
	c := *msg
	f.sent <- &c
	return nil
}

func (f *fakeBrowser) Close() error {
	f.closes.Add(1)
	f.once.Do(func() { close(f.closed) })
	return nil
}

// emit sends a message from the browser.
func (f *fakeBrowser) emit(msg *cdproto.Message) { f.in <- msg }

// event emits an event with params marshalled from v.
func (f *fakeBrowser) event(t *testing.T, session target.SessionID, method string, v any) {
	t.Helper()
	b, err := jsonv2.Marshal(v, chromedp.DefaultMarshalOptions)
	require.NoError(t, err)
	f.emit(&cdproto.Message{SessionID: session, Method: cdproto.MethodType(method), Params: b})
}

// marker emits an event no hook acts on: chromedp reading it next proves
// that everything the browser sent before it was held back.
func (f *fakeBrowser) marker(t *testing.T, name string) {
	t.Helper()
	f.emit(&cdproto.Message{Method: "Test.marker", Params: jsonv2.Value(`{"name":"` + name + `"}`)})
}

// next is the next message the browser received, within a generous bound
// (a missing one fails the test rather than hanging it).
func (f *fakeBrowser) next(t *testing.T) *cdproto.Message {
	t.Helper()
	select {
	case msg := <-f.sent:
		return msg
	case <-time.After(10 * time.Second):
		t.Fatal("the browser received nothing")
		return nil
	}
}

// answerAll replies to every command of the Mux's range the browser
// receives, each in a goroutine of its own (so in no particular order),
// with a result that names the command's id and echoes its params. Other
// messages go to others. It stops when the browser is closed.
func (f *fakeBrowser) answerAll(others chan<- *cdproto.Message) (stop func()) {
	var wg sync.WaitGroup
	quit := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case msg := <-f.sent:
				if msg.ID < IDBase {
					others <- msg
					continue
				}
				wg.Go(func() {
					res := fmt.Sprintf(`{"id":%d,"session":%q,"params":%s}`, msg.ID, msg.SessionID, orNull(msg.Params))
					f.emit(&cdproto.Message{ID: msg.ID, SessionID: msg.SessionID, Result: jsonv2.Value(res)})
				})
			case <-quit:
				return
			}
		}
	})
	return func() { close(quit); wg.Wait() }
}

func orNull(v jsonv2.Value) string {
	if len(v) == 0 {
		return "null"
	}
	return string(v)
}

// readCD is the next message chromedp reads from m.
func readCD(t *testing.T, m *Mux) *cdproto.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msg := new(cdproto.Message)
	require.NoError(t, m.Read(ctx, msg), "chromedp read nothing")
	return msg
}

// requireMarker reads the next message chromedp sees and requires it to be
// the marker name.
func requireMarker(t *testing.T, m *Mux, name string) {
	t.Helper()
	msg := readCD(t, m)
	require.Equal(t, cdproto.MethodType("Test.marker"), msg.Method, "chromedp saw %s %s before the marker", msg.Method, msg.Params)
	require.JSONEq(t, `{"name":"`+name+`"}`, string(msg.Params))
}

// startMux is a Mux on a fake browser, closed at the end of the test.
func startMux(t *testing.T, hooks Hooks) (*Mux, *fakeBrowser) {
	t.Helper()
	f := newFakeBrowser()
	m := New(f, hooks)
	t.Cleanup(func() {
		_ = m.Close()
		<-m.Done()
	})
	return m, f
}

// yes is true, for the optional fields of cdproto's params.
var yes = true

func attachedEvent(session target.SessionID, id target.ID, waiting bool) *target.EventAttachedToTarget {
	return &target.EventAttachedToTarget{SessionID: session, WaitingForDebugger: waiting,
		TargetInfo: &target.Info{TargetID: id, Type: "page", URL: "about:blank"}}
}

// chromedp's replies and events pass through unchanged, in order.
func TestChromedpTrafficPassesThrough(t *testing.T) {
	m, f := startMux(t, Hooks{})
	ctx := context.Background()
	require.NoError(t, m.Write(ctx, &cdproto.Message{ID: 7, SessionID: "S", Method: "Page.navigate", Params: jsonv2.Value(`{"url":"about:blank"}`)}))
	got := f.next(t)
	assert.Equal(t, int64(7), got.ID)
	assert.Equal(t, target.SessionID("S"), got.SessionID)
	assert.Equal(t, cdproto.MethodType("Page.navigate"), got.Method)
	assert.JSONEq(t, `{"url":"about:blank"}`, string(got.Params))

	f.emit(&cdproto.Message{ID: 7, SessionID: "S", Result: jsonv2.Value(`{"frameId":"F"}`)})
	f.event(t, "S", "Page.loadEventFired", map[string]any{"timestamp": 1})
	reply := readCD(t, m)
	assert.Equal(t, int64(7), reply.ID)
	assert.JSONEq(t, `{"frameId":"F"}`, string(reply.Result))
	ev := readCD(t, m)
	assert.Equal(t, cdproto.MethodType("Page.loadEventFired"), ev.Method)
	assert.Equal(t, target.SessionID("S"), ev.SessionID)
}

// The Mux's own commands take ids from IDBase up, on the session asked
// for; their replies go to the caller and never to chromedp.
func TestCallUsesItsOwnIDsAndKeepsItsReplies(t *testing.T) {
	m, f := startMux(t, Hooks{})
	ctx := context.Background()
	done := make(chan error, 1)
	var res []byte
	go func() {
		var err error
		res, err = m.Call(ctx, "OWN", "Runtime.evaluate", map[string]any{"expression": "1+1"})
		done <- err
	}()
	cmd := f.next(t)
	assert.Equal(t, IDBase+1, cmd.ID, "the first own id")
	assert.Equal(t, target.SessionID("OWN"), cmd.SessionID)
	assert.Equal(t, cdproto.MethodType("Runtime.evaluate"), cmd.Method)
	assert.JSONEq(t, `{"expression":"1+1"}`, string(cmd.Params))
	f.emit(&cdproto.Message{ID: cmd.ID, SessionID: "OWN", Result: jsonv2.Value(`{"result":{"value":2}}`)})
	require.NoError(t, <-done)
	assert.JSONEq(t, `{"result":{"value":2}}`, string(res))
	f.marker(t, "after")
	requireMarker(t, m, "after")

	// A command with no params sends none; the next id follows.
	errc := m.Go(ctx, "", "Target.getTargets", nil)
	cmd = f.next(t)
	assert.Equal(t, IDBase+2, cmd.ID)
	assert.Empty(t, cmd.Params)
	f.emit(&cdproto.Message{ID: cmd.ID, Result: jsonv2.Value(`{}`)})
	require.NoError(t, <-errc)
}

// The browser's error answer to an own command is the caller's error, as
// a *cdproto.Error under the method's name.
func TestCallReturnsTheBrowsersError(t *testing.T) {
	m, f := startMux(t, Hooks{})
	errc := m.Go(context.Background(), "S", "Fetch.enable", nil)
	cmd := f.next(t)
	f.emit(&cdproto.Message{ID: cmd.ID, SessionID: "S", Error: &cdproto.Error{Code: -32001, Message: "Session with given id not found."}})
	err := <-errc
	require.Error(t, err)
	var cerr *cdproto.Error
	require.ErrorAs(t, err, &cerr)
	assert.Equal(t, int64(-32001), cerr.Code)
	assert.Contains(t, err.Error(), "Fetch.enable")
}

// A command whose params cannot be marshalled is never sent.
func TestCallWithBadParamsSendsNothing(t *testing.T) {
	m, f := startMux(t, Hooks{})
	_, err := m.Call(context.Background(), "", "Bad.params", map[string]any{"f": func() {}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Bad.params")
	require.NoError(t, m.Write(context.Background(), &cdproto.Message{ID: 1, Method: "Test.next"}))
	assert.Equal(t, cdproto.MethodType("Test.next"), f.next(t).Method, "the bad command reached the browser")
}

// A caller that stops waiting gets its context's error; the late reply is
// dropped, never handed to chromedp as one of its own.
func TestCallCancelledDropsTheLateReply(t *testing.T) {
	m, f := startMux(t, Hooks{})
	ctx, cancel := context.WithCancel(context.Background())
	errc := m.Go(ctx, "S", "Page.reload", nil)
	cmd := f.next(t)
	cancel()
	err := <-errc
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "Page.reload")
	f.emit(&cdproto.Message{ID: cmd.ID, SessionID: "S", Result: jsonv2.Value(`{}`)})
	f.marker(t, "after")
	requireMarker(t, m, "after")
}

// A write that fails is the caller's error, wrapped, and leaves nothing
// pending.
func TestCallWriteFails(t *testing.T) {
	m, f := startMux(t, Hooks{})
	broken := errors.New("broken pipe")
	f.writeErr.Store(broken)
	_, err := m.Call(context.Background(), "S", "Page.enable", nil)
	require.ErrorIs(t, err, broken)
	m.mu.Lock()
	assert.Empty(t, m.pend, "a failed write leaves no pending reply")
	m.mu.Unlock()
}

// A session OnAttach claims is the Mux's: its events and its children's
// attach events never reach chromedp (OnEvent still sees them), and its
// detach goes to OnDetach only (the attach event on the browser session
// still reaches chromedp). A session OnAttach declines stays
// chromedp's.
func TestOwnedSessionsAreHiddenFromChromedp(t *testing.T) {
	type attach struct {
		parent target.SessionID
		child  target.SessionID
	}
	var mu sync.Mutex
	var attaches []attach
	var seen []string
	var detached []target.SessionID
	m, f := startMux(t, Hooks{
		OnAttach: func(parent target.SessionID, ev *target.EventAttachedToTarget) bool {
			mu.Lock()
			defer mu.Unlock()
			attaches = append(attaches, attach{parent, ev.SessionID})
			return ev.TargetInfo.Type != "service_worker"
		},
		OnEvent: func(session target.SessionID, msg *cdproto.Message) bool {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, string(session)+" "+string(msg.Method))
			return false
		},
		OnDetach: func(session target.SessionID) {
			mu.Lock()
			defer mu.Unlock()
			detached = append(detached, session)
		},
	})
	// A popup, paused: the guard's.
	f.event(t, "", target.AttachedToTarget.Method, attachedEvent("POP", "T-POP", true))
	f.event(t, "POP", "Network.requestWillBeSent", map[string]any{"requestId": "1"})
	// A frame of the popup: its attach event comes on the owned session.
	f.event(t, "POP", target.AttachedToTarget.Method, attachedEvent("FRAME", "T-FRAME", true))
	f.event(t, "FRAME", "Runtime.executionContextCreated", map[string]any{})
	f.marker(t, "owned")
	// The attach event itself is the browser session's: chromedp sees the
	// popup come (its own listeners may wait for it), never its traffic.
	ev := readCD(t, m)
	assert.Equal(t, cdproto.MethodType(target.AttachedToTarget.Method), ev.Method)
	assert.JSONEq(t, `"POP"`, mustField(t, ev.Params, "sessionId"))
	requireMarker(t, m, "owned")

	// A worker the hook declines: chromedp's, and so are its events.
	sw := attachedEvent("SW", "T-SW", true)
	sw.TargetInfo.Type = "service_worker"
	f.event(t, "", target.AttachedToTarget.Method, sw)
	f.event(t, "SW", "Runtime.consoleAPICalled", map[string]any{})
	ev = readCD(t, m)
	assert.Equal(t, cdproto.MethodType(target.AttachedToTarget.Method), ev.Method)
	ev = readCD(t, m)
	assert.Equal(t, target.SessionID("SW"), ev.SessionID)

	// Detaches: an owned session's goes to OnDetach only; chromedp's to it.
	f.event(t, "", target.DetachedFromTarget.Method, &target.EventDetachedFromTarget{SessionID: "POP"})
	f.event(t, "", target.DetachedFromTarget.Method, &target.EventDetachedFromTarget{SessionID: "SW"})
	ev = readCD(t, m)
	assert.Equal(t, cdproto.MethodType(target.DetachedFromTarget.Method), ev.Method)
	assert.JSONEq(t, `{"sessionId":"SW"}`, string(ev.Params), "chromedp saw the detach of a session it never knew")
	// Once detached, the id is no longer the Mux's: a late event on it
	// is chromedp's to drop.
	f.event(t, "POP", "Inspector.detached", map[string]any{})
	ev = readCD(t, m)
	assert.Equal(t, target.SessionID("POP"), ev.SessionID)

	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []attach{{"", "POP"}, {"POP", "FRAME"}, {"", "SW"}}, attaches)
	assert.Equal(t, []target.SessionID{"POP"}, detached)
	assert.Contains(t, seen, "POP Network.requestWillBeSent", "OnEvent sees owned sessions' events")
	assert.Contains(t, seen, "FRAME Runtime.executionContextCreated")
	detaches := 0
	for _, e := range seen {
		if e == " "+target.DetachedFromTarget.Method {
			detaches++
		}
	}
	assert.Equal(t, 1, detaches, "OnEvent sees chromedp's session's detach; an owned session's is OnDetach's alone")
}

// The session chromedp attaches itself (Target.attachToTarget) is never
// offered to OnAttach: it stays chromedp's, once per command. An
// auto-attach of the same target (paused) is offered.
func TestChromedpsOwnAttachStaysChromedps(t *testing.T) {
	var offered atomic.Int32
	m, f := startMux(t, Hooks{OnAttach: func(target.SessionID, *target.EventAttachedToTarget) bool {
		offered.Add(1)
		return true
	}})
	ctx := context.Background()
	params, err := jsonv2.Marshal(&target.AttachToTargetParams{TargetID: "T1", Flatten: &yes}, chromedp.DefaultMarshalOptions)
	require.NoError(t, err)
	require.NoError(t, m.Write(ctx, &cdproto.Message{ID: 3, Method: target.CommandAttachToTarget, Params: params}))
	f.next(t)
	f.event(t, "", target.AttachedToTarget.Method, attachedEvent("CD1", "T1", false))
	ev := readCD(t, m)
	assert.JSONEq(t, `"CD1"`, mustField(t, ev.Params, "sessionId"))
	f.event(t, "CD1", "Page.frameNavigated", map[string]any{})
	assert.Equal(t, target.SessionID("CD1"), readCD(t, m).SessionID, "chromedp's session's events are chromedp's")
	assert.Zero(t, offered.Load())

	// The one command is matched once: a second attach event of T1 is
	// not chromedp's.
	f.event(t, "", target.AttachedToTarget.Method, attachedEvent("CD2", "T1", false))
	f.event(t, "", target.AttachedToTarget.Method, attachedEvent("AUTO", "T2", true))
	f.event(t, "AUTO", "Page.frameNavigated", map[string]any{})
	assert.Equal(t, cdproto.MethodType(target.AttachedToTarget.Method), readCD(t, m).Method)
	assert.Equal(t, cdproto.MethodType(target.AttachedToTarget.Method), readCD(t, m).Method)
	f.marker(t, "after")
	requireMarker(t, m, "after")
	assert.Equal(t, int32(2), offered.Load())
}

func mustField(t *testing.T, obj jsonv2.Value, name string) string {
	t.Helper()
	var fields map[string]jsonv2.Value
	require.NoError(t, jsonv2.Unmarshal(obj, &fields))
	return string(fields[name])
}

// OnEvent consuming an event keeps it from chromedp; the next passes.
func TestOnEventConsumes(t *testing.T) {
	m, f := startMux(t, Hooks{OnEvent: func(_ target.SessionID, msg *cdproto.Message) bool {
		return msg.Method == "Fetch.requestPaused"
	}})
	f.event(t, "S", "Fetch.requestPaused", map[string]any{"requestId": "r"})
	f.marker(t, "after")
	requireMarker(t, m, "after")
}

// Refuse stops chromedp's command before the browser: chromedp reads the
// refusal as the browser's error answer to it, on its id and session.
func TestRefuseAnswersChromedpAndSendsNothing(t *testing.T) {
	refused := errors.New("refused: the guard is not on this target")
	m, f := startMux(t, Hooks{Refuse: func(msg *cdproto.Message) error {
		if msg.Method == "Page.navigate" {
			return refused
		}
		return nil
	}})
	ctx := context.Background()
	require.NoError(t, m.Write(ctx, &cdproto.Message{ID: 11, SessionID: "S", Method: "Page.navigate", Params: jsonv2.Value(`{"url":"http://169.254.169.254/"}`)}))
	require.NoError(t, m.Write(ctx, &cdproto.Message{ID: 12, SessionID: "S", Method: "Page.enable"}))
	assert.Equal(t, int64(12), f.next(t).ID, "the refused command reached the browser")
	reply := readCD(t, m)
	assert.Equal(t, int64(11), reply.ID)
	assert.Equal(t, target.SessionID("S"), reply.SessionID)
	require.NotNil(t, reply.Error)
	assert.Equal(t, refused.Error(), reply.Error.Message)
}

// chromedp's auto-attach on a page session is made to wait for the
// debugger, so that nothing runs before the guard is on it; every other
// field is kept. The browser-level one, and a turning off, pass as sent.
func TestSetAutoAttachOnSessionsWaitsForTheDebugger(t *testing.T) {
	m, f := startMux(t, Hooks{})
	ctx := context.Background()
	write := func(session target.SessionID, p *target.SetAutoAttachParams) *cdproto.Message {
		t.Helper()
		b, err := jsonv2.Marshal(p, chromedp.DefaultMarshalOptions)
		require.NoError(t, err)
		require.NoError(t, m.Write(ctx, &cdproto.Message{ID: 5, SessionID: session, Method: target.CommandSetAutoAttach, Params: b}))
		return f.next(t)
	}
	decode := func(msg *cdproto.Message) target.SetAutoAttachParams {
		t.Helper()
		var p target.SetAutoAttachParams
		require.NoError(t, jsonv2.Unmarshal(msg.Params, &p, chromedp.DefaultUnmarshalOptions))
		return p
	}
	got := decode(write("PAGE", &target.SetAutoAttachParams{AutoAttach: true, Flatten: &yes}))
	assert.True(t, got.AutoAttach)
	assert.True(t, got.WaitForDebuggerOnStart, "a page's auto-attach runs its children before the guard")
	assert.Equal(t, &yes, got.Flatten, "the other fields are kept")

	got = decode(write("", &target.SetAutoAttachParams{AutoAttach: true, Flatten: &yes}))
	assert.False(t, got.WaitForDebuggerOnStart, "the browser-level command is chromedp's to make")
	got = decode(write("PAGE", &target.SetAutoAttachParams{}))
	assert.False(t, got.AutoAttach)
	assert.False(t, got.WaitForDebuggerOnStart)
}

// Close closes the connection once however often it is called; the
// reader ends, chromedp reads the end, and every command pending or sent
// afterwards fails with ErrClosed.
func TestCloseEndsEverything(t *testing.T) {
	f := newFakeBrowser()
	m := New(f, Hooks{})
	pending := m.Go(context.Background(), "S", "Page.enable", nil)
	f.next(t)
	f.event(t, "S", "Page.loadEventFired", map[string]any{})
	require.NoError(t, m.Close())
	require.NoError(t, m.Close())
	<-m.Done()
	assert.Equal(t, int32(1), f.closes.Load(), "the connection is closed once")
	require.ErrorIs(t, <-pending, ErrClosed)
	_, err := m.Call(context.Background(), "S", "Page.reload", nil)
	require.ErrorIs(t, err, ErrClosed)

	// What the browser sent before the end still reaches chromedp, then
	// the end.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var msg cdproto.Message
	read := 0
	for {
		if err = m.Read(ctx, &msg); err != nil {
			break
		}
		read++
	}
	assert.ErrorIs(t, err, io.EOF)
	assert.Equal(t, 1, read, "the event sent before the end")
}

// A connection that breaks is chromedp's error, not a clean end.
func TestBrokenConnectionIsChromedpsError(t *testing.T) {
	f := newFakeBrowser()
	broken := errors.New("websocket: close 1006 (abnormal closure)")
	f.end = broken
	m := New(f, Hooks{})
	_ = f.Close()
	<-m.Done()
	err := m.Read(context.Background(), new(cdproto.Message))
	assert.ErrorIs(t, err, broken)
	_ = m.Close()
}

// A refusal after the connection ended neither blocks nor panics: there
// is no chromedp reader left to answer.
func TestRefuseAfterTheEnd(t *testing.T) {
	f := newFakeBrowser()
	m := New(f, Hooks{Refuse: func(*cdproto.Message) error { return errors.New("refused") }})
	require.NoError(t, m.Close())
	<-m.Done()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 100 {
		require.NoError(t, m.Write(ctx, &cdproto.Message{ID: int64(i + 1), Method: "Page.navigate"}))
	}
	require.NoError(t, ctx.Err(), "a refusal blocked")
}

// Many callers, chromedp and the browser at once: every own command gets
// its own reply whatever the order the browser answers in, chromedp's
// traffic is untouched, and the connection never sees two writes at once.
func TestConcurrentCallsGetTheirOwnReplies(t *testing.T) {
	m, f := startMux(t, Hooks{Refuse: func(msg *cdproto.Message) error {
		if strings.HasPrefix(string(msg.Method), "Refused.") {
			return errors.New("refused")
		}
		return nil
	}})
	fromCD := make(chan *cdproto.Message, 4096)
	stop := f.answerAll(fromCD)
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	const callers, calls = 16, 25
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := range calls {
				session := target.SessionID(fmt.Sprintf("S%d", c))
				res, err := m.Call(ctx, session, "Runtime.evaluate", map[string]any{"caller": c, "call": i})
				if !assert.NoError(t, err) {
					return
				}
				var got struct {
					Session string `json:"session"`
					Params  struct {
						Caller int `json:"caller"`
						Call   int `json:"call"`
					} `json:"params"`
				}
				if assert.NoError(t, jsonv2.Unmarshal(res, &got)) {
					assert.Equal(t, string(session), got.Session)
					assert.Equal(t, c, got.Params.Caller, "another caller's reply")
					assert.Equal(t, i, got.Params.Call, "another call's reply")
				}
			}
		})
	}
	// chromedp writes at the same time: half its commands refused.
	const cdCommands = 200
	wg.Go(func() {
		for i := range cdCommands {
			method := "Page.enable"
			if i%2 == 1 {
				method = "Refused.command"
			}
			assert.NoError(t, m.Write(ctx, &cdproto.Message{ID: int64(i + 1), Method: cdproto.MethodType(method)}))
		}
	})
	refusals := make(chan int64, cdCommands)
	wg.Go(func() {
		for range cdCommands / 2 {
			msg := new(cdproto.Message)
			if !assert.NoError(t, m.Read(ctx, msg)) {
				return
			}
			assert.NotNil(t, msg.Error)
			refusals <- msg.ID
		}
	})
	wg.Wait()
	close(refusals)
	for id := range refusals {
		assert.Equal(t, int64(0), id%2, "the refusal of command %d", id)
	}
	assert.Len(t, fromCD, cdCommands/2, "chromedp's commands that reached the browser")
	for len(fromCD) > 0 {
		assert.Equal(t, cdproto.MethodType("Page.enable"), (<-fromCD).Method)
	}
	assert.False(t, f.overlap.Load(), "two writes on the connection at once")
	m.mu.Lock()
	assert.Empty(t, m.pend)
	m.mu.Unlock()
}
