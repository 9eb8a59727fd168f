package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute/agent/internal/modeltext"
)

const ToolConsole = "browser_console"

var consoleTools = []toolDef{
	{
		name:   ToolConsole,
		desc:   "Read the console messages and uncaught exceptions since the last read.",
		schema: `{"type":"object","properties":{"clear":{"type":"boolean","description":"false: show them again next read","default":true}}}`,
		run:    (*Toolset).console,
	},
}

// consoleBuf keeps a session's console messages and uncaught exceptions
// between two reads, collected in the background from every tab the
// session's calls ran in. It keeps the newest limit messages.
type consoleBuf struct {
	mu      sync.Mutex
	limit   int
	msgs    []consoleMsg
	dropped int
}

// consoleMsg is the part of a message the model reads; the protocol's
// argument objects are not kept.
type consoleMsg struct {
	typ  chromedp.ConsoleType
	text string
	url  string
	line int64
}

func (b *consoleBuf) add(m chromedp.ConsoleMessage) {
	text := m.Text
	if len(text) > maxConsoleText {
		text = text[:maxConsoleText] + "…"
	}
	text = modeltext.PageText(text)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.limit > 0 && len(b.msgs) >= b.limit {
		n := len(b.msgs) - b.limit + 1
		b.msgs = append(b.msgs[:0], b.msgs[n:]...)
		b.dropped += n
	}
	b.msgs = append(b.msgs, consoleMsg{typ: m.Type, text: text, url: m.URL, line: m.Line})
}

const maxConsoleText = 2000

// read renders the messages since the last read; clear forgets them.
func (b *consoleBuf) read(clear bool) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.msgs) == 0 && b.dropped == 0 {
		return "No console messages since the last read."
	}
	var sb strings.Builder
	if b.dropped > 0 {
		fmt.Fprintf(&sb, "(%d older messages were dropped)\n", b.dropped)
	}
	for _, m := range b.msgs {
		label := string(m.typ)
		if m.typ == chromedp.ConsoleException {
			label = "uncaught exception"
		}
		fmt.Fprintf(&sb, "[%s] %s", label, m.text)
		if m.url != "" {
			fmt.Fprintf(&sb, " (%s:%d)", modeltext.URL(m.url), m.line+1)
		}
		sb.WriteByte('\n')
	}
	if clear {
		b.msgs = b.msgs[:0]
		b.dropped = 0
	}
	return strings.TrimRight(sb.String(), "\n")
}

func (t *Toolset) console(ctx context.Context, s *session, key string, args json.RawMessage) Result {
	a := struct {
		Clear *bool `json:"clear"`
	}{}
	if err := decode(args, &a); err != nil {
		return argError(err)
	}
	clear := a.Clear == nil || *a.Clear
	var text string
	res, c, err := t.do(ctx, s, key, "", reads|drivesREST, func(ctx context.Context, c *call) error {
		if c.rest != nil {
			return errRESTConsole
		}
		text = s.console.read(clear)
		return nil
	})
	return t.finishCall(s, key, res, c, err, func() string { return text })
}
