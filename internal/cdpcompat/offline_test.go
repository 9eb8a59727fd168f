package cdpcompat

import (
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOfflineParamsP2P: with p2pOffline the rules end with one that lets
// every URL by and one with no pattern, offline (the one Chromium applies
// to p2p sockets); the first match wins, so the patterns stay first. The
// older shape, whose offline flag is the command's, gets neither.
func TestOfflineParamsP2P(t *testing.T) {
	t.Parallel()
	p, ok := OfflineParams(RulesPerCondition, []string{"*://169.254.169.254:*/*"}, true).(network.EmulateNetworkConditionsByRuleParams)
	require.True(t, ok)
	c := p.MatchedNetworkConditions
	require.Len(t, c, 3)
	assert.True(t, c[0].Offline)
	assert.Equal(t, "*://*:*/*", c[1].URLPattern)
	assert.False(t, c[1].Offline)
	assert.Empty(t, c[2].URLPattern)
	assert.True(t, c[2].Offline)

	p, _ = OfflineParams(RulesPerCondition, []string{"*://169.254.169.254:*/*"}, false).(network.EmulateNetworkConditionsByRuleParams)
	assert.Len(t, p.MatchedNetworkConditions, 1)
	old, ok := OfflineParams(RulesTopLevel, []string{"*://169.254.169.254:*/*"}, true).(topLevelParams)
	require.True(t, ok)
	assert.Len(t, old.MatchedNetworkConditions, 1)
}
