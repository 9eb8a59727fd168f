package statesync

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/state"
)

func TestSplitAsksOncePerURL(t *testing.T) {
	st := &state.State{
		Cookies: []state.Cookie{
			{Name: "a", Domain: ".pub.example", Path: "/"},
			{Name: "b", Domain: "pub.example", Path: "/"},
			{Name: "c", Domain: "db.internal", Path: "/"},
			{Name: "d", Domain: "::1", Path: "/"},
		},
		Origins: []state.Origin{{Origin: "https://pub.example"}, {Origin: "http://db.internal"}},
	}
	asked := map[string]int{}
	allowed := func(u string) bool {
		asked[u]++
		return u == "https://pub.example/"
	}
	kept, dropped := Split(st, false, allowed)
	require.Len(t, kept.Cookies, 2)
	assert.Equal(t, "a", kept.Cookies[0].Name)
	assert.Equal(t, "b", kept.Cookies[1].Name)
	assert.Equal(t, []string{"https://pub.example"}, OriginsOf(kept))
	assert.Len(t, dropped.Cookies, 2)
	assert.Equal(t, []string{"http://db.internal"}, OriginsOf(dropped))
	assert.Equal(t, 1, asked["https://pub.example/"], "a cookie's host and an origin of the same URL are asked once")
	assert.Equal(t, 1, asked["https://[::1]/"], "an IPv6 cookie domain is bracketed")

	kept, dropped = Split(st, true, allowed)
	assert.Len(t, kept.Cookies, 4, "every cookie is kept without asking")
	assert.Empty(t, dropped.Cookies)
	assert.Equal(t, []string{"http://db.internal"}, OriginsOf(dropped), "origins are still asked")
}

func TestSplitNil(t *testing.T) {
	kept, dropped := Split(nil, false, func(string) bool { return true })
	assert.Empty(t, kept.Cookies)
	assert.Empty(t, dropped.Origins)
	assert.Nil(t, OriginsOf(nil))
}
