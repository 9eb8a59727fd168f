package route_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hybroute/hybroute/route"
)

func TestRouteNames(t *testing.T) {
	assert.Equal(t, "cloud", route.Cloud.String())
	assert.Equal(t, "local", route.Local.String())
	assert.Equal(t, "Route(7)", route.Route(7).String())
	var unset route.Route
	assert.Equal(t, route.None, unset, "an unset route names no browser")
	assert.Equal(t, "none", unset.String())
}
