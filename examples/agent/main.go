// Command agent is a scripted agent loop: it uses hybroute's browser toolset
// exactly as a model would (list the tools, call one, read the text it gets
// back, decide the next call), with a fixed script standing in for the
// model, against a shop page it serves on this machine.
//
//	go run ./examples/agent            # or: make agent-demo
//
// Everything stays on this machine: the page is served on loopback, the
// local Chromium's egress dialer refuses anything that is not loopback, and
// the one call that aims at a cloud metadata address is refused before any
// browser sees it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent"
	"github.com/hybroute/hybroute/internal/agenttest"
)

func main() {
	shot := flag.String("screenshot", filepath.Join(os.TempDir(), "hybroute-agent.png"), "where to write the screenshot the agent takes")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := run(ctx, os.Stdout, *shot); err != nil {
		log.Fatal(err)
	}
}

// model is the stand-in for a model: it reads each result and says what to
// call next. A real loop sends ts.Tools() to the model and gets these calls
// back from it.
type model struct {
	shopURL  string
	shotPath string
	step     int
	search   string // the search box's ref, read from a snapshot
	cart     string // the "Add to cart" button's ref
}

// next returns the next tool call, or "" when the task is done. last is the
// result of the previous call.
func (m *model) next(last agent.Result) (string, map[string]any, error) {
	m.step++
	switch m.step {
	case 1:
		// Models write addresses the way people type them.
		return agent.ToolNavigate, map[string]any{"url": m.shopURL}, nil
	case 2:
		return agent.ToolSnapshot, nil, nil
	case 3:
		m.search = findRef(last.Text, `searchbox "Search products"`)
		m.cart = findRef(last.Text, `button "Add to cart"`)
		if m.search == "" || m.cart == "" {
			return "", nil, errors.New("the snapshot has no search box or cart button")
		}
		return agent.ToolClick, map[string]any{"ref": m.cart, "element": "Add to cart button"}, nil
	case 4:
		return agent.ToolExec, map[string]any{"code": `document.getElementById("status").textContent`}, nil
	case 5:
		return agent.ToolType, map[string]any{"ref": m.search, "text": "red shoes", "submit": true}, nil
	case 6:
		return agent.ToolSnapshot, nil, nil
	case 7:
		return agent.ToolExec, map[string]any{"code": `const r = await fetch("/api/stock"); const {items} = await r.json(); return items.filter(i => i.left > 0).map(i => i.sku)`}, nil
	case 8:
		return agent.ToolScreenshot, nil, nil
	case 9:
		// A prompt-injected page told the "model" to read the instance's
		// credentials. The floor refuses, and says so in words.
		return agent.ToolNavigate, map[string]any{"url": "169.254.169.254/latest/meta-data/iam/security-credentials/"}, nil
	case 10:
		return agent.ToolConsole, nil, nil
	case 11:
		return agent.ToolClose, nil, nil
	}
	return "", nil, nil
}

var refLine = map[string]*regexp.Regexp{}

// findRef reads a ref off a snapshot line, as a model does.
func findRef(snapshot, element string) string {
	re, ok := refLine[element]
	if !ok {
		re = regexp.MustCompile(`(?m)^\s*- ` + regexp.QuoteMeta(element) + `.*\[ref=(e\d+)\]`)
		refLine[element] = re
	}
	if m := re.FindStringSubmatch(snapshot); m != nil {
		return m[1]
	}
	return ""
}

func run(ctx context.Context, out io.Writer, shotPath string) error {
	addr, stop, err := serveShop()
	if err != nil {
		return err
	}
	defer stop()

	router, err := hybroute.New(nil, // no cloud provider here: everything runs on local Chromium
		hybroute.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))),
		hybroute.WithEgressDialer(loopbackOnly),
	)
	if err != nil {
		return err
	}
	defer router.Close()
	ts := agent.New(router)
	defer ts.Close()

	fmt.Fprintf(out, "The model is given %d tools:", len(ts.Tools()))
	for _, t := range ts.Tools() {
		fmt.Fprintf(out, " %s", t.Name)
	}
	fmt.Fprintln(out)

	_, port, _ := net.SplitHostPort(addr)
	m := &model{shopURL: "localhost:" + port, shotPath: shotPath}
	var last agent.Result
	for {
		name, args, err := m.next(last)
		if err != nil {
			return fmt.Errorf("the model gave up: %w", err)
		}
		if name == "" {
			break
		}
		raw, _ := json.Marshal(args)
		if args == nil {
			raw = []byte("{}")
		}
		start := time.Now()
		last, err = ts.Call(ctx, "demo-agent", name, raw)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "\n→ %s %s   (%v)\n", name, raw, time.Since(start).Round(time.Millisecond))
		status := "ok"
		if last.IsError {
			status = "tool error"
		}
		fmt.Fprintf(out, "← %s:\n%s\n", status, indent(clip(last.Text, 24)))
		for _, img := range last.Images {
			if err := os.WriteFile(m.shotPath, img.Data, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(out, "  [image: %dx%d %s, written to %s]\n", img.Width, img.Height, img.MIMEType, m.shotPath)
		}
	}
	return nil
}

// clip keeps the first n lines of a result, as a transcript shows it.
func clip(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) <= n {
		return s
	}
	return strings.Join(lines[:n], "\n") + fmt.Sprintf("\n… (%d more lines)", len(lines)-n)
}

func indent(s string) string { return "  " + strings.ReplaceAll(s, "\n", "\n  ") }

// loopbackOnly is the local browser's egress dialer: the demo's page is on
// loopback, and nothing else may be dialled.
func loopbackOnly(ctx context.Context, network, addr string) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().Unmap().IsLoopback() {
		return nil, fmt.Errorf("demo: refusing to dial %s: the demo stays on this machine", addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// serveShop serves the shop (the one the toolset's tests work on) on a
// loopback port.
func serveShop() (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: agenttest.Shop(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), func() { _ = srv.Close() }, nil
}
