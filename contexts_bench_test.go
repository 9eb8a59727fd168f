package hybroute

import (
	"context"
	"testing"
	"time"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/config"
	"github.com/hybroute/hybroute/internal/floor"
	"github.com/hybroute/hybroute/route"
)

// BenchmarkRemoteSessionOpenClose opens a session's tab on a shared remote
// browser (through the guard) and closes it: with a browser context of the
// session's own, a create and a dispose more than a tab alone.
func BenchmarkRemoteSessionOpenClose(b *testing.B) {
	cloud := cloudtest.LaunchChromium(b)
	cfg := config.Default()
	cfg.Resolver = testResolver
	pol := newPolicy(&cfg, false, nil)
	ctx := context.Background()
	var open, shut time.Duration
	for b.Loop() {
		t0 := time.Now()
		rt, err := connectRemote(ctx, cloud.WSURL, "the test browser", floor.NewGuard(pol, nil, route.Cloud))
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := rt.Close(ctx); err != nil {
			b.Fatal(err)
		}
		open, shut = open+t1.Sub(t0), shut+time.Since(t1)
	}
	b.ReportMetric(float64(open.Milliseconds())/float64(b.N), "open-ms/op")
	b.ReportMetric(float64(shut.Milliseconds())/float64(b.N), "close-ms/op")
}
