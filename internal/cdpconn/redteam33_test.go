package cdpconn

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestRedTeam33TokenToALocalhostName: the CDP URL's token (the --cdp-url
// override, an http CDP endpoint's discovery) goes over plain http or ws
// to a name under localhost, or to "localhost." with its dot, which Go's
// resolver (pure and cgo, measured with Go 1.26 on this machine) does not
// find in /etc/hosts and asks the DNS server for: whoever answers it gets
// the token. package provider refuses the same names (58c8159); cdpconn
// still calls them loopback. The client's dialer sends every connection to
// a loopback stand-in, so nothing leaves; what reaches it is what would
// have gone to the resolver's answer.
func TestRedTeam33TokenToALocalhostName(t *testing.T) {
	var reached atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	var d net.Dialer
	tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, host := range []string{"evil.localhost", "localhost.", "a.b.localhost."} {
		_, err := Discover(ctx, hc, "http://"+host+":9222/?token=K3Y", nil)
		assert.ErrorIs(t, err, ErrCleartext, "discover %s", host)
		c, err := Dial(ctx, "ws://"+host+":9222/devtools/browser/x?token=K3Y", hc)
		if c != nil {
			_ = c.Close()
		}
		assert.ErrorIs(t, err, ErrCleartext, "dial %s", host)
	}
	assert.Zero(t, reached.Load(), "requests that carried the token")
}
