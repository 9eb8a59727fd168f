package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent"
	"github.com/hybroute/hybroute/mcpserver"
)

// mcpUsage is the head of "hybroute mcp -h"; the tool list between its
// parts is made from the toolset's catalog (toollist.go).
const mcpUsage = `Usage: hybroute mcp [flags]

Serves the browser tools over MCP: on stdin/stdout by default, over
streamable HTTP with --http. Each MCP client session has a browser session
of its own, released when the client session ends. A tool that cannot work
in the server's configuration is not offered.

`

const mcpUsageEnv = `
Environment: the provider's key (BROWSERBASE_API_KEY and BROWSERBASE_PROJECT_ID,
BROWSER_USE_API_KEY, TOOL_GATEWAY_USER_TOKEN for nous (its origin
BROWSER_USE_GATEWAY_URL, else https://browser-use-gateway. and
TOOL_GATEWAY_DOMAIN or nousresearch.com), STEEL_API_KEY, BROWSERLESS_TOKEN, ANCHOR_API_KEY, KERNEL_API_KEY,
HYPERBROWSER_API_KEY, BROWSER_CASH_API_KEY, HYBROUTE_PROVIDER_KEY for
--provider spec), CHROMIUM (the local browser).

Flags:
`

func runMCP(ctx context.Context, args []string, e env) int {
	fs := flag.NewFlagSet("hybroute mcp", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	var cfg config
	cfg.register(fs)
	cfg.registerBrowser(fs)
	httpAddr := fs.String("http", "", "serve streamable HTTP on ADDR (host:port; a bare :port binds 127.0.0.1) instead of stdio")
	var allowHosts stringList
	fs.Var(&allowHosts, "allow-host", "with --http or --metrics: a further Host name (or host:port) the server answers to, for a non-loopback address; repeatable")
	viewport := fs.String("viewport", "1280x720", "the local browser's viewport, WIDTHxHEIGHT (0x0: the browser's own)")
	snapshotDir := fs.String("snapshot-dir", "", "a directory browser_snapshot may write snapshots to (its file argument); without it, a snapshot to a file is refused")
	recordDir := fs.String("record-dir", "", "write a record of each session into DIR when it ends: an HTML replay file (its frames and its tool calls, redacted) and, with ffmpeg installed, a WebM (off when unset)")
	maxResult := fs.Int("max-result-bytes", agent.DefaultMaxResultBytes, "browser_exec's results are cut at this many bytes of JSON text, in the page, before they reach this process")
	queueWait := fs.Duration("queue-wait", agent.DefaultQueueWait, "how long a call may wait for its turn to open a tab on the local browser, apart from its own time in the page; a call the queue foresees waiting longer is answered \"busy:\" at once")
	waitForTurn := fs.Bool("wait-for-turn", false, "let a call the queue foresees waiting longer than --queue-wait wait anyway, up to --queue-wait, rather than be answered \"busy:\" at once")
	maxSessions := fs.Int("max-sessions", 100, "the most browser sessions kept at once; a new one past it ends the least recently used idle one (0: no cap)")
	maxMemory := fs.String("max-local-memory", "half", "the local Chromium's memory budget (PSS), e.g. 4GiB or 512MiB; past it, new sessions end idle ones, least recently used first (\"half\": half of this machine's memory; 0: no budget)")
	mcpIdle := fs.Duration("mcp-idle-timeout", 15*time.Minute, "with --http: end an MCP client session after this long with no request (its browser session is released with it)")
	mcpUnused := fs.Duration("mcp-unused-timeout", time.Minute, "with --http: end an MCP client session that has made no tool call after this long")
	storageState := fs.String("storage-state", "", "load this Playwright storageState file into every new MCP session's browsers (a login to start with; cookies of local hosts never go to the cloud browser)")
	stateDir := fs.String("state-dir", "", "the directory browser_state_save and browser_state_load keep state files in, by plain name (off when unset)")
	uploadDir := fs.String("upload-dir", "", "let browser_file_upload give pages the files under DIR, and nothing outside it (no path or symbolic link that leads out); the local browser only. Unset: no uploads")
	dialogs := fs.String("dialogs", "dismiss", "who answers the pages' JavaScript dialogs (alert, confirm, prompt): dismiss or accept them as they open, or model: they wait for browser_handle_dialog")
	downloadDir := fs.String("download-dir", "", "save the local browser's downloads, and browser_pdf_save's PDFs, in this directory (it must exist); without it downloads are refused")
	maxDownload := fs.Int64("max-download-bytes", agent.DefaultMaxDownloadBytes, "the largest file a download or a PDF may be; a larger download is cancelled")
	var dlLimits agent.DownloadLimits
	fs.Int64Var(&dlLimits.Bytes, "max-session-download-bytes", agent.DefaultSessionDownloadBytes, "the bytes one session's downloads may take together; past it, or past --max-session-downloads or --max-downloads-per-minute, the session's downloads are cut off (negative: no bound)")
	fs.IntVar(&dlLimits.Files, "max-session-downloads", agent.DefaultSessionDownloadFiles, "how many downloads one session may start (negative: no bound)")
	fs.IntVar(&dlLimits.PerMinute, "max-downloads-per-minute", agent.DefaultDownloadsPerMinute, "how many downloads one session may start within a minute (negative: no bound)")
	keepDownloads := fs.Bool("keep-downloads", false, "keep a session's downloaded files when the session ends; without it they are removed then (PDFs stay)")
	secretsFile := fs.String("secrets", "", secretsUsage)
	metricsAddr := fs.String("metrics", "", "serve the router's metrics for Prometheus at http://ADDR/metrics (host:port; a bare :port binds 127.0.0.1)")
	var fleet fleetFlags
	fleet.register(fs)
	fs.Usage = func() { fmt.Fprint(e.stderr, mcpUsage+toolsHelp()+mcpUsageEnv); fs.PrintDefaults() }
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
	secretsOpt, secretsLog, err := secretsFlag(*secretsFile, cfg.logHandler(e.stderr), e.getenv)
	if err != nil {
		fmt.Fprintln(e.stderr, "hybroute mcp:", err)
		return exitFailure
	}
	extra = append(extra, secretsLog...)
	fleetOpts, closeStore, err := fleet.options(ctx, e.getenv, e.stderr)
	if err != nil {
		fmt.Fprintln(e.stderr, "hybroute mcp:", err)
		return exitFailure
	}
	defer closeStore() // after the router, which the later defers close first
	extra = append(extra, fleetOpts...)
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
	if msg, fatal := cfg.localBrowser(provider, e.getenv); msg != "" {
		fmt.Fprintln(e.stderr, "hybroute mcp:", msg)
		if fatal {
			return exitFailure
		}
	}
	opts := mcpserver.Options{Version: version(), AllowHosts: hostNames(*httpAddr, allowHosts)}
	toolOpts := []agent.Option{agent.WithMaxResultBytes(*maxResult), agent.WithQueueWait(*queueWait), agent.WithWaitForTurn(*waitForTurn),
		agent.WithStateDir(*stateDir), agent.WithUploadDir(*uploadDir),
		agent.WithDownloadDir(*downloadDir), agent.WithMaxDownloadBytes(*maxDownload), agent.WithSnapshotDir(*snapshotDir),
		agent.WithDownloadLimits(dlLimits), agent.WithKeepDownloads(*keepDownloads), secretsOpt, agent.WithRecording(*recordDir)}
	var ln net.Listener
	if *httpAddr != "" {
		opts.IdleTimeout, opts.UnusedTimeout = *mcpIdle, *mcpUnused
		// Listen first: the live views' URLs name the bound address.
		if ln, err = net.Listen("tcp", loopbackDefault(*httpAddr)); err != nil {
			fmt.Fprintln(e.stderr, "hybroute mcp:", err)
			return exitFailure
		}
		defer ln.Close()
		bound := ln.Addr().(*net.TCPAddr)
		// An operator who binds beyond loopback (the warning says what that
		// means) lets people there reach the views too.
		views := r.LiveViews(hybroute.LiveViewOptions{BaseURL: viewBase(bound, allowHosts), AllowHosts: opts.AllowHosts, Remote: !bound.IP.IsLoopback()})
		defer views.Close()
		opts.LiveViews = views
		toolOpts = append(toolOpts, agent.WithHandoff(views))
	}
	ts := agent.New(r, toolOpts...)
	defer ts.Close()
	srv := mcpserver.New(ts, opts)
	defer srv.Close()
	fmt.Fprintf(e.stderr, "hybroute mcp: %s\n", cfg.describe(provider))

	if *httpAddr == "" {
		err = srv.Run(ctx, &mcp.StdioTransport{})
	} else {
		err = serveHTTP(ctx, srv, ln, e)
	}
	if err != nil {
		fmt.Fprintln(e.stderr, "hybroute mcp:", err)
		return exitFailure
	}
	return exitOK
}

// serveHTTP serves streamable HTTP (and the live views) on ln until ctx ends.
func serveHTTP(ctx context.Context, srv *mcpserver.Server, ln net.Listener, e env) error {
	bound := ln.Addr().(*net.TCPAddr)
	if !bound.IP.IsLoopback() {
		fmt.Fprintf(e.stderr, "hybroute mcp: WARNING: listening on %s, which is not loopback: the MCP server has no authentication, so anyone who can reach it can drive the browsers, and the live views' links (their only credential) cross the network in clear text: put TLS in front of it\n", bound)
	}
	fmt.Fprintf(e.stderr, "hybroute mcp: serving MCP on http://%s/\n", bound)
	return srv.Serve(ctx, ln)
}

// viewBase is the live views' base URL, by the address bound or, bound
// to every address, by the first --allow-host name (people elsewhere use
// that one; 127.0.0.1 without one): a view's URL is it followed by the
// view's token.
func viewBase(bound *net.TCPAddr, allowHosts []string) string {
	port := fmt.Sprint(bound.Port)
	hostport := net.JoinHostPort(bound.IP.String(), port)
	switch {
	case bound.IP.IsUnspecified() && len(allowHosts) > 0:
		// Bound everywhere: the name people elsewhere reach it by, which
		// --allow-host gives.
		if _, _, err := net.SplitHostPort(allowHosts[0]); err == nil {
			hostport = allowHosts[0]
		} else {
			hostport = net.JoinHostPort(allowHosts[0], port)
		}
	case bound.IP.IsUnspecified():
		hostport = net.JoinHostPort("127.0.0.1", port)
	}
	return "http://" + hostport + mcpserver.LiveViewPath
}

// loopbackDefault is addr with a bare :port bound to 127.0.0.1.
func loopbackDefault(addr string) string {
	if strings.HasPrefix(addr, ":") {
		return "127.0.0.1" + addr
	}
	return addr
}

// hostNames are the --allow-host names, with the host that --http or
// --metrics named: the server answers to the name it was told to listen on.
func hostNames(addr string, allowHosts []string) []string {
	if host, _, err := net.SplitHostPort(loopbackDefault(addr)); err == nil && host != "" {
		return append([]string{host}, allowHosts...)
	}
	return allowHosts
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }
