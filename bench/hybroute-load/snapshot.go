package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// snapshotRun opens one MCP session on a page of n list items (a link and
// a button each), takes a snapshot of it, and prints the server's RSS
// before, at its peak during the snapshot, after it, and after the
// session is closed: what a snapshot of a huge page costs the server.
func snapshotRun(ctx context.Context, bin string, extra []string, logTo io.Writer, n int, callTimeout time.Duration) error {
	page, stopPage, err := serveBigPage(n)
	if err != nil {
		return err
	}
	defer stopPage()
	srv, err := startServer(ctx, bin, extra, logTo)
	if err != nil {
		return err
	}
	defer srv.stop()
	fmt.Printf("a snapshot of a page of %d items; server flags %q; load %s\n", n, strings.Join(extra, " "), loadavg())
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "hybroute-load-snapshot", Version: "v0"}, nil).
		Connect(cctx, &mcp.StreamableClientTransport{Endpoint: srv.url, DisableStandaloneSSE: true}, nil)
	cancel()
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	var text string
	call := func(name string, args map[string]any) (string, time.Duration, error) {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		start := time.Now()
		res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: name, Arguments: args})
		took := time.Since(start)
		if err != nil {
			return "", took, fmt.Errorf("%s: %w", name, err)
		}
		if res.IsError {
			return "", took, fmt.Errorf("%s: %s", name, firstLine(textOf(res)))
		}
		return textOf(res), took, nil
	}
	mb := func(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/(1<<20)) }
	_, took, err := call("browser_navigate", map[string]any{"url": page})
	if err != nil {
		return err
	}
	fmt.Printf("  navigate: %v\n", took.Round(time.Millisecond))
	before, _ := srv.current()
	srv.resetPeak()
	text, took, err = call("browser_snapshot", nil)
	if err != nil {
		return err
	}
	peak, _ := srv.peaks()
	after, _ := srv.current()
	fmt.Printf("  snapshot: %v, %d bytes of text\n", took.Round(time.Millisecond), len(text))
	fmt.Printf("  server RSS: %s before, %s at the peak, %s after (+%s)\n", mb(before), mb(peak), mb(after), mb(after-before))
	time.Sleep(10 * time.Second)
	later, _ := srv.current()
	fmt.Printf("  server RSS 10 s later: %s\n", mb(later))
	if _, _, err := call("browser_close", nil); err != nil {
		return err
	}
	_ = cs.Close()
	time.Sleep(10 * time.Second)
	closed, _ := srv.current()
	fmt.Printf("  server RSS 10 s after the session closed: %s (load %s)\n", mb(closed), loadavg())
	return nil
}

// serveBigPage serves a page of n list items on a loopback port.
func serveBigPage(n int) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		var b strings.Builder
		b.WriteString("<!doctype html><title>Catalogue</title><h1>Catalogue</h1><ul>")
		for i := range n {
			s := strconv.Itoa(i)
			b.WriteString(`<li><a href="/item/` + s + `">Item ` + s + `</a> <button>Add ` + s + `</button></li>`)
		}
		b.WriteString("</ul>")
		_, _ = io.WriteString(w, b.String())
	})}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String() + "/", func() { _ = srv.Close() }, nil
}
