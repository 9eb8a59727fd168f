package hybroute

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/profiles"
	"github.com/hybroute/hybroute/internal/testlog"
	"github.com/hybroute/hybroute/route"
)

// cookieSecret is the value of the login cookie of these tests: it must be
// in the jar on disk and never in a log line.
const cookieSecret = "s3cr3t-login-0f9a"

// loginRoutes: /login sets a persistent cookie and a session cookie; /who
// is titled with the cookies the request carried.
func loginRoutes(mux *http.ServeMux, _ *site) {
	mux.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "login", Value: cookieSecret, Path: "/", MaxAge: 3600, HttpOnly: true})
		http.SetCookie(w, &http.Cookie{Name: "tab", Value: "only-this-run", Path: "/"})
		servePage(w, "logged-in", nil)
	})
	mux.HandleFunc("/who", func(w http.ResponseWriter, r *http.Request) {
		servePage(w, "cookie", r.Header.Get("Cookie"))
	})
}

// whoAmI navigates the session to /who and returns the cookies the page
// was asked with.
func whoAmI(t *testing.T, r *Router, key, url string) string {
	t.Helper()
	ctx := testCtx(t)
	var title string
	_, err := r.Navigate(ctx, key, url, func(ctx context.Context, call *Call) error {
		if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
			return err
		}
		var err error
		title, err = pageTitle(ctx)
		return err
	})
	require.NoError(t, err)
	return strings.TrimPrefix(title, "cookie=")
}

// TestProfileKeepsCookiesAcrossReleaseAndRouters: a persistent cookie a
// page sets survives the session's Release and a new Router on the same
// directory; a session cookie does not; another key does not see it; the
// jar is 0600 in a 0700 directory and no log line holds the cookie.
func TestProfileKeepsCookiesAcrossReleaseAndRouters(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	s := newSite(t, loginRoutes)
	dir := filepath.Join(t.TempDir(), "profiles")
	logs := &testlog.Buffer{}
	r1 := newRouter(t, nil, logs, WithProfileDir(dir))
	ctx := testCtx(t)

	_, err := r1.Navigate(ctx, "alice", s.URL+"/login", nil)
	require.NoError(t, err)
	assert.Equal(t, "login="+cookieSecret+"; tab=only-this-run", whoAmI(t, r1, "alice", s.URL+"/who"),
		"before any release the session has both cookies")

	// The periodic save writes the jar while the session lives, so a
	// process that dies keeps what was saved.
	r1.profiles.SaveAll()
	b, err := os.ReadFile(filepath.Join(dir, profiles.Name("alice"+LocalSuffix), profiles.CookiesFile))
	require.NoError(t, err)
	assert.Contains(t, string(b), cookieSecret, "saved while the session lives")
	assert.NotContains(t, string(b), "only-this-run", "a session cookie is not kept")

	status, err := r1.Status(ctx, "alice")
	require.NoError(t, err)
	assert.True(t, status.Open && status.Profile && status.Route == route.Local, "the status names the profile: %+v", status)
	assert.True(t, r1.Rules().PersistentProfiles)
	require.NoError(t, r1.Release(ctx, "alice"))
	assert.Equal(t, "login="+cookieSecret, whoAmI(t, r1, "alice", s.URL+"/who"),
		"after Release the persistent cookie is back, the session cookie is not")
	assert.Empty(t, whoAmI(t, r1, "bob", s.URL+"/who"), "another key has a profile of its own")
	require.NoError(t, r1.Close())

	r2 := newRouter(t, nil, logs, WithProfileDir(dir))
	assert.Equal(t, "login="+cookieSecret, whoAmI(t, r2, "alice", s.URL+"/who"),
		"a new Router on the same directory has the cookie")

	fi, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	pd := filepath.Join(dir, profiles.Name("alice"+LocalSuffix))
	fi, err = os.Stat(pd)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	jar := filepath.Join(pd, profiles.CookiesFile)
	fi, err = os.Stat(jar)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	b, err = os.ReadFile(jar)
	require.NoError(t, err)
	var st struct {
		Cookies []map[string]any `json:"cookies"`
		Origins []any            `json:"origins"`
	}
	require.NoError(t, json.Unmarshal(b, &st), "the jar is in Playwright's storageState shape")
	require.Len(t, st.Cookies, 1)
	assert.Equal(t, "login", st.Cookies[0]["name"])
	assert.Equal(t, "127.0.0.1", st.Cookies[0]["domain"], "host-only, as Playwright writes it")
	assert.NotNil(t, st.Origins)
	assert.NotContains(t, logs.String(), cookieSecret, "no log line holds a cookie value")
}

// TestProfileDirIsLocked: a second router on a directory in use fails
// with ErrProfileLocked, naming the holder; once the first closes, the
// directory is free.
func TestProfileDirIsLocked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r1, err := New(nil, WithProfileDir(dir))
	require.NoError(t, err)
	_, err = New(nil, WithProfileDir(dir))
	require.ErrorIs(t, err, ErrProfileLocked)
	assert.Contains(t, err.Error(), fmt.Sprintf("pid %d", os.Getpid()))
	assert.Contains(t, err.Error(), dir)
	require.NoError(t, r1.Close())
	r2, err := New(nil, WithProfileDir(dir))
	require.NoError(t, err, "Close lets go of the lock")
	require.NoError(t, r2.Close())
}

// TestProfileDirIsNotAFile: a path that is a file is refused with a
// clear error, not taken over.
func TestProfileDirIsNotAFile(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(f, []byte("keep me"), 0o600))
	_, err := New(nil, WithProfileDir(f))
	require.Error(t, err)
	b, _ := os.ReadFile(f)
	assert.Equal(t, "keep me", string(b))
}

// TestProfileUnreadableJarFailsTheSession: a jar that is not JSON fails
// the session's creation with an error naming the file, and is left as it
// was: going on would save an empty jar over it.
func TestProfileUnreadableJarFailsTheSession(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	s := newSite(t, loginRoutes)
	dir := t.TempDir()
	pd := filepath.Join(dir, profiles.Name("carol"+LocalSuffix))
	require.NoError(t, os.Mkdir(pd, 0o700))
	jar := filepath.Join(pd, profiles.CookiesFile)
	require.NoError(t, os.WriteFile(jar, []byte("{not json"), 0o600))
	r := newRouter(t, nil, &testlog.Buffer{}, WithProfileDir(dir))
	_, err := r.Navigate(testCtx(t), "carol", s.URL+"/who", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), jar)
	var se *json.SyntaxError
	assert.True(t, errors.As(err, &se), "the parser's error is wrapped: %v", err)
	require.NoError(t, r.Close())
	b, _ := os.ReadFile(jar)
	assert.Equal(t, "{not json", string(b))
}

// TestProfileHandsOverFromAnEndingSession: a key's new session made while
// its old one is still ending (the reaper's window) starts from the old
// one's cookies, and the old one's late release saves nothing over them.
func TestProfileHandsOverFromAnEndingSession(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	s := newTestSidecar(t)
	site := newSite(t, loginRoutes)
	ctx := testCtx(t)
	ps, err := profiles.Open(t.TempDir(), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, ps.Close()) })

	old, err := s.Open(ctx, "k")
	require.NoError(t, err)
	require.NoError(t, ps.Restore(ctx, profileTab(old), "k"))
	navigate(t, ctx, old, site.URL+"/login")

	fresh, err := s.Open(ctx, "k")
	require.NoError(t, err)
	require.NoError(t, ps.Restore(ctx, profileTab(fresh), "k"))
	navigate(t, ctx, fresh, site.URL+"/who")
	assert.Equal(t, "cookie=login="+cookieSecret, title(t, ctx, fresh), "the new session has the ending one's cookie")

	// What the old session does after the hand-over must not reach the
	// jar, which is the new session's now.
	_, err = run(ctx, old, chromedp.Evaluate[any](`document.cookie = "late=1; Max-Age=3600; path=/"`))
	require.NoError(t, err)
	require.NoError(t, ps.Release(profileTab(old)))
	require.NoError(t, old.Close())
	require.NoError(t, ps.Release(profileTab(fresh)))
	require.NoError(t, fresh.Close())
	b, err := os.ReadFile(filepath.Join(ps.Dir(), profiles.Name("k"), profiles.CookiesFile))
	require.NoError(t, err)
	assert.Contains(t, string(b), cookieSecret)
	assert.NotContains(t, string(b), `"late"`, "the old session's late release saved nothing")
}
