package hybroutetest_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/hybroutetest"
	"github.com/hybroute/hybroute/provider"
	"github.com/hybroute/hybroute/route"
)

// Every Kind answers every scripted answer as hybroute's client of that
// service reads it: a refusal with its status and the service's words, a
// hang until the client gives up, a body that does not parse; healthy, a
// session on the Cloud's browser, which a release ends. The counts follow.
func TestCloudAnswersEveryKind(t *testing.T) {
	hybroutetest.Parallel(t)
	for _, kind := range hybroutetest.Kinds {
		t.Run(string(kind), func(t *testing.T) {
			cloud := hybroutetest.NewCloud(t, kind)
			require.Equal(t, kind, cloud.Kind())
			p := cloud.Provider()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()

			refusals := []struct {
				answer hybroutetest.Answer
				status int
				is     error // nil: the status alone is checked
				words  string
			}{
				{hybroutetest.RateLimited(17 * time.Second), http.StatusTooManyRequests, provider.ErrRateLimited, ""},
				{hybroutetest.PaymentRequired(), http.StatusPaymentRequired, provider.ErrPayment, ""},
				// A limit answered 403: ErrAuth or ErrRateLimited by the
				// client's reading of its words; the words are the test.
				{hybroutetest.LimitForbidden(), http.StatusForbidden, nil, "limit"},
			}
			for _, row := range refusals {
				cloud.Answer(row.answer)
				_, err := p.CreateSession(ctx, "k")
				var pe *provider.Error
				require.ErrorAs(t, err, &pe, row.answer.String())
				assert.Equal(t, row.status, pe.Status, row.answer.String())
				if row.is != nil {
					assert.ErrorIs(t, err, row.is, row.answer.String())
				}
				assert.Contains(t, strings.ToLower(pe.Code+" "+pe.Message), row.words, row.answer.String())
				if row.status == http.StatusTooManyRequests {
					assert.GreaterOrEqual(t, pe.RetryAfter, 17*time.Second, "Retry-After is read")
				}
			}

			cloud.Answer(hybroutetest.Malformed())
			_, err := p.CreateSession(ctx, "k")
			require.ErrorIs(t, err, provider.ErrUnavailable, "a body that does not parse")

			cloud.Answer(hybroutetest.Hang())
			short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
			_, err = p.CreateSession(short, "k")
			cancelShort()
			require.ErrorIs(t, err, context.DeadlineExceeded, "a hang lasts until the client gives up")

			// AnswerNext comes first, then the answer Answer set.
			cloud.Answer(hybroutetest.Healthy())
			cloud.AnswerNext(hybroutetest.PaymentRequired())
			_, err = p.CreateSession(ctx, "k")
			require.ErrorIs(t, err, provider.ErrPayment)
			s, err := p.CreateSession(ctx, "k")
			require.NoError(t, err)
			assert.NotEmpty(t, s.CDPURL)
			assert.Equal(t, 1, cloud.Live())
			require.NoError(t, p.ReleaseSession(ctx, s))
			assert.Equal(t, 0, cloud.Live())
			assert.Equal(t, 7, cloud.Creates(), "every create is counted, answered or not")
			assert.Equal(t, 1, cloud.Releases())
		})
	}
}

// Each failure a Cloud can script is met by the Router as it promises:
// the call runs on the local browser and says why; a 429's window holds
// the next key off the provider (one probe per outage).
func TestRouterFallsBackOnEveryFailure(t *testing.T) {
	hybroutetest.Parallel(t)
	cloud := hybroutetest.NewCloud(t, hybroutetest.Browserbase)
	site := hybroutetest.NewSite(t, nil)
	for _, a := range []hybroutetest.Answer{
		hybroutetest.RateLimited(time.Hour), hybroutetest.PaymentRequired(), hybroutetest.LimitForbidden(),
		hybroutetest.Hang(), hybroutetest.Malformed(),
	} {
		t.Run(a.String(), func(t *testing.T) {
			cloud.Answer(a)
			creates := cloud.Creates()
			r := hybroutetest.NewRouter(t, cloud, hybroute.WithCreateTimeout(2*time.Second))
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			for _, key := range []string{"first", "second"} {
				res, err := r.Navigate(ctx, key, site.URL("/"+key), nil)
				require.NoError(t, err)
				assert.Equal(t, route.Local, res.Route)
				assert.True(t, res.FallbackFromCloud)
				assert.Contains(t, res.FallbackReason, "provider Browserbase")
				assert.Equal(t, "local", site.FetchedBy("/"+key))
			}
			if a.String() == hybroutetest.RateLimited(time.Hour).String() {
				assert.Equal(t, creates+1, cloud.Creates(), "one probe per outage")
				st, err := r.Status(ctx, "second")
				require.NoError(t, err)
				assert.Contains(t, st.FallbackReason, "HTTP 429")
			}
		})
	}
}

// A Cloud that heals serves the next key in the cloud; KillSessions ends
// the session under a call, which fails with ErrBrowserDead.
func TestHealAndKill(t *testing.T) {
	hybroutetest.Parallel(t)
	cloud := hybroutetest.NewCloud(t, hybroutetest.Steel)
	site := hybroutetest.NewSite(t, nil)
	r := hybroutetest.NewRouter(t, cloud, hybroute.WithCreateTimeout(2*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	cloud.AnswerNext(hybroutetest.Malformed())
	res, err := r.Navigate(ctx, "a", site.URL("/a"), nil)
	require.NoError(t, err)
	assert.True(t, res.FallbackFromCloud)
	// The failure's window (5s on a first failure without Retry-After)
	// passes; the next create is the probe, answered healthy.
	require.Eventually(t, func() bool {
		res, err := r.Navigate(ctx, "b", site.URL("/b"), nil)
		if err == nil && res.Route == route.Local {
			_ = r.Release(ctx, "b")
		}
		return err == nil && res.Route == route.Cloud
	}, time.Minute, time.Second)
	assert.Equal(t, "cloud", site.FetchedBy("/b"))
	assert.Equal(t, 1, cloud.Live())

	_, err = r.Exec(ctx, "b", "", func(ctx context.Context, _ *hybroute.Call) error {
		cloud.KillSessions()
		for {
			if _, err := chromedp.Run(ctx, chromedp.Title()); err != nil {
				return err
			}
		}
	})
	require.ErrorIs(t, err, hybroute.ErrBrowserDead)
	require.NoError(t, r.Release(ctx, "b"))
	assert.Equal(t, 0, cloud.Live(), "the dead session is released")
}

// Routers of tests that run side by side, through Parallel, each pass
// their own leftover check: another test's goroutines are not theirs.
func TestParallelRouters(t *testing.T) {
	hybroutetest.Parallel(t)
	site := hybroutetest.NewSite(t, nil)
	for _, name := range []string{"one", "two"} {
		t.Run(name, func(t *testing.T) {
			hybroutetest.Parallel(t)
			r := hybroutetest.NewRouter(t, nil)
			res, err := r.Navigate(t.Context(), name, site.URL("/"+name), nil)
			require.NoError(t, err)
			assert.Equal(t, route.Local, res.Route)
			assert.Equal(t, "local", site.FetchedBy("/"+name))
		})
	}
}
