package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent/internal/modeltext"
)

// toolDef is one tool: what the model reads about it and what runs.
type toolDef struct {
	name, desc, schema string
	run                func(t *Toolset, ctx context.Context, s *session, key string, args json.RawMessage) Result
}

const noArgs = `{"type":"object","properties":{}}`

// toolDefs is every family's tools, each defined in its family's file, in
// the order a model reads them (toolOrder).
var toolDefs = inOrder(toolOrder, slices.Concat(
	navTools,        // nav.go: navigate, back, forward, reload, resize
	snapshotTools,   // snapshot.go
	inputTools,      // input.go: click, type, press, scroll
	pointerTools,    // pointer.go: hover, drag
	formTools,       // form.go: select_option, fill_form
	uploadTools,     // upload.go
	waitTools,       // waitfor.go
	screenshotTools, // screenshot.go
	consoleTools,    // console.go
	execTools,       // exec.go
	networkTools,    // network.go
	downloadTools,   // download.go
	pdfTools,        // pdf.go
	tabTools,        // tabs.go
	dialogTools,     // dialogs.go
	statusTools,     // status.go
	stateTools,      // state.go
	closeTools,      // close.go
	secretTools,     // secrets.go
	handoffTools,    // handoff.go
))

// toolOrder is the order of the tool list: a model's prompt and a
// client's cache hold it, so a new tool goes at the end.
var toolOrder = []string{
	ToolNavigate, ToolSnapshot, ToolClick, ToolType, ToolPress, ToolScroll, ToolBack, ToolScreenshot,
	ToolConsole, ToolExec, ToolNetworkRequests, ToolDownloads, ToolPDFSave, ToolClose, ToolStatus,
	ToolStateSave, ToolStateLoad, ToolTabs, ToolForward, ToolReload, ToolResize,
	ToolSelectOption, ToolFillForm, ToolHover, ToolDrag, ToolFileUpload, ToolWaitFor, ToolHandleDialog,
	ToolTypeSecret,
	ToolHandoff,
}

// inOrder is defs in the order of names; a tool missing from either is a
// programming error, caught when the package loads.
func inOrder(names []string, defs []toolDef) []toolDef {
	if len(names) != len(defs) {
		panic(fmt.Sprintf("agent: %d tools defined, %d in toolOrder", len(defs), len(names)))
	}
	out := make([]toolDef, 0, len(defs))
	for _, n := range names {
		i := slices.IndexFunc(defs, func(d toolDef) bool { return d.name == n })
		if i < 0 {
			panic("agent: tool " + n + " of toolOrder is not defined")
		}
		out = append(out, defs[i])
	}
	return out
}

var toolByName = func() map[string]*toolDef {
	m := make(map[string]*toolDef, len(toolDefs))
	for i := range toolDefs {
		m[toolDefs[i].name] = &toolDefs[i]
	}
	return m
}()

// decode reads the arguments strictly: a misspelt argument is an error the
// model can fix, not something silently ignored.
func decode(args json.RawMessage, v any) error {
	d := json.NewDecoder(bytes.NewReader(args))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return modeltext.Errorf("invalid arguments: %v", strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// finishCall is the common end of a tool: describe an error, or render the
// body, with where the call ran.
func (t *Toolset) finishCall(s *session, key string, res hybroute.Result, c *call, err error, body func() string) Result {
	w, note := s.finish(res, c)
	if err == nil && c != nil && c.pageErr != nil {
		var ne *hybroute.NetworkError
		if errors.As(c.pageErr, &ne) {
			note = joinNotes(note, "Note: the page is the browser's error page: its last load failed: "+networkText(ne))
		}
	}
	if err != nil && dialogOpened(err, res) {
		// The action went through: the page answered it with a dialog,
		// which waits for the model (dialogs.go).
		return result(w, note, dialogWaits, false)
	}
	if err != nil && s.gone.Load() && !errors.Is(err, hybroute.ErrReleased) {
		// browser_close or the client's going ended the session while
		// the call ran: that is why it failed, whatever the browser said.
		err = fmt.Errorf("%w: %w", hybroute.ErrReleased, err)
	}
	if err != nil {
		msg := describe(err, c, key)
		if c != nil {
			msg += c.refused
		}
		return result(w, note, msg, true)
	}
	text := ""
	if body != nil {
		text = body()
	}
	if c != nil {
		text += c.refused
	}
	if c != nil && c.downloads != "" {
		if c.downloadNav {
			// The navigation the tool saw was the download's: no new page.
			text = strings.Replace(text, navNote(true), " The link led to a download; the page stayed as it was.", 1)
		}
		text += "\n\n" + c.downloads
	}
	return result(w, note, text, false)
}

// joinNotes puts note b after note a.
func joinNotes(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n\n" + b
}

func argError(err error) Result { return toolError(describe(err, nil, "")) }

// withNavFlag runs act watching for a navigation it starts, and records
// whether one started.
func withNavFlag(ctx context.Context, c *call, navigated *bool, act func() error) error {
	return watchAct(ctx, c, navigated, act, true)
}

// settle lets the page run what the action queued: a form submitted by
// Enter, or a navigation a click handler starts, is requested in a task of
// its own, after the input event's reply. One frame and one task later it
// has been requested (and the browser reports it before it answers). A
// navigation that tears down the page during the wait ends it early.
func settle(ctx context.Context) {
	_, _ = chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{
		// A hidden page gets no frames: the timer bounds the wait.
		Expression:   "new Promise(r => { requestAnimationFrame(() => setTimeout(r, 0)); setTimeout(r, 100); })",
		AwaitPromise: new(true),
	})
}

func navNote(navigated bool) string {
	if navigated {
		return " The page navigated; take a new snapshot."
	}
	return ""
}
