package hybroute

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
)

// Connecting to a remote browser: a cloud provider's session, or the CDP
// override. A provider that fails is fallback.go's.

// cloudEntry makes a cloud session for key, or the local floor when the
// provider cannot give one (fallback.go). It never caches a failed cloud
// session: either it returns a working entry (cloud or fallback) or nothing
// at all.
func (r *Router) cloudEntry(ctx context.Context, key string, budget time.Duration) (*entry, error) {
	if skip, cause := r.back.skip(r.now()); skip {
		// The provider asked us to stay away: no API call, no log line.
		return r.fallbackEntry(ctx, key, cause, fallbackBackoffWindow)
	}
	slot, ok := r.fleet.acquireSlot(ctx)
	if !ok {
		return r.fallbackEntry(ctx, key, errConcurrencyLimit, fallbackConcurrency)
	}
	e, err := r.cloudSession(ctx, key, budget)
	if err != nil || e.fallback {
		r.fleet.release(context.WithoutCancel(ctx), slot)
		return e, err
	}
	if slot != nil {
		release := e.release
		e.release = func(ctx context.Context) error {
			defer r.fleet.release(ctx, slot)
			return release(ctx)
		}
	}
	return e, nil
}

// cloudSession asks the provider for a session and connects to it, or
// falls back to local Chromium.
func (r *Router) cloudSession(ctx context.Context, key string, budget time.Duration) (*entry, error) {
	started := r.now()
	pctx, cancel := context.WithTimeout(ctx, budget)
	s, err := r.providerCreate(pctx, key)
	cancel()
	if err != nil {
		return r.providerFailed(ctx, key, err, "")
	}
	if s == nil {
		return r.providerFailed(ctx, key, fmt.Errorf("provider %s returned no session", r.provider.Name()), "")
	}
	if s.FallbackFromCloud {
		return r.providerFellBack(ctx, key, s)
	}
	if s.CDPURL == "" {
		// Nothing pretends to work: the exact message of the original
		// failure, and the session is given back, not cached.
		_ = r.providerRelease(ctx, s)
		return nil, &noCDPError{provider: r.provider.Name()}
	}
	t, err := connectRemote(ctx, s.CDPURL)
	if err != nil {
		_ = r.providerRelease(ctx, s)
		return r.providerFailed(ctx, key, fmt.Errorf("connecting to session %s of %s at %s: %w",
			s.ID, r.provider.Name(), redactURL(s.CDPURL), err), fallbackConnectFailed)
	}
	if r.back.succeeded(started) {
		r.log.LogAttrs(ctx, slog.LevelInfo, "hybroute: cloud provider recovered",
			slog.String("provider", r.provider.Name()))
	}
	return &entry{key: key, route: RouteCloud, tab: t, release: func(ctx context.Context) error {
		_ = t.close(ctx)
		return r.providerRelease(ctx, s)
	}}, nil
}

// overrideEntry is a session on the CDP override's browser: a new tab on it.
func (r *Router) overrideEntry(ctx context.Context, key string) (*entry, error) {
	t, err := connectRemote(ctx, r.cfg.cdpURL)
	if err != nil {
		return nil, fmt.Errorf("hybroute: connecting to the CDP override %s: %w", redactURL(r.cfg.cdpURL), err)
	}
	return &entry{key: key, route: RouteCloud, tab: t, release: t.close}, nil
}

// checkCDPURL checks the CDP override's URL when the Router is made, so that
// a typo fails New rather than every call.
func checkCDPURL(s string) error {
	i := strings.Index(s, "://")
	if i <= 0 {
		return fmt.Errorf("%w: CDP URL %q", ErrInvalidURL, redactURL(s))
	}
	switch strings.ToLower(s[:i]) {
	case "ws", "wss", "http", "https":
		return nil
	}
	return fmt.Errorf("%w: CDP URL %q: want a ws, wss, http or https URL", ErrInvalidURL, redactURL(s))
}

// remoteTab is a tab on a browser reached over CDP: a cloud session or the
// CDP override.
type remoteTab struct {
	ctx         context.Context
	cancelTab   context.CancelFunc
	cancelAlloc context.CancelFunc
	once        sync.Once
}

// connectRemote opens a new tab on the browser at the CDP URL. chromedp ties
// the browser connection to the context of its first action, so that action
// runs on the tab's own context and the caller's ctx only bounds the wait.
func connectRemote(ctx context.Context, cdpURL string) (*remoteTab, error) {
	actx, cancelAlloc := remote.NewAllocator(context.Background(), cdpURL)
	tctx, cancelTab := chromedp.NewContext(actx)
	t := &remoteTab{ctx: tctx, cancelTab: cancelTab, cancelAlloc: cancelAlloc}
	done := make(chan error, 1)
	go func() { done <- chromedp.Do(tctx) }()
	select {
	case err := <-done:
		if err != nil {
			_ = t.close(ctx)
			return nil, redactURLErr(err, cdpURL)
		}
		return t, nil
	case <-ctx.Done():
		_ = t.close(ctx)
		<-done
		return nil, ctx.Err()
	}
}

func (t *remoteTab) bind(ctx context.Context) (context.Context, context.CancelFunc) {
	return bindTab(t.ctx, ctx)
}

func (t *remoteTab) context() context.Context { return t.ctx }

func (t *remoteTab) dead() bool { return t.ctx.Err() != nil }

func (t *remoteTab) wrapErr(err error) error {
	if err != nil && t.dead() {
		return fmt.Errorf("%w: %w", ErrBrowserDead, err)
	}
	return err
}

// close closes the tab and the connection; the remote browser lives on.
func (t *remoteTab) close(context.Context) error {
	t.once.Do(func() {
		t.cancelTab()
		t.cancelAlloc()
	})
	return nil
}
