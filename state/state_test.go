package state_test

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/state"
)

func TestParseReadsPlaywrightFiles(t *testing.T) {
	t.Parallel()
	// As Playwright writes it, with fields hybroute has no use for.
	st, err := state.Parse([]byte(`{"cookies": [{"name": "sid", "value": "v", "domain": ".example.com", "path": "/",
		"expires": 1893456000.5, "httpOnly": true, "secure": true, "sameSite": "None", "partitionKey": "x"}],
		"origins": [{"origin": "HTTPS://Example.com:443", "localStorage": [{"name": "a", "value": "b"}], "indexedDB": []}]}`))
	require.NoError(t, err)
	assert.Equal(t, state.Cookie{Name: "sid", Value: "v", Domain: ".example.com", Path: "/", Expires: 1893456000.5,
		HTTPOnly: true, Secure: true, SameSite: "None"}, st.Cookies[0])
	assert.Equal(t, "https://example.com", st.Origins[0].Origin, "the origin as the browser writes it")
	assert.Nil(t, st.Origins[0].SessionStorage)
}

func TestWriteFileIsPrivate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.json")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
	st := &state.State{Cookies: []state.Cookie{{Name: "sid", Value: "v", Domain: "x.test", Path: "/", Expires: -1, SameSite: "Lax"}}}
	require.NoError(t, state.WriteFile(path, st))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "a state file holds credentials")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"origins": []`, "empty lists, as Playwright writes them")
	back, err := state.Parse(b)
	require.NoError(t, err)
	assert.Equal(t, st.Cookies, back.Cookies)
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file is left")
}

func TestStateIsNeverLogged(t *testing.T) {
	t.Parallel()
	var buf strings.Builder
	log := slog.New(slog.NewTextHandler(&buf, nil))
	st := &state.State{Cookies: []state.Cookie{{Name: "sid", Value: "secret-cookie", Domain: "x.test", Path: "/"}},
		Origins: []state.Origin{{Origin: "https://x.test", LocalStorage: []state.Item{{Name: "t", Value: "secret-storage"}}}}}
	log.Info("state", "state", st, "value", *st, "cookie", st.Cookies[0], "origin", st.Origins[0], "item", st.Origins[0].LocalStorage[0])
	out := buf.String() + fmt.Sprint(st) + fmt.Sprintf("%v %+v %#v %s %v %+v %v", st, *st, st, st.Cookies[0], st.Origins, st.Origins[0].LocalStorage, []*state.State{st, nil})
	assert.NotContains(t, out, "secret-")
	assert.Contains(t, buf.String(), "state.cookies=1")
	assert.Contains(t, out, `cookie "sid" for x.test/`)
	var none *state.State
	assert.Equal(t, "<nil>", fmt.Sprint(none))
}
