package main

import (
	"fmt"

	"github.com/hybroute/hybroute/internal/chromium"
)

// localBrowser reports, when the server starts, a local browser that is
// missing or cannot be run, with the fix, rather than at the first call a
// model makes. With no cloud provider nothing could run, and the server
// does not start (fatal); with one, the local browser serves the private
// addresses and the fallback, and the server starts with a warning. A
// server whose every call goes to --cdp-url needs no local browser. A
// browser found is named, so that the user sees which one runs.
func (c *config) localBrowser(provider string, getenv func(string) string) (msg string, fatal bool) {
	if c.cdpURL != "" && provider != "cdp" {
		return "", false
	}
	path, err := chromium.Lookup(c.chromium, "--chromium %q", getenv)
	if err == nil {
		return "local browser: " + path, false
	}
	fix := "Name a browser with --chromium PATH (or CHROMIUM=PATH)."
	if provider == "none" {
		return fmt.Sprintf("no local browser, and no cloud provider, so no call could run: %v. %s", err, fix), true
	}
	return fmt.Sprintf("WARNING: no local browser: private addresses, and the fallback when the cloud provider fails, will not work: %v. %s", err, fix), false
}
