package hybroute

import (
	"errors"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cdpcompat"
	"github.com/hybroute/hybroute/internal/chromium"
	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/route"
)

// The browser under test is $CHROMIUM (make compat sets it to each build
// of its matrix) or the system's Chromium. The tests below assert what
// hybroute does with a browser that is too old for a route; the tests of
// the cloud route skip on such a browser, since it never runs there.

var testMajor = sync.OnceValue(func() int {
	path, err := chromium.Find("")
	if err != nil {
		return 0
	}
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		return 0
	}
	m := regexp.MustCompile(`(\d+)\.\d+\.\d+`).FindStringSubmatch(string(out))
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
})

// requireCloudGuard skips a test of the cloud route on a browser the cloud
// guard refuses (TestOldCloudBrowserFallsBackWithTheReason covers those).
func requireCloudGuard(tb testing.TB) {
	tb.Helper()
	if m := testMajor(); m != 0 && cdpcompat.FirstOfflineRules(m) == cdpcompat.RulesNone {
		tb.Skipf("skipping: Chromium %d is refused on the cloud route (no offline rules)", m)
	}
}

// requireSupported skips a test on a browser older than the supported range.
func requireSupported(tb testing.TB) {
	tb.Helper()
	if m := testMajor(); m != 0 && m < cdpcompat.MinMajor {
		tb.Skipf("skipping: Chromium %d is below the supported range", m)
	}
}

// TestOldCloudBrowserFallsBackWithTheReason: a cloud browser the guard
// cannot cover is never used; the call runs locally, and the result says
// why, naming the browser. On a browser the cloud guard covers, the same
// call runs in the cloud.
func TestOldCloudBrowserFallsBackWithTheReason(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	w := newWorldServing(t, cloudtest.Browserbase, guardPages, WithResolver(guardResolver()))
	res, err := w.r.Navigate(testCtx(t), "old", w.site.url(publicHost, "/opener"), nil)
	require.NoError(t, err)
	if cdpcompat.FirstOfflineRules(testMajor()) != cdpcompat.RulesNone {
		assert.Equal(t, route.Cloud, res.Route)
		assert.False(t, res.FallbackFromCloud)
		return
	}
	assert.Equal(t, route.Local, res.Route)
	assert.True(t, res.FallbackFromCloud)
	assert.Contains(t, res.FallbackReason, "unsupported_browser: HeadlessChrome/"+strconv.Itoa(testMajor()))
	assert.Contains(t, res.FallbackReason, "Network.emulateNetworkConditionsByRule")
}

// TestBrowserBelowTheFloorIsRefused: a local Chromium older than the
// supported range fails Warm and the first call with ErrUnsupportedBrowser,
// naming the browser and the range, never a bare "target detached".
func TestBrowserBelowTheFloorIsRefused(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("skipping: this test drives a real Chromium (-short)")
	}
	if m := testMajor(); m == 0 || m >= cdpcompat.MinMajor {
		t.Skipf("skipping: Chromium %d is within the supported range (make compat runs this on 130)", m)
	}
	r := newRouter(t, nil, nil)
	err := r.Warm(testCtx(t))
	require.ErrorIs(t, err, ErrUnsupportedBrowser)
	var ub *UnsupportedBrowserError
	require.True(t, errors.As(err, &ub))
	assert.Contains(t, ub.Browser, strconv.Itoa(testMajor()))
	assert.Contains(t, err.Error(), "Chromium 131 to the newest")
	_, err = r.Navigate(testCtx(t), "s", "http://127.0.0.1:1/", nil)
	require.ErrorIs(t, err, ErrUnsupportedBrowser)
	assert.False(t, strings.Contains(err.Error(), "target detached"), err.Error())
}

func TestParseProduct(t *testing.T) {
	for in, want := range map[string]int{
		"HeadlessChrome/148.0.7778.0": 148, "Chrome/156.0.8078.114": 156, "Chromium/131.0.1": 131,
		"Lightpanda/x": 0, "": 0, "Chrome/": 0, "Chrome/99999999.1": 0,
	} {
		assert.Equal(t, want, cdpcompat.ParseProduct(in).Major, in)
	}
	for major, want := range map[int]cdpcompat.OfflineRules{
		0: cdpcompat.RulesPerCondition, 156: cdpcompat.RulesPerCondition, 153: cdpcompat.RulesPerCondition,
		152: cdpcompat.RulesTopLevel, 143: cdpcompat.RulesTopLevel, 142: cdpcompat.RulesNone, 131: cdpcompat.RulesNone,
	} {
		assert.Equal(t, want, cdpcompat.FirstOfflineRules(major), major)
	}
}
