package main

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestViewBaseNamesAnAddressPeopleReach: a view's link names the address
// bound, or, bound to every address, the --allow-host name people
// elsewhere reach it by, with the port when the name has none.
func TestViewBaseNamesAnAddressPeopleReach(t *testing.T) {
	at := func(ip string) *net.TCPAddr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 8931} }
	assert.Equal(t, "http://127.0.0.1:8931/live/", viewBase(at("127.0.0.1"), nil))
	assert.Equal(t, "http://10.1.2.3:8931/live/", viewBase(at("10.1.2.3"), []string{"agents.example"}))
	assert.Equal(t, "http://127.0.0.1:8931/live/", viewBase(at("0.0.0.0"), nil))
	assert.Equal(t, "http://agents.example:8931/live/", viewBase(at("0.0.0.0"), []string{"agents.example"}))
	assert.Equal(t, "http://agents.example:443/live/", viewBase(at("::"), []string{"agents.example:443"}))
}
