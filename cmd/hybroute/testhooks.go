//go:build hybroutetest

package main

import (
	"fmt"
	"io"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/internal/agenttest"
)

// A binary built with the hybroutetest tag is the one the tests run: its
// local browser resolves names with the tests' static resolver and dials
// loopback only, and it reports any other address it was asked for on
// stderr, which the tests read. A release build has none of this.
func init() {
	testRouterOptions = func(stderr io.Writer) []hybroute.Option {
		return []hybroute.Option{
			hybroute.WithResolver(agenttest.Resolver()),
			hybroute.WithEgressDialer(agenttest.LoopbackDial(func(addr string) {
				fmt.Fprintf(stderr, "TEST EGRESS VIOLATION: %s\n", addr)
			})),
			hybroute.WithChromiumFlags(map[string]any{"host-resolver-rules": agenttest.HostRules}),
		}
	}
}
