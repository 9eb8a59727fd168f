package hybroute

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/testenv"
	"github.com/hybroute/hybroute/route"
)

// inputPage counts the clicks on a button in its title and keeps what is
// typed in a field: what a person's clicks and keys do, read back.
const inputPage = `<!doctype html><title>clicks 0</title><body style="margin:0">
<button id=b style="position:absolute;left:0;top:0;width:300px;height:150px">click me</button>
<input id=i style="position:absolute;left:0;top:200px;width:300px;height:40px">
<script>let n = 0; b.onclick = () => { n++; document.title = "clicks " + n; };</script>`

func serveInputPage(mux *http.ServeMux, _ *site) {
	mux.HandleFunc("/input", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, inputPage)
	})
}

// person is the browser of the person who takes over: a Chromium of its
// own, shared by the tests of the binary (it ends with the binary).
var person = sync.OnceValues(func() (context.Context, error) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(testenv.ChromiumPath()), chromedp.WindowSize(1000, 800))
	actx, _ := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, _ := chromedp.NewContext(actx)
	return bctx, chromedp.Do(bctx)
})

// personTab opens a tab of the person's browser on url.
func personTab(t *testing.T, url string) context.Context {
	t.Helper()
	b, err := person()
	require.NoError(t, err)
	tab, cancel := chromedp.NewContext(b)
	t.Cleanup(cancel)
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(url)))
	return tab
}

// serveViews serves w's live views under /live/ on loopback.
func serveViews(t *testing.T, r *Router) *LiveViews {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	views := r.LiveViews(LiveViewOptions{BaseURL: srv.URL + "/live/"})
	mux.Handle("/live/", http.StripPrefix("/live", views))
	t.Cleanup(func() { views.Close(); srv.Close() })
	return views
}

// handoff starts a hand-off of key and returns the view's URL, and a
// channel with the result when it ends.
func handoff(t *testing.T, ctx context.Context, views *LiveViews, key string, timeout time.Duration) (string, <-chan HandoffResult) {
	t.Helper()
	urls, done := make(chan string, 1), make(chan HandoffResult, 1)
	go func() {
		res, err := views.Handoff(ctx, key, HandoffRequest{Task: "Log in", Timeout: timeout, OnURL: func(u string) { urls <- u }})
		assert.NoError(t, err)
		done <- res
	}()
	select {
	case u := <-urls:
		return u, done
	case res := <-done:
		t.Fatalf("the hand-off ended before it gave a URL: %+v", res)
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	return "", nil
}

// poll waits until expr is truthy in the tab, and returns its value.
func poll[T any](t *testing.T, tab context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(tab, chromedp.Poll[T](expr, chromedp.WithPollingInterval(20*time.Millisecond)))
	require.NoError(t, err, "waiting for %s", expr)
	return v
}

// clickAt clicks the view's picture of the page where the page's point
// (x, y) is, in the page's CSS pixels.
func clickAt(t *testing.T, tab context.Context, x, y float64) {
	t.Helper()
	at, err := chromedp.Run(tab, chromedp.Evaluate[[]float64](fmt.Sprintf(`(() => {
		const r = screen.getBoundingClientRect();
		return [r.left + %v * r.width / meta.w, r.top + %v * r.height / meta.h];
	})()`, x, y)))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(tab, chromedp.MouseClickXY(at[0], at[1])))
}

// press presses the view's button id (done, giveup).
func press(t *testing.T, tab context.Context, id string) {
	t.Helper()
	_, err := chromedp.Run(tab, chromedp.Evaluate[bool](`document.getElementById("`+id+`").click(), true`))
	require.NoError(t, err)
}

// goTo types url in the view's address bar and submits it, as Enter does.
func goTo(t *testing.T, tab context.Context, url string) {
	t.Helper()
	_, err := chromedp.Run(tab, chromedp.Evaluate[bool](fmt.Sprintf(`addr.value = %q, document.getElementById("nav").requestSubmit(), true`, url)))
	require.NoError(t, err)
}

// sessionEval evaluates expr in the session's page, as a call of its own.
func sessionEval[T any](t *testing.T, ctx context.Context, r *Router, key, expr string) T {
	t.Helper()
	var v T
	_, err := r.Exec(ctx, key, expr, func(ctx context.Context, _ *Call) (err error) {
		v, err = chromedp.Run(ctx, chromedp.Evaluate[T](expr))
		return err
	})
	require.NoError(t, err)
	return v
}

func TestLiveViewRelaysClicksAndTyping(t *testing.T) {
	w := sharedWorld(t, serveInputPage)
	ctx := testCtx(t)
	res, err := w.r.Navigate(ctx, w.sess, w.site.url("127.0.0.1", "/input"), nil)
	require.NoError(t, err)
	require.Equal(t, route.Local, res.Route)
	views := serveViews(t, w.r)
	viewURL, done := handoff(t, ctx, views, w.sess, time.Minute)

	tab := personTab(t, viewURL)
	poll[bool](t, tab, `screen.dataset.frames >= 1 && meta.w > 0`)
	assert.Equal(t, "Log in", poll[string](t, tab, `document.getElementById("task").textContent`))

	clickAt(t, tab, 150, 75)
	assert.Equal(t, "clicks 1", poll[string](t, tab, `titleEl.textContent === "clicks 1" && titleEl.textContent`),
		"the view shows the page's new title")
	clickAt(t, tab, 150, 220) // the field
	require.NoError(t, chromedp.Do(tab, chromedp.KeyEvent("hi there")))
	// The keys are relayed in order; the last one's call tells the view.
	require.Eventually(t, func() bool {
		return sessionEval[string](t, ctx, w.r, w.sess, `document.getElementById("i").value`) == "hi there"
	}, 30*time.Second, 50*time.Millisecond)
	assert.Equal(t, "clicks 1", sessionEval[string](t, ctx, w.r, w.sess, `document.title`), "the session's page saw the click")

	press(t, tab, "done")
	got := <-done
	assert.True(t, got.Finished)
	assert.Equal(t, "done", got.Outcome)
	assert.Equal(t, "clicks 1", got.Title)
	assert.Equal(t, w.site.url("127.0.0.1", "/input"), got.URL)
	assert.Equal(t, "done", poll[string](t, tab, `document.body.dataset.ended`), "the view says it ended")

	// The ended view's link no longer works.
	resp, err := http.Get(viewURL)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestLiveViewNavigationIsTheRoutersCall(t *testing.T) {
	w := sharedWorld(t, serveInputPage)
	ctx := testCtx(t)
	_, err := w.r.Navigate(ctx, w.sess, w.site.url("127.0.0.1", "/input"), nil)
	require.NoError(t, err)
	views := serveViews(t, w.r)
	viewURL, done := handoff(t, ctx, views, w.sess, time.Minute)
	tab := personTab(t, viewURL)
	poll[bool](t, tab, `screen.dataset.frames >= 1`)

	// A metadata address is refused, as the agent's would be, and the
	// page stays where it was.
	goTo(t, tab, w.site.url(metadataHost, "/computeMetadata/v1/"))
	msg := poll[string](t, tab, `msg.dataset.kind === "error" && msg.textContent`)
	assert.Contains(t, msg, "metadata")
	assert.Empty(t, w.site.hitsFor(metadataHost), "the refused address was never fetched")
	assert.Equal(t, w.site.url("127.0.0.1", "/input"), sessionEval[string](t, ctx, w.r, w.sess, `location.href`))

	// A private address goes, and stays on the local browser.
	goTo(t, tab, w.site.url("localhost", "/after"))
	poll[bool](t, tab, `titleEl.textContent === "/after"`)
	st, err := w.r.Status(ctx, w.sess)
	require.NoError(t, err)
	assert.Equal(t, route.Local, st.Route)
	assert.Equal(t, localUA, w.site.uaOf("/after"))

	press(t, tab, "giveup")
	got := <-done
	assert.False(t, got.Finished)
	assert.Equal(t, "gave_up", got.Outcome)
	assert.Equal(t, "/after", got.Title)
}

// TestLiveViewEndsWhenItsSessionIsReleased: a session released during a
// hand-off stays released: the person's navigation in the view opens no
// new session, the view ends (closed), and the hand-off says the session
// was released.
func TestLiveViewEndsWhenItsSessionIsReleased(t *testing.T) {
	w := sharedWorld(t, serveInputPage)
	ctx := testCtx(t)
	_, err := w.r.Navigate(ctx, w.sess, w.site.url("127.0.0.1", "/input"), nil)
	require.NoError(t, err)
	views := serveViews(t, w.r)
	urls, done := make(chan string, 1), make(chan error, 1)
	var got HandoffResult
	go func() {
		var err error
		got, err = views.Handoff(ctx, w.sess, HandoffRequest{Task: "Log in", Timeout: time.Minute, OnURL: func(u string) { urls <- u }})
		done <- err
	}()
	tab := personTab(t, <-urls)
	poll[bool](t, tab, `screen.dataset.frames >= 1`)

	require.NoError(t, w.r.Release(ctx, w.sess))
	goTo(t, tab, w.site.url("localhost", "/after-release"))
	err = <-done
	require.ErrorIs(t, err, ErrReleased, "the hand-off says its session went")
	assert.Equal(t, "closed", got.Outcome)
	assert.Empty(t, w.site.hitsFor("localhost"), "the view's navigation opened no new session")
	st, err := w.r.Status(ctx, w.sess)
	require.NoError(t, err)
	assert.False(t, st.Open, "the released session stays released")
}

func TestLiveViewRefusesWrongTokensHostsAndOrigins(t *testing.T) {
	w := sharedWorld(t)
	ctx := testCtx(t)
	views := serveViews(t, w.r)
	viewURL, done := handoff(t, ctx, views, w.sess, time.Minute)
	base := viewURL[:strings.LastIndex(viewURL, "/")+1]

	get := func(u string, header map[string]string) int {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		require.NoError(t, err)
		for k, v := range header {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusOK, get(viewURL, nil))
	assert.Equal(t, http.StatusNotFound, get(base+"not-the-token", nil))
	assert.Equal(t, http.StatusNotFound, get(viewURL[:len(viewURL)-1], nil), "a token one character short")
	assert.Equal(t, http.StatusForbidden, get(viewURL, map[string]string{"Host": "evil.example"}))
	assert.Equal(t, http.StatusForbidden, get(viewURL, map[string]string{"Origin": "http://evil.example"}))
	assert.Equal(t, http.StatusForbidden, get(viewURL+"/ws", map[string]string{
		"Origin": "http://evil.example", "Connection": "Upgrade", "Upgrade": "websocket",
		"Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}))
	views.Close() // ends the view, as its time running out does
	got := <-done
	assert.Equal(t, "closed", got.Outcome)
	assert.Equal(t, http.StatusNotFound, get(viewURL, nil))

	// A view whose time ran out is gone.
	viewURL, done = handoff(t, ctx, serveViews(t, w.r), w.sess, time.Millisecond)
	got = <-done
	assert.Equal(t, "expired", got.Outcome)
	assert.False(t, got.Finished)
	assert.Equal(t, http.StatusNotFound, get(viewURL, nil))
}
