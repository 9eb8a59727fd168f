package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/hybroute/hybroute"
)

// dialogsFlag reads --dialogs: who answers the pages' JavaScript dialogs.
func dialogsFlag(s string) (hybroute.DialogPolicy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "dismiss":
		return hybroute.DialogPolicy{}, nil
	case "accept":
		return hybroute.DialogPolicy{Accept: true}, nil
	case "model":
		return hybroute.DialogPolicy{Hold: true}, nil
	}
	return hybroute.DialogPolicy{}, fmt.Errorf("%w: --dialogs %q: want dismiss, accept or model", errConfig, s)
}

// uploadDirFlag checks --upload-dir at start: a directory that is not
// there is the operator's mistake, said now rather than at the first upload.
func uploadDirFlag(dir string) error {
	if dir == "" {
		return nil
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%w: --upload-dir: %w", errConfig, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: --upload-dir %q is not a directory", errConfig, dir)
	}
	return nil
}
