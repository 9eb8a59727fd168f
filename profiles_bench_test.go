package hybroute

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hybroute/hybroute/internal/profiles"
)

// BenchmarkProfileJar measures what a profile adds to a local session: the
// restore of a jar of 50 cookies into a fresh browser context
// (Storage.setCookies) and its save (Storage.getCookies and the file).
func BenchmarkProfileJar(b *testing.B) {
	requireChromium(b)
	s := newTestSidecar(b)
	// Not testCtx's minute: on a loaded machine each round's open and
	// close take seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := b.TempDir()
	ps, err := profiles.Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ps.Close() })
	exp := float64(time.Now().Add(time.Hour).Unix())
	var st profiles.Jar
	for i := range 50 {
		st.Cookies = append(st.Cookies, profiles.Cookie{Name: fmt.Sprintf("c%d", i), Value: "v", Domain: "127.0.0.1",
			Path: "/", Expires: exp, SameSite: "Lax"})
	}
	st.Origins = []struct{}{}
	jar, _ := json.Marshal(st)
	pd, err := ps.KeyDir("k")
	if err != nil {
		b.Fatal(err)
	}
	var restore, save time.Duration
	for b.Loop() {
		// A jar that differs from the last write each round, so the save
		// writes the file rather than skipping an unchanged one.
		if err := os.WriteFile(filepath.Join(pd, profiles.CookiesFile), jar, 0o600); err != nil {
			b.Fatal(err)
		}
		tab, err := s.Open(ctx, "k")
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		if err := ps.Restore(ctx, profileTab(tab), "k"); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := ps.Release(profileTab(tab)); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		restore += t1.Sub(t0)
		save += t2.Sub(t1)
		_ = tab.Close()
	}
	b.ReportMetric(float64(restore.Microseconds())/float64(b.N), "restore-µs/op")
	b.ReportMetric(float64(save.Microseconds())/float64(b.N), "save-µs/op")
}
