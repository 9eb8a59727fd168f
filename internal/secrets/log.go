package secrets

import (
	"context"
	"fmt"
	"log/slog"
)

// Handler returns h with the set's secrets scrubbed from every record's
// message and attributes (strings, errors and anything else that prints
// one, in groups too), before h sees them. With no secrets it is h.
func (s *Set) Handler(h slog.Handler) slog.Handler {
	if s.Len() == 0 || h == nil {
		return h
	}
	return &handler{h: h, s: s}
}

type handler struct {
	h slog.Handler
	s *Set
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.s.Scrub(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(as))
	for i, a := range as {
		clean[i] = h.attr(a)
	}
	return &handler{h: h.h.WithAttrs(clean), s: h.s}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{h: h.h.WithGroup(name), s: h.s}
}

// attr is a with its secrets scrubbed. A value of another kind than a
// string that prints a secret is logged as its scrubbed text.
func (h *handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.s.Scrub(v.String()))
	case slog.KindGroup:
		g := v.Group()
		out := make([]slog.Attr, len(g))
		for i, x := range g {
			out[i] = h.attr(x)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(out...)}
	case slog.KindAny:
		if text := fmt.Sprint(v.Any()); !h.s.Clean(text) {
			return slog.String(a.Key, h.s.Scrub(text))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
