package secrets

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const fileText = `{
  "app": {"value": "s3cret-pa55", "origins": ["HTTP://127.0.0.1:80/", "https://App.Example.com:443"]},
  "env-one": {"env": "HYB_TEST_SECRET", "origins": ["http://[::1]:8080"], "local_only": true}
}`

func getenv(k string) string {
	if k == "HYB_TEST_SECRET" {
		return "from-the-env-1"
	}
	return ""
}

// TestLoadReadsTheFileAndRefusesOneOthersCanOpen: values come from the
// file or the environment, origins are normalised as browsers serialise
// them, and a file open to others is refused.
func TestLoadReadsTheFileAndRefusesOneOthersCanOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secrets.json")
	require.NoError(t, os.WriteFile(path, []byte(fileText), 0o600))
	ss, err := Load(path, getenv)
	require.NoError(t, err)
	require.Len(t, ss, 2)
	set, err := New(ss...)
	require.NoError(t, err)
	assert.Equal(t, []string{"app", "env-one"}, set.Names())
	app, ok := set.Get("app")
	require.True(t, ok)
	assert.Equal(t, []string{"http://127.0.0.1", "https://app.example.com"}, app.Origins)
	assert.True(t, app.Binds("http://127.0.0.1"))
	assert.True(t, app.Binds("https://app.example.com"))
	assert.False(t, app.Binds("https://app.example.com:8443"))
	assert.False(t, app.Binds("http://app.example.com"), "the scheme is part of the origin")
	assert.False(t, app.Binds("null"))
	env, _ := set.Get("env-one")
	assert.Equal(t, "from-the-env-1", env.Value)
	assert.True(t, env.LocalOnly)
	assert.True(t, env.Binds("http://[::1]:8080"))

	for _, mode := range []os.FileMode{0o640, 0o604, 0o620} {
		require.NoError(t, os.Chmod(path, mode))
		_, err := Load(path, getenv)
		assert.ErrorIs(t, err, ErrFileMode, "%04o", mode)
	}
}

// TestParseErrorsNeverQuoteAValue: whatever is wrong, the error says
// where, not what the file holds.
func TestParseErrorsNeverQuoteAValue(t *testing.T) {
	for _, text := range []string{
		`{"a": {"value": "s3cret-pa55", "origins": ["http://x"]`,
		`{"a": {"value": "s3cret-pa55", "origin": ["http://x"]}}`,
		`{"a": {"value": "s3cret-pa55", "env": "HOME", "origins": ["http://x"]}}`,
		`{"a": {"value": "s3cret-pa55"}}`,
		`{"a": {"value": "s3cret-pa55", "origins": ["http://x/path"]}}`,
		`{"a": {"value": "s3cret-pa55", "origins": ["ftp://x"]}}`,
		`{"a": {"value": "s3cret-pa55", "origins": ["https://*.x.com"]}}`,
		`{"a b": {"value": "s3cret-pa55", "origins": ["http://x"]}}`,
		`{"a": {"value": "s3c", "origins": ["http://x"]}}`,
		`{"a": {"env": "UNSET_VAR", "origins": ["http://x"]}}`,
		`["s3cret-pa55"]`,
	} {
		ss, err := Parse([]byte(text), getenv)
		if err == nil {
			_, err = New(ss...)
		}
		require.Error(t, err, text)
		assert.True(t, errors.Is(err, ErrInvalid), "%s: %v", text, err)
		assert.NotContains(t, err.Error(), "s3c", text)
	}
}

// TestHandlerScrubsLogs: a secret in a message, a string, an error or a
// group never reaches the handler underneath.
func TestHandlerScrubsLogs(t *testing.T) {
	set, err := New(Secret{Name: "a", Value: "s3cret-pa55", Origins: []string{"http://x"}})
	require.NoError(t, err)
	var buf bytes.Buffer
	log := slog.New(set.Handler(slog.NewTextHandler(&buf, nil))).With("pre", "x=s3cret-pa55")
	log.Info("typed s3cret-pa55", "s", "czNjcmV0LXBhNTU=", "err", errors.New("bad s3cret-pa55"),
		slog.Group("g", "hex", "7333637265742d70613535"), "n", 3)
	out := buf.String()
	assert.Contains(t, out, "REDACTED")
	assert.Contains(t, out, "n=3")
	for _, v := range []string{"s3cret-pa55", "czNjcmV0LXBhNTU", "7333637265742d70613535"} {
		assert.NotContains(t, out, v)
	}
	assert.Equal(t, slog.Default().Handler(), (*Set)(nil).Handler(slog.Default().Handler()))
}

// TestScrubFindsAValueCutShort: the toolset's cuts leave no half value.
func TestScrubFindsAValueCutShort(t *testing.T) {
	set, err := New(Secret{Name: "a", Value: "s3cret-pa55", Origins: []string{"http://x"}})
	require.NoError(t, err)
	assert.Equal(t, "console: REDACTED…", set.Scrub("console: s3cret-p…"))
}

// TestASecretPrintsNoValue: fmt's verbs show the name and origins only.
func TestASecretPrintsNoValue(t *testing.T) {
	x := Secret{Name: "a", Value: "s3cret-pa55", Origins: []string{"http://x"}}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		out := fmt.Sprintf(verb, x)
		assert.NotContains(t, out, "s3cret", verb)
		assert.Contains(t, out, `secret "a" for http://x`, verb)
	}
}
