package screencast_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/screencast"
	"github.com/hybroute/hybroute/internal/testenv"
)

// animated is a page that changes every animation frame, so the browser
// draws (and casts) as fast as it may.
const animated = `<!doctype html><title>anim</title><body style="margin:0">
<div id=b style="width:100vw;height:100vh"></div><script>
let n = 0; (function tick() { n++; b.style.background = 'hsl(' + (n % 360) + ',80%,50%)'; requestAnimationFrame(tick); })();
</script>`

var (
	browserOnce sync.Once
	browserCtx  context.Context
)

// newTab opens a tab of the test binary's one browser, showing html.
func newTab(t *testing.T, html string) context.Context {
	t.Helper()
	testenv.RequireChromium(t)
	browserOnce.Do(func() {
		opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(testenv.ChromiumPath()), chromedp.WindowSize(800, 600))
		actx, _ := chromedp.NewExecAllocator(context.Background(), opts...)
		browserCtx, _ = chromedp.NewContext(actx)
		if err := chromedp.Do(browserCtx); err != nil {
			panic(err)
		}
	})
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, html)
	}))
	t.Cleanup(site.Close)
	tab, cancel := chromedp.NewContext(browserCtx)
	t.Cleanup(cancel)
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(site.URL)))
	return tab
}

// collect gathers the frames of one Cast.
type collect struct {
	mu     sync.Mutex
	frames []screencast.Frame
	got    chan struct{}
}

func newCollect() *collect { return &collect{got: make(chan struct{}, 1000)} }

func (c *collect) add(f screencast.Frame) {
	c.mu.Lock()
	c.frames = append(c.frames, f)
	c.mu.Unlock()
	c.got <- struct{}{}
}

func (c *collect) wait(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	for range n {
		select {
		case <-c.got:
		case <-ctx.Done():
			t.Fatalf("only %d frames before %v", len(c.snapshot()), ctx.Err())
		}
	}
}

func (c *collect) snapshot() []screencast.Frame {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]screencast.Frame(nil), c.frames...)
}

func TestFramesAreJPEGsAtABoundedRate(t *testing.T) {
	tab := newTab(t, animated)
	ctx := testenv.Context(t, 20*time.Second)
	const interval = 50 * time.Millisecond
	c := newCollect()
	begun := time.Now()
	cast, err := screencast.Start(tab, screencast.Options{Interval: interval, MaxWidth: 400, MaxHeight: 300}, c.add)
	require.NoError(t, err)
	c.wait(t, ctx, 5)
	cast.Stop()
	<-cast.Done()
	span := time.Since(begun)
	frames := c.snapshot()
	for i, f := range frames {
		assert.True(t, bytes.HasPrefix(f.JPEG, []byte{0xff, 0xd8}), "frame %d is no JPEG", i)
		assert.Positive(t, f.Meta.DeviceWidth, "frame %d has no viewport", i)
	}
	// The page animates at the display's rate (60 a second), so without
	// the bound 5 frames would come in about 80 ms. Frames handed on at
	// least an interval apart, all between Start and Done, number at most
	// span/interval + 1: a slow machine only widens the span, so this
	// holds however loaded it is (the gap between two callbacks, as the
	// test sees it, does not: its clock reads late or early).
	assert.LessOrEqual(t, len(frames), int(span/interval)+1, "%d frames in %s: more than one per %s", len(frames), span, interval)
	// After Stop, the callback is never called again.
	n := len(frames)
	_, err = chromedp.Run(tab, chromedp.Evaluate[int](`n = 0`))
	require.NoError(t, err)
	assert.Len(t, c.snapshot(), n)
	select {
	case <-cast.Done():
	default:
		t.Fatal("Done is open after Stop")
	}
}

func TestCastsOfATabShareItsScreencast(t *testing.T) {
	tab := newTab(t, animated)
	ctx := testenv.Context(t, 20*time.Second)
	a, b := newCollect(), newCollect()
	ca, err := screencast.Start(tab, screencast.Options{Interval: 20 * time.Millisecond}, a.add)
	require.NoError(t, err)
	cb, err := screencast.Start(tab, screencast.Options{Interval: 20 * time.Millisecond}, b.add)
	require.NoError(t, err)
	a.wait(t, ctx, 2)
	b.wait(t, ctx, 2)
	// The first Cast's Stop leaves the second one casting: frames that
	// come after it, not ones already waiting to be counted.
	ca.Stop()
	for len(b.got) > 0 {
		<-b.got
	}
	b.wait(t, ctx, 3)
	cb.Stop()
	// And a new Cast starts the tab's screencast again.
	c := newCollect()
	cc, err := screencast.Start(tab, screencast.Options{}, c.add)
	require.NoError(t, err)
	c.wait(t, ctx, 2)
	cc.Stop()
}

func TestACastEndsWithItsContextAndItsTab(t *testing.T) {
	tab := newTab(t, animated)
	ctx := testenv.Context(t, 20*time.Second)
	cctx, cancel := context.WithCancel(tab)
	c := newCollect()
	cast, err := screencast.Start(cctx, screencast.Options{}, c.add)
	require.NoError(t, err)
	c.wait(t, ctx, 1)
	cancel()
	select {
	case <-cast.Done():
	case <-ctx.Done():
		t.Fatal("the Cast outlived its context")
	}

	tab2 := newTab(t, animated)
	c2 := newCollect()
	cast2, err := screencast.Start(tab2, screencast.Options{}, c2.add)
	require.NoError(t, err)
	c2.wait(t, ctx, 1)
	require.NoError(t, chromedp.Cancel(tab2))
	select {
	case <-cast2.Done():
	case <-ctx.Done():
		t.Fatal("the Cast outlived its tab")
	}
	cast2.Stop()
}

func TestStartWithoutATab(t *testing.T) {
	_, err := screencast.Start(context.Background(), screencast.Options{}, func(screencast.Frame) {})
	assert.ErrorIs(t, err, screencast.ErrNoTab)
}
