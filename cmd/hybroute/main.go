// Command hybroute serves hybroute's browser toolset to agents over MCP, and
// explains any routing decision.
//
//	hybroute mcp [flags]              serve the browser tools over MCP (stdio, or --http ADDR)
//	hybroute check [flags] [URL...]   say where each URL would go, and why
//	hybroute version
//
// Install with:
//
//	go install github.com/hybroute/hybroute/cmd/hybroute@latest
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], env{getenv: os.Getenv, stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr})
	stop()
	os.Exit(code)
}

// env is the process's outside world, so tests can run the command in
// process.
type env struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1 // usage or configuration error, or the server failed
	exitBlocked = 2 // check: the call would be blocked
)

const usage = `hybroute: browser routing for agents, with a security floor.

Usage:
  hybroute mcp [flags]               serve the browser tools over MCP (stdio by default)
  hybroute check [flags] [URL...]    explain where each URL would run, and why
  hybroute version                   print the version

Run "hybroute mcp -h" or "hybroute check -h" for their flags.
`

func run(ctx context.Context, args []string, e env) int {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, usage)
		return exitFailure
	}
	switch args[0] {
	case "mcp":
		return runMCP(ctx, args[1:], e)
	case "check":
		return runCheck(ctx, args[1:], e)
	case "version", "--version", "-version":
		fmt.Fprintln(e.stdout, "hybroute", version())
		return exitOK
	case "help", "-h", "--help", "-help":
		fmt.Fprint(e.stdout, usage)
		return exitOK
	}
	fmt.Fprintf(e.stderr, "hybroute: unknown command %q\n\n%s", args[0], usage)
	return exitFailure
}

// version is what the binary was built from (see versionOf).
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return versionOf(bi)
}

// versionOf is the version bi records: the module's version, as go install
// ...@version fetched it; for a build from a checkout, what the go command
// stamped of it: the version it derived from the checkout's tags ("devel"
// when none) and the VCS revision, its time, and whether the tree had
// changes (go build stamps these unless -buildvcs=false).
func versionOf(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	var vcs, rev, at string
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs":
			vcs = s.Value
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return v
	}
	v += " (" + strings.TrimSpace(vcs+" "+rev[:min(12, len(rev))])
	if at != "" {
		v += ", " + at
	}
	if modified {
		v += ", modified"
	}
	return v + ")"
}
