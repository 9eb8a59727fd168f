package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/hybroute/hybroute/provider"
)

// Provider is a router's provider.Provider decorated with its telemetry:
// the router calls its provider only through it, so every create and
// release is traced and counted in one place, and the provider clients
// themselves know nothing of telemetry. Name and the optional interfaces
// are asked of the provider itself (Router.provider).
type Provider struct {
	provider.Provider
	Metrics *Metrics
	Tracer  trace.Tracer
	Log     *slog.Logger
}

// call runs one provider request inside a span of its own and counts it. The span carries the gateway's receipt of the call
// (hybroute.provider.external_call_id) when it gave one: an id per call is
// a span's attribute, not a metric's label, whose values must stay few.
func (p Provider) call(ctx context.Context, op string, call func(ctx context.Context) (externalID string, err error)) error {
	ctx, span := p.Tracer.Start(ctx, "hybroute.provider."+op, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("hybroute.provider", p.Metrics.provider)))
	ext, err := call(ctx)
	status := providerStatus(err)
	span.SetAttributes(attribute.String("hybroute.provider.status", status))
	if ext != "" {
		span.SetAttributes(attribute.String("hybroute.provider.external_call_id", ext))
	}
	if err != nil {
		span.SetStatus(codes.Error, status)
	}
	span.End()
	p.Metrics.providerRequests.Add(ctx, 1, metric.WithAttributes(attribute.String("provider", p.Metrics.provider),
		attribute.String("operation", op), attribute.String("status", status)))
	return err
}

// CreateSession asks the provider for a session, counted and traced. A
// session with a gateway receipt is logged with it, so a bill and a
// session can be matched.
func (p Provider) CreateSession(ctx context.Context, key string) (*provider.Session, error) {
	var s *provider.Session
	err := p.call(ctx, "create", func(ctx context.Context) (string, error) {
		var err error
		s, err = p.Provider.CreateSession(ctx, key)
		if s != nil && err == nil {
			return s.ExternalCallID, nil
		}
		return externalCallID(err), err
	})
	if err == nil && s != nil && s.ExternalCallID != "" {
		p.Log.LogAttrs(ctx, slog.LevelInfo, "hybroute: cloud session created",
			slog.String("provider", p.Name()), slog.String("session", key),
			slog.String("id", s.ID), slog.String("external_call_id", s.ExternalCallID))
	}
	return s, err
}

// externalCallID is the gateway's receipt in a provider error, if any.
func externalCallID(err error) string {
	var pe *provider.Error
	if errors.As(err, &pe) {
		return pe.ExternalCallID
	}
	return ""
}

// ReleaseSession gives a provider session back, counted and traced.
func (p Provider) ReleaseSession(ctx context.Context, s *provider.Session) error {
	return p.call(ctx, "release", func(ctx context.Context) (string, error) {
		return "", p.Provider.ReleaseSession(ctx, s)
	})
}

// providerStatus is the status attribute of a provider request: "ok", the
// HTTP status of a refusal, or "error" when no answer came.
func providerStatus(err error) string {
	if err == nil {
		return "ok"
	}
	var pe *provider.Error
	if errors.As(err, &pe) && pe.Status != 0 {
		return strconv.Itoa(pe.Status)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timeout"
	}
	return "error"
}
