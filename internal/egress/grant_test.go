package egress

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

// What a grant covers: the named hosts on any port, and an address literal
// only when it is an address a named host had.
func TestGrantCovers(t *testing.T) {
	t.Parallel()
	var g Grant
	assert.True(t, g.Empty())
	assert.False(t, g.Covers("127.0.0.1", addrs("127.0.0.1")), "the zero grant covers nothing")
	g.Add("localhost", addrs("127.0.0.1", "::1")...)
	g.Add("nas.test.", addrs("::ffff:192.168.1.10")...)
	assert.False(t, g.Empty())
	for _, c := range []struct {
		host  string
		addrs []netip.Addr
		want  bool
	}{
		{"localhost", nil, true},
		{"LOCALHOST.", nil, false}, // hosts are as the parser writes them: lower case
		{"localhost.", nil, true},
		{"127.0.0.1", addrs("127.0.0.1"), true}, // an address localhost had
		{"[::1]", addrs("::1"), true},
		{"nas.test", addrs("10.9.9.9"), true}, // a named host, whatever it resolves to now
		{"192.168.1.10", addrs("192.168.1.10"), true},
		{"10.0.0.5", addrs("10.0.0.5"), false},
		{"lan.test", addrs("127.0.0.1"), false}, // a name the call did not name, whatever its answer
		{"127.0.0.1", nil, false},
		{"127.0.0.1", addrs("127.0.0.1", "10.0.0.5"), false}, // every address must be covered
	} {
		assert.Equal(t, c.want, g.Covers(c.host, c.addrs), "%s %v", c.host, c.addrs)
	}
	assert.True(t, g.CoversURL("http://localhost:8080/x"), "any port of a named host")
	assert.True(t, g.CoversURL("http://127.0.0.1/"))
	assert.True(t, g.CoversURL("http://[::1]:3000/"))
	assert.False(t, g.CoversURL("https://example.com/"), "a public page is not within the grant")
	assert.False(t, g.CoversURL("not a url"))
}

// TestDoorClosesItsConnections: a grant taken away closes the upstream
// connections dialled under it, a document of the running call's hosts
// keeps it, a closed door takes no more connections, and a connection
// through the browser-wide door is public only.
func TestDoorClosesItsConnections(t *testing.T) {
	t.Parallel()
	srv := newSilentServer(t)
	p := start(t, newOwner(), Config{})
	code, _ := connectThrough(t, p.Addr(), srv.addr())
	assert.Equal(t, http.StatusForbidden, code, "no session: public only")

	d, err := p.OpenDoor(context.Background())
	require.NoError(t, err)
	d.Bind("ctx-1")
	var g Grant
	g.Add("127.0.0.1", addrs("127.0.0.1")...)
	d.Set(g)
	code, tun := connectThrough(t, d.Addr(), srv.addr())
	require.Equal(t, http.StatusOK, code)
	defer tun.Close()

	p.Leave("ctx-1", "http://127.0.0.1:9/still-granted")
	assert.False(t, d.Grant().Empty(), "a document on a granted host keeps the grant")
	d.NameCall([]string{"public.test"})
	p.Leave("ctx-1", "https://public.test/")
	assert.False(t, d.Grant().Empty(), "so does one on a host the running call named")
	d.NameCall(nil)
	p.Leave("ctx-2", "https://public.test/")
	assert.False(t, d.Grant().Empty(), "another context's document is not this door's")
	p.Leave("ctx-1", "https://public.test/")
	assert.True(t, d.Grant().Empty(), "a document from another host ends it")
	require.NoError(t, tun.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = tun.Read(make([]byte, 1))
	assert.Error(t, err, "the tunnel dialled under the grant is closed")
	code, _ = connectThrough(t, d.Addr(), srv.addr())
	assert.Equal(t, http.StatusForbidden, code)

	d.Close()
	_, err = net.DialTimeout("tcp", d.Addr(), time.Second)
	assert.Error(t, err, "a closed door takes no connection")
}

// TestDoorKeepsWhyItFailed: the door of a session keeps each connection it
// did not make and why (a refusal, a name with no address, a dial that
// failed), so its user can tell the caller what the browser's network
// error hides; FailureFor finds the newest for a URL's host and port.
func TestDoorKeepsWhyItFailed(t *testing.T) {
	t.Parallel()
	p := start(t, newOwner(), Config{})
	d, err := p.OpenDoor(context.Background())
	require.NoError(t, err)
	d.Bind("ctx-1")
	before := time.Now()

	srv := newSilentServer(t)
	_, port, _ := net.SplitHostPort(srv.addr())
	code, _ := connectThrough(t, d.Addr(), srv.addr())
	assert.Equal(t, http.StatusForbidden, code, "no grant: 127.0.0.1 is refused")
	code, _ = connectThrough(t, d.Addr(), "nowhere.test:443")
	assert.Equal(t, http.StatusBadGateway, code)
	code, _ = connectThrough(t, d.Addr(), "imds.test:80")
	assert.Equal(t, http.StatusForbidden, code)
	srv.close()
	var g Grant
	g.Add("127.0.0.1", loopback4()...)
	d.Set(g)
	code, _ = connectThrough(t, d.Addr(), srv.addr())
	assert.Equal(t, http.StatusBadGateway, code, "nothing listens any more")

	fs := d.Failures(before)
	require.Len(t, fs, 4)
	assert.Equal(t, []FailureKind{Refused, Unresolved, Refused, Unreachable}, []FailureKind{fs[0].Kind, fs[1].Kind, fs[2].Kind, fs[3].Kind})
	r, ok := errors.AsType[*Refusal](fs[0].Err)
	require.True(t, ok)
	assert.Equal(t, "private_not_named", r.Reason)
	assert.ErrorIs(t, fs[2].Err, errMetadata)

	f, ok := d.FailureFor("nowhere.test", 443, before)
	require.True(t, ok)
	assert.Equal(t, Unresolved, f.Kind)
	n, _ := strconv.Atoi(port)
	f, ok = d.FailureFor("127.0.0.1", n, before)
	require.True(t, ok)
	assert.Equal(t, Unreachable, f.Kind, "the newest for the host and port")
	_, ok = d.FailureFor("nowhere.test", 80, before)
	assert.False(t, ok, "another port")
	assert.Empty(t, d.Failures(time.Now().Add(time.Second)))

	code, _ = connectThrough(t, p.Addr(), "nowhere.test:443")
	assert.Equal(t, http.StatusBadGateway, code)
	assert.Len(t, d.Failures(before), 4, "the browser-wide door's failures are no session's")
}
