// Package profiles keeps persistent profiles (hybroute.WithProfileDir): the local browser keeps one warm
// Chromium whose browser contexts are off the record, so a profile is the
// cookie jar of a cache key, kept in a file of its own and put back into
// the key's fresh browser context when its session is made. The jar is
// saved when the session ends (Release, the reaper, an eviction, Close)
// and every profileSaveEvery while it lives. See
// docs/decisions/2026-12-02-profiles-are-cookie-jars-restored-into-contexts.md.
package profiles

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/storage"

	"github.com/hybroute/hybroute/internal/browsertab"
	sc "github.com/hybroute/hybroute/internal/sidecar"
)

const (
	// profileLockName is the lock file of a profile directory.
	profileLockName = ".hybroute-profiles.lock"
	// CookiesFile is the cookie jar of one profile.
	CookiesFile = "cookies.json"
	// profileSaveEvery is how often the jars of live sessions are saved,
	// so a Chromium or a process that dies loses at most that much.
	profileSaveEvery = 15 * time.Second
	// maxProfileBytes bounds a jar read back (Chromium keeps at most
	// about 3,300 cookies of 4 KiB).
	maxProfileBytes = 16 << 20
	// prefixLen bounds the readable part of a profile's name.
	prefixLen = 40
)

// ErrLocked is wrapped by the error of Open when the directory is in use
// by another router, in this process or another.
var ErrLocked = errors.New("hybroute: the profile directory is locked")

// Tab is a local session's browser context: the Chromium process it is in
// and its id there.
type Tab struct {
	Proc    *sc.Proc
	Context cdp.BrowserContextID
}

// Dir is the profiles' directory, made absolute.
func (ps *Store) Dir() string { return ps.dir }

// Store is the profiles of one Router: its directory, held locked
// for the Router's life, and the live local tabs whose jars it saves.
type Store struct {
	dir  string
	lock *os.File // held with an exclusive lock until close
	log  *slog.Logger

	mu   sync.Mutex // guards live, and orders every read and write of a jar
	live map[Tab]string
	last map[string][32]byte // the digest of each jar as last written, to skip rewrites

	stop chan struct{}
	done chan struct{}
}

// Open makes dir (0700) when needed, takes its lock, and starts
// the periodic save.
func Open(dir string, log *slog.Logger) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("hybroute: WithProfileDir(%q): %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("hybroute: WithProfileDir: making %s: %w", abs, err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("hybroute: WithProfileDir: %s is not a directory", abs)
	}
	lock, err := lockProfileDir(filepath.Join(abs, profileLockName))
	if err != nil {
		return nil, fmt.Errorf("hybroute: WithProfileDir: %s: %w", abs, err)
	}
	ps := &Store{dir: abs, lock: lock, log: log, live: map[Tab]string{}, last: map[string][32]byte{},
		stop: make(chan struct{}), done: make(chan struct{})}
	go ps.saveEvery(profileSaveEvery)
	return ps, nil
}

// Name is the directory name of a cache key's profile: the key's
// letters, digits, '-' and '_' (the rest as '_'), cut, then a hash of the
// whole key. It has no separator and no dot, so it names a child of the
// profile directory and nothing else, and two keys never share one.
func Name(key string) string {
	var b strings.Builder
	for _, c := range key {
		if b.Len() >= prefixLen {
			break
		}
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_':
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
	}
	sum := sha256.Sum256([]byte(key))
	return b.String() + "-" + hex.EncodeToString(sum[:12])
}

// KeyDir makes (0700) and returns the directory of a key's profile,
// refusing one that is not a plain directory (a symlink is not followed).
func (ps *Store) KeyDir(key string) (string, error) {
	d := filepath.Join(ps.dir, Name(key))
	if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	fi, err := os.Lstat(d)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", d)
	}
	return d, nil
}

// Jar is a jar on disk, in the shape of Playwright's
// storageState file (the origins stay empty here), so the file opens in
// the tools that read that shape.
type Jar struct {
	Cookies []Cookie   `json:"cookies"`
	Origins []struct{} `json:"origins"`
}

// Cookie is one cookie as Playwright writes it. A domain without a
// leading dot is a host-only cookie.
type Cookie struct {
	Name     string  `json:"name"`
	Value    string  `json:"value"`
	Domain   string  `json:"domain"`
	Path     string  `json:"path"`
	Expires  float64 `json:"expires"` // seconds since the epoch; -1 for a session cookie
	HTTPOnly bool    `json:"httpOnly"`
	Secure   bool    `json:"secure"`
	SameSite string  `json:"sameSite"` // Strict, Lax or None
}

// keptCookies are the cookies of a jar worth keeping: persistent,
// unexpired, not partitioned (put back unpartitioned, a partitioned
// cookie would reach sites it was kept from).
func keptCookies(cs []*network.Cookie, now time.Time) []Cookie {
	out := make([]Cookie, 0, len(cs))
	for _, c := range cs {
		if c == nil || c.Session || c.PartitionKey != nil || c.PartitionKeyOpaque || c.Expires <= float64(now.Unix()) {
			continue
		}
		ss := string(c.SameSite)
		if ss == "" {
			ss = string(network.CookieSameSiteLax) // Chromium's default for an unspecified one
		}
		out = append(out, Cookie{Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path,
			Expires: c.Expires, HTTPOnly: c.HTTPOnly, Secure: c.Secure, SameSite: ss})
	}
	return out
}

// cookieParams turns a jar back into the cookies Storage.setCookies takes,
// leaving out the expired ones. A host-only cookie is set by URL, so it
// stays host-only; a domain cookie (leading dot) by its domain.
func cookieParams(cs []Cookie, now time.Time) []*network.CookieParam {
	out := make([]*network.CookieParam, 0, len(cs))
	for _, c := range cs {
		if c.Name == "" && c.Value == "" || c.Expires <= float64(now.Unix()) || c.Domain == "" {
			continue
		}
		p := &network.CookieParam{Name: c.Name, Value: c.Value, Path: c.Path, Secure: c.Secure, HTTPOnly: c.HTTPOnly,
			Expires: cdp.TimeSinceEpoch(c.Expires)}
		switch network.CookieSameSite(c.SameSite) {
		case network.CookieSameSiteStrict, network.CookieSameSiteLax, network.CookieSameSiteNone:
			p.SameSite = network.CookieSameSite(c.SameSite)
		}
		if strings.HasPrefix(c.Domain, ".") {
			p.Domain = c.Domain
		} else {
			scheme := "http"
			if c.Secure {
				scheme = "https"
			}
			p.URL = scheme + "://" + c.Domain + cookiePath(c.Path)
		}
		out = append(out, p)
	}
	return out
}

func cookiePath(p string) string {
	if strings.HasPrefix(p, "/") {
		return p
	}
	return "/"
}

// Restore puts the key's jar into the tab's fresh browser context and
// starts keeping it. A jar that cannot be read fails the session: going on
// without it would save an empty jar over the user's logins.
func (ps *Store) Restore(ctx context.Context, t Tab, key string) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	// A session of the same key may still be ending (the reaper took it
	// from the cache and has not disposed of it yet): its jar is saved now
	// and it stops being kept, so the new session starts from its last
	// cookies and its late release cannot save over the new one's.
	for old, k := range ps.live {
		if k == key {
			delete(ps.live, old)
			if err := ps.save(old, key); err != nil {
				ps.log.Warn("hybroute: saving the profile of a session that is ending", "err", err)
			}
		}
	}
	d, err := ps.KeyDir(key)
	if err != nil {
		return fmt.Errorf("hybroute: the profile of session %q: %w", key, err)
	}
	b, err := readJar(filepath.Join(d, CookiesFile))
	if err != nil {
		return fmt.Errorf("hybroute: reading the profile of session %q: %w", key, err)
	}
	if b != nil {
		var st Jar
		if err := json.Unmarshal(b, &st); err != nil {
			return fmt.Errorf("hybroute: reading the profile of session %q: %s: %w", key, filepath.Join(d, CookiesFile), err)
		}
		if params := cookieParams(st.Cookies, time.Now()); len(params) > 0 {
			cctx, cancel := context.WithTimeout(ctx, browsertab.ControlTimeout)
			_, err := cdp.Call(cctx, t.Proc.Browser(), storage.SetCookies,
				storage.SetCookiesParams{Cookies: params, BrowserContextID: t.Context})
			cancel()
			if err != nil {
				return t.Proc.Wrap(fmt.Errorf("hybroute: restoring the profile of session %q: %w", key, err))
			}
		}
		ps.last[key] = sha256.Sum256(b)
	}
	ps.live[t] = key
	return nil
}

// readJar reads a jar: nil when there is none yet; a symlink, a
// non-regular file or an oversized one is an error.
func readJar(name string) ([]byte, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|sc.NoFollow, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxProfileBytes {
		return nil, fmt.Errorf("%s is not a cookie jar (a regular file of at most %d bytes)", name, maxProfileBytes)
	}
	return io.ReadAll(io.LimitReader(f, maxProfileBytes+1))
}

// save writes the jar of a live tab, when it changed. A tab whose browser
// is gone has nothing to give: its jar keeps the last save. Called with
// ps.mu held.
func (ps *Store) save(t Tab, key string) error {
	if t.Proc.Ended() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), browsertab.ControlTimeout)
	defer cancel()
	res, err := cdp.Call(ctx, t.Proc.Browser(), storage.GetCookies, storage.GetCookiesParams{BrowserContextID: t.Context})
	if err != nil {
		if t.Proc.Ended() {
			return nil
		}
		return fmt.Errorf("hybroute: saving the profile of session %q: %w", key, err)
	}
	b, err := json.MarshalIndent(Jar{Cookies: keptCookies(res.Cookies, time.Now()), Origins: []struct{}{}}, "", "  ")
	if err != nil {
		return fmt.Errorf("hybroute: saving the profile of session %q: %w", key, err)
	}
	sum := sha256.Sum256(b)
	if old, ok := ps.last[key]; ok && old == sum {
		return nil
	}
	d, err := ps.KeyDir(key)
	if err == nil {
		err = writeJar(d, b)
	}
	if err != nil {
		return fmt.Errorf("hybroute: saving the profile of session %q: %w", key, err)
	}
	ps.last[key] = sum
	return nil
}

// writeJar replaces the jar of the profile directory d in one rename, so a
// crash leaves the old jar or the new one, never half of one.
func writeJar(d string, b []byte) error {
	f, err := os.CreateTemp(d, CookiesFile+".*") // 0600
	if err != nil {
		return err
	}
	_, err = io.Copy(f, bytes.NewReader(b))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(d, CookiesFile))
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

// Release saves the jar of a tab whose session ends and stops keeping it.
// It runs before the tab's browser context is disposed of.
func (ps *Store) Release(t Tab) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	key, ok := ps.live[t]
	if !ok {
		return nil
	}
	delete(ps.live, t)
	return ps.save(t, key)
}

// Move moves the profile of key from the browser context from of proc to
// the context to, which replaces it: saved from the one, restored into
// the other. A nil Store keeps no profile, and moves nothing.
func (ps *Store) Move(ctx context.Context, proc *sc.Proc, from, to cdp.BrowserContextID, key string) error {
	if ps == nil {
		return nil
	}
	if err := ps.Release(Tab{Proc: proc, Context: from}); err != nil {
		return err
	}
	return ps.Restore(ctx, Tab{Proc: proc, Context: to}, key)
}

// SaveAll saves the jar of every live tab: Close calls it before the local
// Chromium stops, which takes every browser context with it.
func (ps *Store) SaveAll() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for t, key := range ps.live {
		if err := ps.save(t, key); err != nil {
			// The error names the key and the step, never a cookie.
			ps.log.Warn("hybroute: saving a session's profile", "err", err)
		}
	}
}

// saveEvery saves the live jars every d until close.
func (ps *Store) saveEvery(d time.Duration) {
	defer close(ps.done)
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ps.stop:
			return
		case <-t.C:
			ps.SaveAll()
		}
	}
}

// Close stops the periodic save and lets go of the directory's lock.
func (ps *Store) Close() error {
	close(ps.stop)
	<-ps.done
	return ps.lock.Close() // closing the file drops its lock
}
