package main

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRefsOfEachServer: the session finds the button and the search box
// in each server's snapshot format, as the servers wrote them in a run.
func TestRefsOfEachServer(t *testing.T) {
	cases := []struct {
		s              server
		text           string
		button, search string
	}{
		{hybrouteServer("", ""), "- searchbox \"Search products\" [ref=e606]\n- button \"Add to cart\" [ref=e607]", "e607", "e606"},
		{playwrightServer("", ""), "  - searchbox \"Search products\" [ref=f2e4]\n  - button \"Add to cart\" [ref=f2e5]", "f2e5", "f2e4"},
		{devtoolsServer("", ""), "  uid=1_4 searchbox \"Search products\"\n  uid=1_5 button \"Add to cart\"", "1_5", "1_4"},
	}
	for _, c := range cases {
		b, err := c.s.ref(c.text, "button", "Add to cart")
		require.NoError(t, err, c.s.name)
		assert.Equal(t, c.button, b, c.s.name)
		q, err := c.s.ref(c.text, "searchbox", "Search products")
		require.NoError(t, err, c.s.name)
		assert.Equal(t, c.search, q, c.s.name)
		_, err = c.s.ref(c.text, "button", "Checkout")
		assert.Error(t, err, c.s.name)
	}
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 20; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	assert.Equal(t, 10*time.Millisecond, percentile(ds, 0.5))
	assert.Equal(t, 19*time.Millisecond, percentile(ds, 0.95))
	assert.Equal(t, time.Duration(0), percentile(nil, 0.5))
	assert.Equal(t, 20*time.Millisecond, ds[0], "the samples are left in their order")
}

// TestCatalogueNavigationIsANavigation: the catalogue's navigation, timed
// as a step of its own, calls each server's navigate tool.
func TestCatalogueNavigationIsANavigation(t *testing.T) {
	for _, s := range []server{hybrouteServer("", ""), playwrightServer("", ""), devtoolsServer("", "")} {
		small, smallArgs := s.call(stepNavigate, "http://x/", "")
		big, bigArgs := s.call(stepNavBig, "http://x/catalogue", "")
		assert.Equal(t, small, big, s.name)
		assert.Equal(t, "http://x/catalogue", bigArgs["url"], s.name)
		assert.Equal(t, "http://x/", smallArgs["url"], s.name)
	}
	assert.Contains(t, steps, stepNavBig)
	assert.Less(t, slices.Index(steps, stepNavBig), slices.Index(steps, stepSnapBig), "the catalogue is opened before its snapshot")
}

// TestSelectSteps: -only keeps the session's order, adds what the chosen
// steps need, and refuses a word that names no step.
func TestSelectSteps(t *testing.T) {
	all, err := selectSteps("")
	require.NoError(t, err)
	assert.Equal(t, steps, all)
	got, err := selectSteps("screenshot, exec")
	require.NoError(t, err)
	assert.Equal(t, []string{stepNavigate, stepExec, stepScreenshot}, got)
	got, err = selectSteps("click")
	require.NoError(t, err)
	assert.Equal(t, []string{stepNavigate, stepSnapSmall, stepClick}, got, "the click needs the small page's snapshot for its ref")
	_, err = selectSteps("screenshot,scroll")
	assert.ErrorContains(t, err, `"scroll"`)
}
