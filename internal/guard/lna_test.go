package guard

import (
	"context"
	"testing"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/stretchr/testify/assert"

	"github.com/hybroute/hybroute/internal/cdpcompat"
	"github.com/hybroute/hybroute/route"
)

// TestBrowserCheckPatterns: the browser-check mode pauses what the local
// browser's patterns pause (every document, every metadata-shaped URL) and
// every document again at its response, and nothing else; every other
// guard keeps its patterns.
func TestBrowserCheckPatterns(t *testing.T) {
	assert.Equal(t, guardPatterns, browserCheckPatterns[:len(guardPatterns)])
	last := browserCheckPatterns[len(browserCheckPatterns)-1]
	assert.Equal(t, &fetch.RequestPattern{URLPattern: "*", ResourceType: network.ResourceTypeDocument, RequestStage: fetch.RequestStageResponse}, last)
	assert.Len(t, browserCheckPatterns, len(guardPatterns)+1)

	g := New(Config{Route: route.Cloud})
	assert.Equal(t, ModeEveryRequest, g.Mode())
	assert.Equal(t, EveryRequest, g.patterns())
	g.mode.Store(int32(ModeBrowserCheck))
	assert.Equal(t, browserCheckPatterns, g.patterns())
	assert.Equal(t, guardPatterns, New(Config{Route: route.Local}).patterns())
}

// TestBrowserCheckIsChosenOnlyWhereItHolds: without the opt-in, with
// private addresses allowed, with operator host rules, or on a major
// below BrowserCheckMinMajor, a remote guard pauses every request, and
// says so without asking the browser anything.
func TestBrowserCheckIsChosenOnlyWhereItHolds(t *testing.T) {
	for name, c := range map[string]struct {
		optIn bool
		cfg   Config
		major int
	}{
		"the default":          {cfg: Config{Route: route.Cloud}, major: 156},
		"private on the cloud": {optIn: true, cfg: Config{Route: route.Cloud, RemotePrivate: true}, major: 156},
		"host rules":           {optIn: true, cfg: Config{Route: route.Cloud, EveryRequest: true}, major: 156},
		"an old major":         {optIn: true, cfg: Config{Route: route.Cloud}, major: BrowserCheckMinMajor - 1},
	} {
		t.Run(name, func(t *testing.T) {
			if c.optIn {
				t.Setenv(BrowserCheckEnv, "1")
			} else {
				t.Setenv(BrowserCheckEnv, "")
			}
			g := New(c.cfg)
			g.browser = cdpcompat.Browser{Major: c.major}
			g.chooseMode(context.Background(), nil) // a nil Mux: any command would panic
			assert.Equal(t, ModeEveryRequest, g.Mode())
		})
	}
	assert.Equal(t, "browser-check", ModeBrowserCheck.String())
	assert.Equal(t, "every-request", ModeEveryRequest.String())
}
