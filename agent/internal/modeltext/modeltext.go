// Package modeltext writes values the way the toolset's results show them
// to a model: quoted on one line and bounded, byte counts in words, URLs
// with their credentials redacted. The toolset and its engines share it,
// so that a name, a size or a URL reads the same in every tool's result.
package modeltext

import (
	"fmt"
	"strings"

	"github.com/chromedp/cdproto/runtime"

	"github.com/hybroute/hybroute/internal/redact"
)

// Error is an error whose text is written for the model: what the model
// did wrong or can do something about. A tool's result shows it as it is.
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

// Errorf is an Error of the formatted text.
func Errorf(format string, args ...any) error {
	return &Error{msg: fmt.Sprintf(format, args...)}
}

// ExceptionText is what a page's exception says, bounded.
func ExceptionText(d *runtime.ExceptionDetails) string {
	msg := d.Text
	if d.Exception != nil && d.Exception.Description != "" {
		msg = d.Exception.Description
	} else if d.Exception != nil && len(d.Exception.Value) > 0 {
		msg = d.Text + " " + string(d.Exception.Value)
	}
	return Cut(PageText(msg), 2000)
}

// Quote quotes s for the model on one line, cut to max runes.
func Quote(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// URL is a URL as a tool result shows it: the credentials it carries (a
// token in the query, an OAuth access_token in the fragment, a userinfo
// password) redacted by the list errors use, and bounded.
func URL(u string) string { return redact.Display(u) }

// PageText is text a page wrote (a console message, an exception's stack,
// a script's result, a dialog's message) as a tool result shows it: every
// URL written in it redacted as URL redacts a URL, so that Chromium's own
// texts ("at f (http://h/app.js?token=…:1:33)", "WebSocket connection to
// 'ws://h/?token=…' failed") show no more than the network list does. It
// is best effort against a page's script, which can re-encode a URL so
// that it reads as no URL.
func PageText(s string) string { return redact.DisplayText(s) }

// Size writes a byte count for the model.
func Size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// Cut shortens s to n bytes at a rune boundary.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
