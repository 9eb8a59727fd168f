package egress

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A door is clean for a grant when every document its context loaded came
// from a host the grant covers; documents of no network host do not
// count; an unknown context marks every door; too many hosts, or one that
// cannot be read, leave the door clean for nothing.
func TestDoorCleanForAGrant(t *testing.T) {
	t.Parallel()
	p := start(t, newOwner(), Config{})
	open := func(key string) *Door {
		d, err := p.OpenDoor(context.Background())
		require.NoError(t, err)
		d.Bind(key)
		t.Cleanup(d.Close)
		return d
	}
	var local, nas Grant
	local.Add("localhost", loopback4()...)
	nas.Add("nas.test", addrs("192.168.1.10")...)

	a := open("ctx-a")
	assert.True(t, a.Clean(local), "a context that loaded nothing is clean for any grant")
	for _, u := range []string{"about:blank", "data:text/html,x", "blob:http://localhost:3000/1", "file:///etc/hosts"} {
		p.Loaded("ctx-a", u)
	}
	assert.True(t, a.Clean(local), "documents of no network host run nothing of a host")
	p.Loaded("ctx-a", "http://localhost:3000/app")
	p.Loaded("ctx-a", "http://127.0.0.1:8080/api")
	p.Loaded("ctx-a", "http://[::1]:3000/")
	assert.False(t, a.Clean(local), "::1 is not an address localhost had in this grant")
	var both Grant
	both.Add("localhost", addrs("127.0.0.1", "::1")...)
	assert.True(t, a.Clean(both), "every host loaded is covered, literals by the addresses they name")
	assert.False(t, a.Clean(nas), "hosts another grant does not cover")
	p.Loaded("ctx-a", "https://dashboard.test/")
	assert.False(t, a.Clean(both), "a public document ran there")

	assert.False(t, a.SetClean(both), "a grant is not given to a context that is not clean for it")
	assert.True(t, a.Grant().Empty())
	assert.True(t, a.SetClean(Grant{}), "nothing may always be granted")

	b, c := open("ctx-b"), open("ctx-c")
	p.Loaded("ctx-b", "http://localhost:3000/")
	assert.True(t, b.Clean(both))
	assert.True(t, b.SetClean(both))
	assert.True(t, b.Grant().Covers("localhost", nil), "a clean context gets the grant")
	assert.True(t, c.Clean(both), "another context's documents are not this one's")
	p.Loaded("", "https://dashboard.test/")
	assert.False(t, b.Clean(both), "a document of no known context may have run in any")
	assert.False(t, c.Clean(both))
	f := open("ctx-f")
	p.Loaded("ctx-none", "https://dashboard.test/")
	assert.True(t, f.Clean(both), "a context with no door (the default one) marks no other")

	d := open("ctx-d")
	d.Loaded("http://%zz/")
	assert.False(t, d.Clean(both), "a URL that cannot be read is a host no grant covers")

	e := open("ctx-e")
	var many Grant
	for i := range maxLoadedHosts + 1 {
		h := fmt.Sprintf("h%d.test", i)
		many.Add(h)
		e.Loaded("http://" + h + "/")
	}
	assert.False(t, e.Clean(many), "more hosts than a door keeps: clean for no grant")
}
