package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// abandonRun opens n MCP sessions, parallel at a time, each making one
// navigate and then going away without ending its session (no DELETE, its
// connections dropped), as a client process that dies does. It prints the
// server's memory as the sessions pile up: with the server's caps, the
// Chromium memory levels off.
func abandonRun(ctx context.Context, bin string, extra []string, logTo io.Writer, page string, n, parallel int, callTimeout time.Duration) error {
	srv, err := startServer(ctx, bin, extra, logTo)
	if err != nil {
		return err
	}
	defer srv.stop()
	fmt.Printf("%d sessions opened and abandoned, %d at a time; server flags %q; load %s\n", n, parallel, strings.Join(extra, " "), loadavg())
	var ok, busy, failed atomic.Int64
	var samples []string
	var mu sync.Mutex
	details := map[string]int{}
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			o, detail := abandonOne(ctx, srv.url, page, callTimeout)
			switch o {
			case outcomeOK:
				ok.Add(1)
			case outcomeBusy:
				busy.Add(1)
			default:
				failed.Add(1)
			}
			if detail != "" {
				mu.Lock()
				details[detail]++
				mu.Unlock()
			}
		})
		if (i+1)%100 == 0 {
			rss, chrom := srv.current()
			samples = append(samples, fmt.Sprintf("after %d: server RSS %d MB, Chromium PSS %d MB", i+1, rss>>20, chrom>>20))
		}
	}
	wg.Wait()
	time.Sleep(2 * time.Second) // the last evictions' renderers go
	rss, chrom := srv.current()
	peakRSS, peakChrom := srv.peaks()
	for _, s := range samples {
		fmt.Println("  " + s)
	}
	fmt.Printf("  at the end: server RSS %d MB, Chromium PSS %d MB; peaks: server RSS %d MB, Chromium PSS %d MB\n", rss>>20, chrom>>20, peakRSS>>20, peakChrom>>20)
	for _, d := range slices.Sorted(maps.Keys(details)) {
		fmt.Printf("  %d× %s\n", details[d], d)
	}
	fmt.Printf("  navigates: %d ok, %d busy, %d failed (load %s)\n", ok.Load(), busy.Load(), failed.Load(), loadavg())
	if failed.Load() > 0 {
		return fmt.Errorf("%d abandoned sessions failed their navigate", failed.Load())
	}
	return nil
}

// abandonOne is one abandoned session.
func abandonOne(ctx context.Context, endpoint, page string, callTimeout time.Duration) (outcome, string) {
	tr := &http.Transport{}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "hybroute-load-abandon", Version: "v0"}, nil).
		Connect(cctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: tr}, DisableStandaloneSSE: true}, nil)
	cancel()
	if err != nil {
		return outcomeFailed, "connect: " + err.Error()
	}
	cctx, cancel = context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "browser_navigate", Arguments: map[string]any{"url": page}})
	// Gone: no close, no DELETE; its connections drop.
	tr.CloseIdleConnections()
	switch {
	case err != nil:
		return outcomeFailed, err.Error()
	case res.IsError && strings.HasPrefix(textOf(res), "busy:"):
		return outcomeBusy, firstLine(textOf(res))
	case res.IsError:
		return outcomeFailed, firstLine(textOf(res))
	}
	return outcomeOK, ""
}
