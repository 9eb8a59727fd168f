package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent"
)

const mcpUsage = `Usage: hybroute mcp [flags]

Serves the browser tools (browser_navigate, browser_snapshot, browser_click,
browser_type, browser_press, browser_scroll, browser_back, browser_screenshot,
browser_console, browser_exec, browser_close, browser_status, browser_tabs, browser_forward,
browser_reload, browser_resize, browser_select_option, browser_fill_form,
browser_hover, browser_drag, browser_file_upload, browser_wait_for,
browser_handle_dialog) over MCP: on stdin/stdout by
default, over streamable HTTP with --http. Each MCP client session has a
browser session of its own, released when the client session ends.

Environment: the provider's key (BROWSERBASE_API_KEY and BROWSERBASE_PROJECT_ID,
BROWSER_USE_API_KEY, TOOL_GATEWAY_USER_TOKEN and BROWSER_USE_GATEWAY_URL for
nous, STEEL_API_KEY, BROWSERLESS_TOKEN, ANCHOR_API_KEY, KERNEL_API_KEY,
HYPERBROWSER_API_KEY, BROWSER_CASH_API_KEY, HYBROUTE_PROVIDER_KEY for
--provider spec), CHROMIUM (the local browser).

Flags:
`

func runMCP(ctx context.Context, args []string, e env) int {
	fs := flag.NewFlagSet("hybroute mcp", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	var cfg config
	cfg.register(fs)
	httpAddr := fs.String("http", "", "serve streamable HTTP on ADDR (host:port; a bare :port binds 127.0.0.1) instead of stdio")
	var allowHosts stringList
	fs.Var(&allowHosts, "allow-host", "with --http or --metrics: a further Host name (or host:port) the server answers to, for a non-loopback address; repeatable")
	viewport := fs.String("viewport", "1280x720", "the local browser's viewport, WIDTHxHEIGHT (0x0: the browser's own)")
	snapshotDir := fs.String("snapshot-dir", "", "a directory browser_snapshot may write snapshots to (its file argument); without it, a snapshot to a file is refused")
	maxResult := fs.Int("max-result-bytes", agent.DefaultMaxResultBytes, "browser_exec's results are cut at this many bytes of JSON text, in the page, before they reach this process")
	queueWait := fs.Duration("queue-wait", agent.DefaultQueueWait, "how long a call may wait for its turn to open a tab on the local browser, apart from its own time in the page; a call the queue foresees waiting longer is answered \"busy:\" at once")
	waitForTurn := fs.Bool("wait-for-turn", false, "let a call the queue foresees waiting longer than --queue-wait wait anyway, up to --queue-wait, rather than be answered \"busy:\" at once")
	maxSessions := fs.Int("max-sessions", 100, "the most browser sessions kept at once; a new one past it ends the least recently used idle one (0: no cap)")
	maxMemory := fs.String("max-local-memory", "half", "the local Chromium's memory budget (PSS), e.g. 4GiB or 512MiB; past it, new sessions end idle ones, least recently used first (\"half\": half of this machine's memory; 0: no budget)")
	mcpIdle := fs.Duration("mcp-idle-timeout", 15*time.Minute, "with --http: end an MCP client session after this long with no request (its browser session is released with it)")
	mcpUnused := fs.Duration("mcp-unused-timeout", DefaultMCPUnusedTimeout, "with --http: end an MCP client session that has made no tool call after this long")
	storageState := fs.String("storage-state", "", "load this Playwright storageState file into every new MCP session's browsers (a login to start with; cookies of local hosts never go to the cloud browser)")
	stateDir := fs.String("state-dir", "", "the directory browser_state_save and browser_state_load keep state files in, by plain name (off when unset)")
	uploadDir := fs.String("upload-dir", "", "let browser_file_upload give pages the files under DIR, and nothing outside it (no path or symbolic link that leads out); the local browser only. Unset: no uploads")
	dialogs := fs.String("dialogs", "dismiss", "who answers the pages' JavaScript dialogs (alert, confirm, prompt): dismiss or accept them as they open, or model: they wait for browser_handle_dialog")
	downloadDir := fs.String("download-dir", "", "save the local browser's downloads, and browser_pdf_save's PDFs, in this directory (it must exist); without it downloads are refused")
	maxDownload := fs.Int64("max-download-bytes", agent.DefaultMaxDownloadBytes, "the largest file a download or a PDF may be; a larger download is cancelled")
	metricsAddr := fs.String("metrics", "", "serve the router's metrics for Prometheus at http://ADDR/metrics (host:port; a bare :port binds 127.0.0.1)")
	fs.Usage = func() { fmt.Fprint(e.stderr, mcpUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitFailure
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(e.stderr, "hybroute mcp: unexpected arguments %q\n", fs.Args())
		return exitFailure
	}
	if err := loadConfigFile(fs, cfg.configPath); err != nil {
		fmt.Fprintln(e.stderr, "hybroute mcp:", err)
		return exitFailure
	}
	if cfg.printConfig {
		printConfig(e.stdout, fs, e.getenv)
		return exitOK
	}
	vw, vh, err := parseViewport(*viewport)
	if err != nil {
		fmt.Fprintln(e.stderr, "hybroute mcp:", err)
		return exitFailure
	}
	dialogPolicy, err := dialogsFlag(*dialogs)
	if err == nil {
		err = uploadDirFlag(*uploadDir)
	}
	if err != nil {
		fmt.Fprintln(e.stderr, "hybroute mcp:", err)
		return exitFailure
	}
	if *downloadDir != "" {
		if fi, err := os.Stat(*downloadDir); err != nil || !fi.IsDir() {
			fmt.Fprintf(e.stderr, "hybroute mcp: --download-dir %s: not a directory this process can use\n", *downloadDir)
			return exitFailure
		}
	}
	budget, err := parseMemory(*maxMemory)
	if err != nil {
		fmt.Fprintln(e.stderr, "hybroute mcp: --max-local-memory:", err)
		return exitFailure
	}
	extra := []hybroute.Option{hybroute.WithLocalViewport(vw, vh), hybroute.WithDialogPolicy(dialogPolicy),
		hybroute.WithMaxSessions(*maxSessions), hybroute.WithMaxLocalMemory(budget)}
	stateOpts, err := stateOptions(*storageState, *stateDir)
	if err != nil {
		fmt.Fprintln(e.stderr, "hybroute mcp:", err)
		return exitFailure
	}
	extra = append(extra, stateOpts...)
	if *metricsAddr != "" {
		ms, err := startMetrics(*metricsAddr, allowHosts, e.stderr)
		if err != nil {
			fmt.Fprintln(e.stderr, "hybroute mcp:", err)
			return exitFailure
		}
		defer ms.close()
		extra = append(extra, hybroute.WithMeterProvider(ms.provider))
	}
	r, provider, err := cfg.newRouter(e.getenv, e.stderr, true, extra...)
	if err != nil {
		fmt.Fprintln(e.stderr, "hybroute mcp:", err)
		return exitFailure
	}
	defer r.Close()
	ts := agent.New(r, agent.WithMaxResultBytes(*maxResult), agent.WithQueueWait(*queueWait), agent.WithWaitForTurn(*waitForTurn),
		agent.WithStateDir(*stateDir), agent.WithUploadDir(*uploadDir),
		agent.WithDownloadDir(*downloadDir), agent.WithMaxDownloadBytes(*maxDownload), agent.WithSnapshotDir(*snapshotDir))
	defer ts.Close()
	srv := newMCPServer(ts)
	defer srv.close()
	fmt.Fprintf(e.stderr, "hybroute mcp: %s\n", cfg.describe(provider))

	if *httpAddr == "" {
		err = srv.server.Run(ctx, &mcp.StdioTransport{})
		if err != nil && !errors.Is(err, context.Canceled) && !isEOF(err) {
			fmt.Fprintln(e.stderr, "hybroute mcp:", err)
			return exitFailure
		}
		return exitOK
	}
	if *mcpUnused > 0 {
		sctx, stop := context.WithCancel(ctx)
		defer stop()
		go srv.sweepUnused(sctx, *mcpUnused)
	}
	if err := serveHTTP(ctx, srv, *httpAddr, allowHosts, *mcpIdle, e); err != nil {
		fmt.Fprintln(e.stderr, "hybroute mcp:", err)
		return exitFailure
	}
	return exitOK
}

func isEOF(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "EOF") || strings.Contains(err.Error(), "closed"))
}

// mcpServer is the MCP server over a toolset: every MCP client session
// gets a browser session key of its own.
type mcpServer struct {
	server *mcp.Server
	ts     *agent.Toolset

	mu   sync.Mutex
	keys map[*mcp.ServerSession]string
	wg   sync.WaitGroup // the goroutines that release a session's browsers when it ends

	// requests are the contexts of the HTTP requests in flight, by the
	// id tieRequests gave each: a tool call ends with the request that
	// carried it.
	requests sync.Map     // string -> context.Context
	running  atomic.Int64 // tool calls in the toolset, waiting or running (tests read it)
}

// MetaWhere is the _meta key of a tool result that says where the call ran.
const MetaWhere = "hybroute/where"

func newMCPServer(ts *agent.Toolset) *mcpServer {
	s := &mcpServer{
		ts:   ts,
		keys: make(map[*mcp.ServerSession]string),
		server: mcp.NewServer(&mcp.Implementation{Name: "hybroute", Title: "hybroute browser", Version: version()}, &mcp.ServerOptions{
			Instructions: "Browser tools. browser_navigate opens a page; browser_snapshot reads it with refs for browser_click and browser_type. " +
				"Public sites run in a cloud browser, local and private addresses in a local one; every result says which, and cloud metadata addresses are always refused.",
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		}),
	}
	for _, tool := range ts.Tools() {
		name := tool.Name
		s.server.AddTool(&mcp.Tool{Name: name, Description: tool.Description, InputSchema: tool.InputSchema},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				ctx, done := s.requestCtx(ctx, req)
				defer done()
				s.running.Add(1)
				defer s.running.Add(-1)
				res, err := ts.Call(ctx, s.keyOf(req.Session), name, req.Params.Arguments)
				if err != nil {
					return nil, err
				}
				return toMCP(res), nil
			})
	}
	return s
}

// requestHeader carries, inside the server, the id tieRequests gave the
// HTTP request that brought a message. It is set on every request over
// what a client may have sent.
const requestHeader = "X-Hybroute-Request"

// errClientGone ends a call whose HTTP client hung up.
var errClientGone = errors.New("hybroute mcp: the client hung up")

// tieRequests makes the HTTP requests' contexts known to the tool handlers:
// the SDK runs a call in its session's context, which a client that hangs
// up does not end (without an event store it cannot resume the stream
// either), so its call would run on for no one and hold the session's
// later calls behind it.
func (s *mcpServer) tieRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := rand.Text()
		r.Header.Set(requestHeader, id)
		s.requests.Store(id, r.Context())
		defer s.requests.Delete(id)
		next.ServeHTTP(w, r)
	})
}

// requestCtx is ctx ended also when the HTTP request that carried req
// ends. A request that ended before its call started (the call waited in
// the SDK) gives an ended context: the call is dropped. A call that came
// by another transport keeps ctx.
func (s *mcpServer) requestCtx(ctx context.Context, req *mcp.CallToolRequest) (context.Context, func()) {
	if req == nil || req.Extra == nil || req.Extra.Header == nil {
		return ctx, func() {}
	}
	id := req.Extra.Header.Get(requestHeader)
	if id == "" {
		return ctx, func() {}
	}
	cctx, cancel := context.WithCancelCause(ctx)
	v, ok := s.requests.Load(id)
	if !ok {
		cancel(errClientGone)
		return cctx, func() {}
	}
	stop := context.AfterFunc(v.(context.Context), func() { cancel(errClientGone) })
	return cctx, func() { stop(); cancel(nil) }
}

// toMCP is a tool result as MCP content: the text, then the images.
func toMCP(res agent.Result) *mcp.CallToolResult {
	out := &mcp.CallToolResult{IsError: res.IsError, Content: []mcp.Content{&mcp.TextContent{Text: res.Text}}}
	for _, img := range res.Images {
		out.Content = append(out.Content, &mcp.ImageContent{Data: img.Data, MIMEType: img.MIMEType})
	}
	if w := res.Where; w.Ran {
		where := map[string]any{
			"route":               w.Route.String(),
			"fallback_from_cloud": w.FallbackFromCloud,
			"page_changed":        w.PageChanged,
			"tab_replaced":        w.TabReplaced,
			"url":                 w.URL,
			"title":               w.Title,
		}
		if w.FallbackReason != "" {
			where["fallback_reason"] = w.FallbackReason
		}
		if len(w.Dialogs) > 0 {
			ds := make([]map[string]any, len(w.Dialogs))
			for i, d := range w.Dialogs {
				ds[i] = map[string]any{"type": d.Type, "message": d.Message, "accepted": d.Accepted}
				if d.Pending {
					ds[i]["pending"] = true // held for browser_handle_dialog (--dialogs model)
				}
			}
			where["dialogs"] = ds
		}
		out.Meta = mcp.Meta{MetaWhere: where}
	}
	return out
}

// keyOf is the browser session key of an MCP client session. The first
// call of a client session makes one, and the session's end releases its
// browsers.
func (s *mcpServer) keyOf(ss *mcp.ServerSession) string {
	if ss == nil {
		return "mcp"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if k, ok := s.keys[ss]; ok {
		return k
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	k := "mcp-" + hex.EncodeToString(b[:])
	s.keys[ss] = k
	s.wg.Go(func() {
		_ = ss.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = s.ts.Release(ctx, k)
		s.mu.Lock()
		delete(s.keys, ss)
		s.mu.Unlock()
	})
	return k
}

// close ends the client sessions still open and waits until their browsers
// are released.
func (s *mcpServer) close() {
	for ss := range s.server.Sessions() {
		_ = ss.Close()
	}
	s.wg.Wait()
}

// serveHTTP serves streamable HTTP on addr until ctx ends.
func serveHTTP(ctx context.Context, s *mcpServer, addr string, allowHosts []string, idle time.Duration, e env) error {
	if strings.HasPrefix(addr, ":") {
		addr = "127.0.0.1" + addr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	bound := ln.Addr().(*net.TCPAddr)
	if !bound.IP.IsLoopback() {
		fmt.Fprintf(e.stderr, "hybroute mcp: WARNING: listening on %s, which is not loopback: the MCP server has no authentication, so anyone who can reach it can drive the browsers\n", bound)
	}
	hs := &http.Server{
		Handler:           s.httpHandler(addr, bound, allowHosts, idle),
		ReadHeaderTimeout: 10 * time.Second,
	}
	fmt.Fprintf(e.stderr, "hybroute mcp: serving MCP on http://%s/\n", bound)
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// httpHandler is the MCP endpoint over streamable HTTP: the host guard, then
// the requests tied to their calls, then the SDK's handler.
func (s *mcpServer) httpHandler(addr string, bound *net.TCPAddr, allowHosts []string, idle time.Duration) http.Handler {
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.server },
		&mcp.StreamableHTTPOptions{SessionTimeout: idle})
	return hostGuard(addr, bound, allowHosts, s.tieRequests(handler))
}

// hostGuard refuses requests whose Host or Origin is not the server's own:
// a web page the user visits can make the browser send requests to a
// loopback port, and with DNS rebinding its own name can point there too;
// such requests carry the page's name in Host and its origin in Origin.
func hostGuard(addr string, bound *net.TCPAddr, extra []string, next http.Handler) http.Handler {
	port := fmt.Sprint(bound.Port)
	allowed := map[string]bool{}
	add := func(h string) {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" {
			return
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(strings.Trim(h, "[]"), port)
		}
		allowed[h] = true
	}
	add(bound.String())
	if host, _, err := net.SplitHostPort(addr); err == nil && host != "" {
		add(net.JoinHostPort(host, port))
	}
	if bound.IP.IsLoopback() {
		for _, h := range []string{"127.0.0.1", "localhost", "::1"} {
			add(net.JoinHostPort(h, port))
		}
	}
	for _, h := range extra {
		add(h)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowed[strings.ToLower(r.Host)] {
			http.Error(w, "hybroute: forbidden: the Host header names another server", http.StatusForbidden)
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			u, err := url.Parse(o)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !allowed[strings.ToLower(u.Host)] {
				http.Error(w, "hybroute: forbidden: cross-origin request", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }
