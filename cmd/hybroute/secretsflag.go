package main

import (
	"fmt"
	"log/slog"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent"
)

const secretsUsage = "type the named secrets of this JSON file with the browser_type_secret tool, each only on its origins; the model never sees a value, and results and logs are scrubbed of them. " +
	"The file (mode 0600) maps names to {\"value\" or \"env\" (a variable that holds it), \"origins\": [\"https://host[:port]\"], \"local_only\"} (docs/security.md)"

// secretsFlag loads --secrets: the toolset's option, and the Router's
// logger, log (the configuration's) with the secrets scrubbed from it,
// replacing the one routerOptions gives. No file: no secrets.
func secretsFlag(path string, log slog.Handler, getenv func(string) string) (agent.Option, []hybroute.Option, error) {
	if path == "" {
		return nil, nil, nil
	}
	s, err := agent.LoadSecrets(path, getenv)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: --secrets: %w", errConfig, err)
	}
	return agent.WithSecrets(s), []hybroute.Option{hybroute.WithLogger(slog.New(s.LogHandler(log)))}, nil
}
