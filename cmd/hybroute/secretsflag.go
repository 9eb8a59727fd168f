package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent"
)

const secretsUsage = "type the named secrets of this JSON file with the browser_type_secret tool, each only on its origins; the model never sees a value, and results and logs are scrubbed of them. " +
	"The file (mode 0600) maps names to {\"value\" or \"env\" (a variable that holds it), \"origins\": [\"https://host[:port]\"], \"local_only\"} (docs/security.md)"

// secretsFlag loads --secrets: the toolset's option, and the Router's
// logger with the secrets scrubbed from it (replacing the one
// routerOptions gives, at the same level). No file: no secrets.
func secretsFlag(path string, verbose bool, getenv func(string) string, stderr io.Writer) (agent.Option, []hybroute.Option, error) {
	if path == "" {
		return nil, nil, nil
	}
	s, err := agent.LoadSecrets(path, getenv)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: --secrets: %w", errConfig, err)
	}
	level := slog.LevelInfo
	if verbose {
		level = slog.LevelDebug
	}
	log := slog.New(s.LogHandler(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})))
	return agent.WithSecrets(s), []hybroute.Option{hybroute.WithLogger(log)}, nil
}
