package sidecar

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestManagedFlagsCannotBeSet: a flag that would take site isolation away
// or route a connection around the egress proxy fails the start before
// any Chromium runs. --single-process is one of them: it runs every
// renderer, of every site and every session's browser context, inside the
// browser process, whatever --site-per-process says (the headless shell
// with a cross-site iframe runs 3 renderer processes without it, none
// with it). So is turning extensions on or loading one: an extension's
// proxy setting outranks the command line's.
func TestManagedFlagsCannotBeSet(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"single-process", "site-per-process", "disable-site-isolation-trials",
		"proxy-server", "no-proxy-server", "remote-debugging-port",
		"disable-extensions", "load-extension", "disable-extensions-except"} {
		s := New(withFlags(map[string]any{f: true}))
		_, err := s.allocatorOptions("/usr/bin/chromium", "127.0.0.1:1")
		assert.ErrorContains(t, err, "managed by the sidecar", f)
	}
	s := New(withFlags(map[string]any{"user-agent": "x"}))
	_, err := s.allocatorOptions("/usr/bin/chromium", "127.0.0.1:1")
	assert.NoError(t, err, "a flag the sidecar does not manage is the caller's")
}

// withFlags is the test config with the extra switches flags.
func withFlags(flags map[string]any) Config {
	c := testConfig()
	c.Flags = flags
	return c
}
