package hybroute

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/statesync"
	"github.com/hybroute/hybroute/internal/testlog"
	"github.com/hybroute/hybroute/route"
	"github.com/hybroute/hybroute/state"
)

// loginSite is a loopback login page: POST /login sets a session cookie
// for the user it names, /account shows who is logged in (its title says
// "logged in as X", or "anonymous" without a known cookie).
type loginSite struct {
	mu    sync.Mutex
	users map[string]string // session id → user
}

func (l *loginSite) routes(mux *http.ServeMux, _ *site) {
	mux.HandleFunc("/login-page", staticPage("login"))
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		user := r.FormValue("user")
		sid := rand.Text()
		l.mu.Lock()
		l.users[sid] = user
		l.mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: sid, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("/account", func(w http.ResponseWriter, r *http.Request) {
		who := "anonymous"
		if c, err := r.Cookie("sid"); err == nil {
			l.mu.Lock()
			if u, ok := l.users[c.Value]; ok {
				who = "logged in as " + u
			}
			l.mu.Unlock()
		}
		servePage(w, "account", who)
	})
}

func newLoginSite() *loginSite { return &loginSite{users: map[string]string{}} }

// logIn logs the session in as user from the login page, and stores a
// theme in its local storage and a draft in its session storage.
func logIn(t *testing.T, r *Router, key, page, user string) Result {
	t.Helper()
	ctx := testCtx(t)
	res, err := r.Navigate(ctx, key, page, nil)
	require.NoError(t, err)
	_, err = r.Exec(ctx, key, "", func(ctx context.Context, call *Call) error {
		_, err := chromedp.Run(ctx, chromedp.Evaluate[int](`fetch("/login", {method: "POST", body: new URLSearchParams({user: "`+user+`"})}).then(r => {
			localStorage.setItem("theme", "dark-`+user+`");
			sessionStorage.setItem("draft", "half-written");
			return r.status;
		})`, chromedp.EvalAwaitPromise))
		return err
	})
	require.NoError(t, err)
	return res
}

// accountPage opens /account in the session and returns its title, and
// the theme and draft its storages hold.
func accountPage(t *testing.T, r *Router, key, url string) (Result, string, string, string) {
	t.Helper()
	ctx := testCtx(t)
	var title, theme, draft string
	res, err := r.Navigate(ctx, key, url, func(ctx context.Context, call *Call) error {
		if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
			return err
		}
		var err error
		if title, err = pageTitle(ctx); err != nil {
			return err
		}
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[localStorage.getItem("theme") || "", sessionStorage.getItem("draft") || ""]`))
		if err != nil {
			return err
		}
		theme, draft = got[0], got[1]
		return nil
	})
	require.NoError(t, err)
	return res, title, theme, draft
}

// TestStateMovesBetweenRoutes is the done-when test: a login saved from a
// session on one route and loaded into a fresh session on the other shows
// the page logged in, both ways: cloud (the stand-in browser behind the
// fake provider) to local (the sidecar), and local to cloud. The state
// goes through a file.
func TestStateMovesBetweenRoutes(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	login := newLoginSite()
	w := newWorldServing(t, cloudtest.Browserbase, login.routes)
	local := newRouter(t, nil, w.logs)
	page, account := w.site.url(publicHost, "/login-page"), w.site.url(publicHost, "/account")
	origin := w.site.url(publicHost, "")
	dir := t.TempDir()

	t.Run("cloud to local", func(t *testing.T) {
		res := logIn(t, w.r, "alice", page, "alice")
		require.Equal(t, route.Cloud, res.Route)
		st, err := w.r.SaveState(testCtx(t), "alice")
		require.NoError(t, err)
		require.Len(t, st.Cookies, 1)
		assert.Equal(t, "sid", st.Cookies[0].Name)
		assert.Equal(t, publicHost, st.Cookies[0].Domain)
		assert.True(t, st.Cookies[0].HTTPOnly)
		require.Len(t, st.Origins, 1)
		assert.Equal(t, origin, st.Origins[0].Origin)
		assert.Equal(t, []state.Item{{Name: "theme", Value: "dark-alice"}}, st.Origins[0].LocalStorage)
		assert.Equal(t, []state.Item{{Name: "draft", Value: "half-written"}}, st.Origins[0].SessionStorage)

		path := filepath.Join(dir, "alice.json")
		require.NoError(t, state.WriteFile(path, st))
		loaded, err := state.ReadFile(path)
		require.NoError(t, err)

		_, title, _, _ := accountPage(t, local, "fresh", account)
		require.Equal(t, "anonymous", title, "a session without the state is not logged in")
		require.NoError(t, local.LoadState(testCtx(t), "alice-here", loaded))
		res, title, theme, draft := accountPage(t, local, "alice-here", account)
		assert.Equal(t, route.Local, res.Route)
		assert.Equal(t, "logged in as alice", title)
		assert.Equal(t, "dark-alice", theme)
		assert.Equal(t, "half-written", draft)
		assert.Equal(t, localUA, w.site.uaOf("/account"), "the local browser fetched the page")
	})

	t.Run("local to cloud", func(t *testing.T) {
		res := logIn(t, local, "bob", page, "bob")
		require.Equal(t, route.Local, res.Route)
		st, err := local.SaveState(testCtx(t), "bob")
		require.NoError(t, err)
		path := filepath.Join(dir, "bob.json")
		require.NoError(t, state.WriteFile(path, st))
		loaded, err := state.ReadFile(path)
		require.NoError(t, err)

		require.NoError(t, w.r.LoadState(testCtx(t), "bob-there", loaded))
		res, title, theme, draft := accountPage(t, w.r, "bob-there", account)
		assert.Equal(t, route.Cloud, res.Route)
		assert.False(t, res.FallbackFromCloud)
		assert.Equal(t, "logged in as bob", title)
		assert.Equal(t, "dark-bob", theme)
		assert.Equal(t, "half-written", draft)
		assert.Equal(t, cloudUA, w.site.uaOf("/account"), "the cloud browser fetched the page")
	})
}

// TestStateFollowsFallback: a key with a state loaded whose cloud session
// falls back to local Chromium starts logged in there too.
func TestStateFollowsFallback(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	login := newLoginSite()
	w := newWorldServing(t, cloudtest.Browserbase, login.routes)
	page, account := w.site.url(publicHost, "/login-page"), w.site.url(publicHost, "/account")
	logIn(t, w.r, "carol", page, "carol")
	st, err := w.r.SaveState(testCtx(t), "carol")
	require.NoError(t, err)

	require.NoError(t, w.r.LoadState(testCtx(t), "carol-again", st))
	w.api.OnCreate(cloudtest.RateLimited("17"))
	res, title, theme, _ := accountPage(t, w.r, "carol-again", account)
	require.True(t, res.FallbackFromCloud, "the provider refused: the call fell back")
	assert.Equal(t, route.Local, res.Route)
	assert.Equal(t, "logged in as carol", title)
	assert.Equal(t, "dark-carol", theme)
}

// TestStateFollowsRouteChange: cookies a session got on one route follow
// it to the other when a call moves it there, both ways, once a state was
// loaded for its key.
func TestStateFollowsRouteChange(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	login := newLoginSite()
	w := newWorldServing(t, cloudtest.Browserbase, login.routes)
	ctx := testCtx(t)
	require.NoError(t, w.r.LoadState(ctx, "dave", &state.State{}))
	// The cloud session logs in; a call on a private page moves the key
	// to the sidecar, which gets the cookie.
	logIn(t, w.r, "dave", w.site.url(publicHost, "/login-page"), "dave")
	res, err := w.r.Navigate(ctx, "dave", w.site.URL+"/private", nil)
	require.NoError(t, err)
	require.True(t, res.PageChanged)
	require.Equal(t, "dave"+LocalSuffix, res.CacheKey)
	names := cookieNames(t, w.r, "dave"+LocalSuffix)
	assert.Contains(t, names, "sid@"+publicHost, "the cloud session's cookie followed the key to the sidecar")

	// A cookie the sidecar gets for a public host goes back with it.
	e := liveEntry(t, w.r, "dave"+LocalSuffix)
	require.NoError(t, entryBrowser(t, w.r, e).WriteCookies(ctx, []state.Cookie{{Name: "pref", Value: "v1", Domain: publicHost, Path: "/", Expires: -1}}, false))
	res, err = w.r.Navigate(ctx, "dave", w.site.url(publicHost, "/account"), nil)
	require.NoError(t, err)
	require.True(t, res.PageChanged)
	require.Equal(t, route.Cloud, res.Route)
	assert.Contains(t, cookieNames(t, w.r, "dave"), "pref@"+publicHost, "the sidecar's cookie followed the key back to the cloud")
}

// TestStateLocalCookiesStayOffCloud: a state's cookies and storage for
// hosts the router keeps local (loopback, a private address, a .internal
// name, a name whose lookup failed) never reach the cloud browser; the
// sidecar session of the same key gets them, and SaveState keeps them.
func TestStateLocalCookiesStayOffCloud(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	debug := &testlog.Buffer{}
	w := newWorld(t, cloudtest.Browserbase, WithLogger(slog.New(slog.NewTextHandler(debug, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	ctx := testCtx(t)
	st := &state.State{
		Cookies: []state.Cookie{
			{Name: "pub", Value: "p", Domain: "." + publicHost, Path: "/", Expires: -1},
			{Name: "loop", Value: "secret-loop", Domain: "localhost", Path: "/", Expires: -1},
			{Name: "lan", Value: "secret-lan", Domain: "10.1.2.3", Path: "/", Expires: -1},
			{Name: "corp", Value: "secret-corp", Domain: ".public.internal", Path: "/", Expires: -1},
			{Name: "unknown", Value: "secret-unknown", Domain: "no-answer.example", Path: "/", Expires: -1},
		},
		Origins: []state.Origin{
			{Origin: w.site.url(publicHost, ""), LocalStorage: []state.Item{{Name: "k", Value: "public"}}},
			{Origin: w.site.URL, LocalStorage: []state.Item{{Name: "k", Value: "secret-origin"}}},
		},
	}
	require.NoError(t, w.r.LoadState(ctx, "erin", st))
	res, err := w.r.Navigate(ctx, "erin", w.site.url(publicHost, "/x"), nil)
	require.NoError(t, err)
	require.Equal(t, route.Cloud, res.Route)
	assert.Equal(t, []string{"pub@." + publicHost}, cookieNames(t, w.r, "erin"), "only the public host's cookie is in the cloud browser")
	assert.False(t, w.site.reached("/"), "loading the storage sent no request to the site")

	res, err = w.r.Navigate(ctx, "erin", w.site.URL+"/here", nil)
	require.NoError(t, err)
	require.Equal(t, route.Local, res.Route)
	assert.ElementsMatch(t, []string{"pub@." + publicHost, "loop@localhost", "lan@10.1.2.3", "corp@.public.internal", "unknown@no-answer.example"},
		cookieNames(t, w.r, "erin"+LocalSuffix), "the sidecar holds them all")

	saved, err := w.r.SaveState(ctx, "erin")
	require.NoError(t, err)
	assert.Len(t, saved.Cookies, 5, "nothing lost")
	got := map[string]string{}
	for _, o := range saved.Origins {
		for _, it := range o.LocalStorage {
			got[o.Origin] = it.Value
		}
	}
	assert.Equal(t, map[string]string{w.site.url(publicHost, ""): "public", w.site.URL: "secret-origin"}, got)
	require.NotEmpty(t, debug.String(), "the router logged at debug level")
	assert.NotContains(t, debug.String(), "secret-", "no value of the state is logged")
}

// entryBrowser is e's browser, as a state is read and written in it.
func entryBrowser(t *testing.T, r *Router, e *entry) statesync.Browser {
	t.Helper()
	b, err := r.stateBrowser(testCtx(t), e)
	require.NoError(t, err)
	return b
}

// cookieNames lists name@domain of the cookies in the browser context of
// the session cacheKey, read from the browser itself.
func cookieNames(t *testing.T, r *Router, cacheKey string) []string {
	t.Helper()
	e := liveEntry(t, r, cacheKey)
	cs, err := entryBrowser(t, r, e).ReadCookies(testCtx(t))
	require.NoError(t, err)
	var out []string
	for _, c := range cs {
		out = append(out, c.Name+"@"+c.Domain)
	}
	return out
}

func liveEntry(t *testing.T, r *Router, cacheKey string) *entry {
	t.Helper()
	e := cachedEntry(r, cacheKey)
	require.NotNil(t, e, "session %q", cacheKey)
	return e
}

func TestParseStateRefusesBadInput(t *testing.T) {
	t.Parallel()
	for name, in := range map[string]string{
		"not JSON":         `{"cookies": [`,
		"empty":            ``,
		"wrong type":       `{"cookies": {"name": "secret-value"}}`,
		"trailing":         `{"cookies": []} {}`,
		"no domain":        `{"cookies": [{"name": "a", "value": "secret-value", "path": "/"}]}`,
		"bad path":         `{"cookies": [{"name": "a", "value": "secret-value", "domain": "x.test", "path": "x"}]}`,
		"bad sameSite":     `{"cookies": [{"name": "a", "value": "secret-value", "domain": "x.test", "path": "/", "sameSite": "Sometimes"}]}`,
		"origin path":      `{"origins": [{"origin": "https://x.test/secret-value", "localStorage": []}]}`,
		"origin scheme":    `{"origins": [{"origin": "file:///etc", "localStorage": []}]}`,
		"origin twice":     `{"origins": [{"origin": "https://x.test", "localStorage": []}, {"origin": "https://X.test:443", "localStorage": []}]}`,
		"__Host- domain":   `{"cookies": [{"name": "__Host-a", "value": "secret-value", "domain": ".x.test", "path": "/", "secure": true}]}`,
		"__Secure- plain":  `{"cookies": [{"name": "__Secure-a", "value": "secret-value", "domain": "x.test", "path": "/"}]}`,
		"control in value": "{\"cookies\": [{\"name\": \"a\", \"value\": \"secret-value\\n\", \"domain\": \"x.test\", \"path\": \"/\"}]}",
		"storage as text":  `{"origins": [{"origin": "https://x.test", "localStorage": "secret-value"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := state.Parse([]byte(in))
			require.ErrorIs(t, err, state.ErrInvalid)
			assert.NotContains(t, err.Error(), "secret-value", "the error names no value")
		})
	}
	r, err := New(nil, WithInitialState(&state.State{Cookies: []state.Cookie{{Name: "a", Value: "b"}}}))
	require.ErrorIs(t, err, state.ErrInvalid, "New checks WithInitialState")
	assert.Nil(t, r)
}

// TestStateLoadsIntoALiveSession: a state loaded into a session that has
// a page logs it in without moving its page, on both routes, and the
// storage it sets is there at the next visit.
func TestStateLoadsIntoALiveSession(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	login := newLoginSite()
	w := newWorldServing(t, cloudtest.Browserbase, login.routes)
	local := newRouter(t, nil, w.logs)
	account := w.site.url(publicHost, "/account")
	logIn(t, w.r, "frank", w.site.url(publicHost, "/login-page"), "frank")
	st, err := w.r.SaveState(testCtx(t), "frank")
	require.NoError(t, err)

	for name, r := range map[string]*Router{"cloud": w.r, "local": local} {
		t.Run(name, func(t *testing.T) {
			key := "live-" + name
			_, title, theme, _ := accountPage(t, r, key, account)
			require.Equal(t, "anonymous", title)
			require.Empty(t, theme)
			require.NoError(t, r.LoadState(testCtx(t), key, st))
			var at string
			_, err := r.Exec(testCtx(t), key, "", func(ctx context.Context, call *Call) error {
				var err error
				at, err = chromedp.Run(ctx, chromedp.Location())
				return err
			})
			require.NoError(t, err)
			assert.Equal(t, account, at, "the session's page stayed where it was")
			_, title, theme, draft := accountPage(t, r, key, account)
			assert.Equal(t, "logged in as frank", title)
			assert.Equal(t, "dark-frank", theme)
			assert.Equal(t, "half-written", draft, "the session storage of the page's origin")
		})
	}
}

// TestRefusedCookiesAreNamed: a cookie the browser will not take (here
// one past state.Parse's checks) fails the load with state.ErrInvalid naming
// it, and the others are set.
func TestRefusedCookiesAreNamed(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	s := newSite(t)
	r := newRouter(t, nil, &testlog.Buffer{})
	ctx := testCtx(t)
	_, err := r.Navigate(ctx, "k", s.url(publicHost, "/a"), nil)
	require.NoError(t, err)
	e := liveEntry(t, r, "k"+LocalSuffix)
	err = entryBrowser(t, r, e).WriteCookies(ctx, []state.Cookie{
		{Name: "good", Value: "v", Domain: publicHost, Path: "/", Expires: -1},
		{Name: "__Host-bad", Value: "secret-v", Domain: publicHost, Path: "/", Expires: -1},
	}, false)
	require.ErrorIs(t, err, state.ErrInvalid)
	assert.Contains(t, err.Error(), `__Host-bad@`+publicHost)
	assert.NotContains(t, err.Error(), "secret-v")
	assert.Equal(t, []string{"good@" + publicHost}, cookieNames(t, r, "k"+LocalSuffix))
}
