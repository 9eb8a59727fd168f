package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/hybroute/hybroute/mcpserver"
)

// metricsServer serves the router's metrics for Prometheus: the
// OpenTelemetry meter provider the router counts on, read by the
// OpenTelemetry Prometheus exporter into a registry of its own (not the
// process-global one, so nothing else leaks onto the page).
type metricsServer struct {
	provider *sdkmetric.MeterProvider
	addr     net.Addr
	srv      *http.Server
	done     chan error
}

// startMetrics listens on addr (a bare :port binds 127.0.0.1) and serves
// /metrics. A non-loopback address is allowed with a warning: the page
// holds only bounded names and counts, no URL or key, but it is no one
// else's business. It answers only its own host (and allowHosts), as the
// MCP endpoint does: a web page the user visits must not read it through
// DNS rebinding.
func startMetrics(addr string, allowHosts []string, stderr io.Writer) (*metricsServer, error) {
	addr = loopbackDefault(addr)
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, fmt.Errorf("metrics exporter: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	m := &metricsServer{
		provider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp)),
		addr:     ln.Addr(),
		done:     make(chan error, 1),
	}
	if tcp, ok := m.addr.(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		fmt.Fprintf(stderr, "hybroute mcp: WARNING: serving metrics on %s, which is not loopback\n", m.addr)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	m.srv = &http.Server{Handler: mcpserver.HostGuard(hostNames(addr, allowHosts), mux), ReadHeaderTimeout: 10 * time.Second}
	go func() { m.done <- m.srv.Serve(ln) }()
	fmt.Fprintf(stderr, "hybroute mcp: serving metrics on http://%s/metrics\n", m.addr)
	return m, nil
}

// close stops the server and the meter provider.
func (m *metricsServer) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := m.srv.Shutdown(ctx)
	if serr := <-m.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return errors.Join(err, m.provider.Shutdown(ctx))
}
