package hybroute

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
)

// TestMain keeps the package's tests on loopback: the default resolver and
// the default HTTP transport (which the built-in provider clients clone)
// refuse to reach anything else, and a run that tried fails, naming what it
// tried. A test that forgets the fake's HTTP client or the test resolver
// would otherwise ask the machine's DNS server or dial out unnoticed.
func TestMain(m *testing.M) {
	var stray strayDials
	net.DefaultResolver = &net.Resolver{PreferGo: true, Dial: stray.dial("DNS lookup through")}
	http.DefaultTransport.(*http.Transport).DialContext = stray.dial("HTTP dial of")
	code := m.Run()
	if errs := closeShared(); len(errs) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: the shared world: %v\n", errs)
		if code == 0 {
			code = 1
		}
	}
	if tried := stray.list(); len(tried) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: tests tried to leave loopback %d times (refused): %v\n", len(tried), tried)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// strayDials refuses and records every dial to a non-loopback address.
type strayDials struct {
	mu    sync.Mutex
	tried []string
}

func (s *strayDials) dial(what string) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			host = address
		}
		if ip := net.ParseIP(host); (ip != nil && ip.IsLoopback()) || host == "localhost" {
			var d net.Dialer
			return d.DialContext(ctx, network, address)
		}
		s.mu.Lock()
		if len(s.tried) < 20 {
			s.tried = append(s.tried, what+" "+address)
		}
		s.mu.Unlock()
		return nil, fmt.Errorf("test: %s %s refused: tests stay on loopback", what, address)
	}
}

func (s *strayDials) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.tried...)
}
