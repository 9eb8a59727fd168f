package agenttests_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"example.com/agenttests"
	"github.com/hybroute/hybroute/hybroutetest"
	"github.com/hybroute/hybroute/route"
)

// The morning Browserbase rate-limits us, the job still posts its
// screenshot: taken on the local browser, with the reason, and one probe
// of the provider for the outage.
func TestMorningSurvivesRateLimit(t *testing.T) {
	cloud := hybroutetest.NewCloud(t, hybroutetest.Browserbase)
	cloud.Answer(hybroutetest.RateLimited(17 * time.Second))
	site := hybroutetest.NewSite(t, nil)
	r := hybroutetest.NewRouter(t, cloud)

	png, res, err := agenttests.MorningScreenshot(t.Context(), r, site.URL("/dashboard"))
	require.NoError(t, err)
	assert.NotEmpty(t, png)
	assert.True(t, res.FallbackFromCloud)
	assert.Contains(t, res.FallbackReason, "HTTP 429")
	assert.Equal(t, "local", site.FetchedBy("/dashboard"))
	assert.Equal(t, 1, cloud.Creates(), "one probe for the outage")
}

// On a healthy morning the job runs in the cloud.
func TestMorningInTheCloud(t *testing.T) {
	cloud := hybroutetest.NewCloud(t, hybroutetest.Steel)
	site := hybroutetest.NewSite(t, nil)
	r := hybroutetest.NewRouter(t, cloud)

	png, res, err := agenttests.MorningScreenshot(t.Context(), r, site.URL("/dashboard"))
	require.NoError(t, err)
	assert.NotEmpty(t, png)
	assert.Equal(t, route.Cloud, res.Route)
	assert.Equal(t, "cloud", site.FetchedBy("/dashboard"))
	assert.Equal(t, 1, cloud.Live())
}
