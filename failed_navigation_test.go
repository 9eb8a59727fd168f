package hybroute

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// An Exec right after a Navigate that failed must run: the state a failed
// navigation leaves the tab in is one the next call always handles. Before
// the next call waited for the error page's load (guard.Guard.Settle),
// its screenshot failed with "Not attached to an active page" 4 times in
// 60 here; HYBROUTE_FLAKE_RUNS=500 runs it 500 times (make flake).
func TestExecAfterAFailedNavigation(t *testing.T) {
	n := 10
	if s := os.Getenv("HYBROUTE_FLAKE_RUNS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<html><title>here</title><body>here</body></html>`)
	}))
	defer srv.Close()
	r, err := New(nil, WithResolver(failingResolver{}))
	require.NoError(t, err)
	defer r.Close()
	fails := 0
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		key := "e" + strconv.Itoa(i)
		_, err := r.Navigate(ctx, key, "https://dashboard.example.com/", nil)
		require.Error(t, err)
		_, err = r.Exec(ctx, key, `goto("`+srv.URL+`")`, func(ctx context.Context, _ *Call) error {
			if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL)); err != nil {
				return fmt.Errorf("navigate: %w", err)
			}
			_, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
			if err != nil {
				return fmt.Errorf("screenshot: %w", err)
			}
			return nil
		})
		if err != nil {
			fails++
			t.Logf("run %d: %v", i, err)
		}
	}
	require.Zero(t, fails, "%d of %d Execs after a failed Navigate failed", fails, n)
}

type failingResolver struct{}

func (failingResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}
