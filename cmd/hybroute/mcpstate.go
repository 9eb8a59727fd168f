package main

import (
	"fmt"
	"os"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/state"
)

// stateOptions are the router options of --storage-state and the check of
// --state-dir: a state file that cannot be read or loaded, or a state
// directory that is not one, stops the server before it serves.
func stateOptions(storageState, stateDir string) ([]hybroute.Option, error) {
	if stateDir != "" {
		fi, err := os.Stat(stateDir)
		if err != nil {
			return nil, fmt.Errorf("--state-dir: %w", err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("--state-dir %s: not a directory", stateDir)
		}
	}
	if storageState == "" {
		return nil, nil
	}
	st, err := state.ReadFile(storageState)
	if err != nil {
		return nil, fmt.Errorf("--storage-state: %w", err)
	}
	return []hybroute.Option{hybroute.WithInitialState(st)}, nil
}
