package cdpconn

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/hybroute/hybroute/internal/cloudtest"
)

// BenchmarkDial measures opening (and closing) a CDP websocket to a real
// Chromium: directly on ws://127.0.0.1, and in a provider's shape through
// the TLS front (TCP, TLS handshake, HTTP upgrade, proxied upgrade).
func BenchmarkDial(b *testing.B) {
	c := cloudtest.LaunchChromium(b)
	s := cloudtest.NewServer(b, cloudtest.CDP, c.WSURL, cloudtest.WithRealShapes())
	for _, bc := range []struct {
		name string
		url  string
		hc   *http.Client
	}{
		{"ws-loopback", c.WSURL, nil},
		{"wss-provider-shape", s.EndpointURL(), s.HTTPClient()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			for b.Loop() {
				conn, err := Dial(ctx, bc.url, bc.hc)
				if err != nil {
					b.Fatal(err)
				}
				_ = conn.Close()
			}
		})
	}
}
