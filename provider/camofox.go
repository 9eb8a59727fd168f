package provider

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// Camofox is the client of a camofox-browser server: a REST browser server
// around the Camoufox engine (a Firefox), with no CDP endpoint. Its
// sessions carry a [RESTDriver]. What the client sends
// follows the server's documented API (its openapi.json and AGENTS.md,
// version 1.8):
//
//   - POST /tabs {"userId","sessionKey"[,"url"]} → {"tabId","url"}; 429 when
//     the tab limit is reached. A userId is one isolated browser session
//     (cookies, storage); sessionKey groups its tabs.
//   - POST /tabs/{tabId}/navigate {"userId","url"} → {"ok","tabId","url",
//     "refsAvailable"}; http and https URLs only.
//   - GET /tabs/{tabId}/snapshot?userId= → {"url","snapshot","refsCount",
//     "truncated","totalChars","hasMore","nextOffset"}: the accessibility
//     tree as YAML lines, interactive ones with their ref
//     (- button "Save" [e4]).
//   - POST /tabs/{tabId}/click {"userId","ref"} → {"ok","url",
//     "refsAvailable"}.
//   - POST /tabs/{tabId}/type {"userId","ref","text","pressEnter"} → {"ok"}.
//   - POST /tabs/{tabId}/press {"userId","key"} → {"ok"}.
//   - POST /tabs/{tabId}/scroll {"userId","direction","amount"} → {"ok"}.
//   - POST /tabs/{tabId}/back {"userId"} → {"ok","url"}.
//   - GET /tabs/{tabId}/screenshot?userId=[&fullPage=true] → image/png.
//   - GET /tabs/{tabId}/stats?userId= → {"tabId","url",…}: where the tab is,
//     asked after the actions whose answer does not say it.
//   - DELETE /tabs/{tabId}?userId= → {"ok"}; DELETE /sessions/{userId} ends
//     the user's browser session.
//   - Errors: {"error": "..."}; 404 for a tab it does not know.
//   - Auth: when the server sets CAMOFOX_ACCESS_KEY, every route but
//     /health wants "Authorization: Bearer <key>".
//   - On Fly.io, the server's proxy may answer 307 (fly-replay) to send a
//     request to the machine that holds the session: the client follows a
//     307 or 308 to the same origin (scheme and host) with the same method,
//     body and key, and no redirect elsewhere, which would carry the key
//     off the server.
//
// Camofox records traces (GET /sessions/{userId}/traces, with "trace":
// true), not a replay URL: it is no [Replayer].
type Camofox struct {
	apiClient
	prefix string // this client's userIds start with it
}

// DefaultCamofoxBaseURL is where camofox-browser listens by default.
const DefaultCamofoxBaseURL = "http://localhost:9377"

// NewCamofox returns a [Camofox] client. accessKey is the server's
// CAMOFOX_ACCESS_KEY, "" when it has none. Each session is a userId of its
// own on the server (a browser session with its own cookies and storage),
// named after the session key and this client.
func NewCamofox(accessKey string, opts ...Option) *Camofox {
	header, key := "", ""
	if accessKey != "" {
		header, key = "Authorization", "Bearer "+accessKey
	}
	var nonce [4]byte
	_, _ = rand.Read(nonce[:])
	c := &Camofox{
		apiClient: newAPIClient(DefaultCamofoxBaseURL, "Camofox", header, key, opts),
		prefix:    "hybroute-" + hex.EncodeToString(nonce[:]) + "-",
	}
	if c.own {
		// Ours to set: a client given with WithHTTPClient keeps its own
		// policy.
		c.client.CheckRedirect = sameOriginReplay
	}
	return c
}

// maxReplays bounds the 307s and 308s one request follows.
const maxReplays = 5

// sameOriginReplay is the redirect policy of a Camofox client: a 307 or
// 308 to the request's own origin is followed (net/http keeps the method,
// sends the body again and keeps the headers, the key among them, on the
// same host); any other redirect is answered as it came, and fails the
// call.
func sameOriginReplay(req *http.Request, via []*http.Request) error {
	if len(via) == 0 || len(via) > maxReplays || req.Response == nil {
		return http.ErrUseLastResponse
	}
	switch req.Response.StatusCode {
	case http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
	default:
		return http.ErrUseLastResponse
	}
	first := via[0].URL
	if req.URL.Scheme != first.Scheme || !strings.EqualFold(req.URL.Host, first.Host) || req.URL.User != nil {
		return http.ErrUseLastResponse
	}
	return nil
}

// CreateSession implements [Provider]: POST /tabs, without a URL (the first
// navigation is a call of its own, planned like any).
func (c *Camofox) CreateSession(ctx context.Context, key string) (*Session, error) {
	user := c.prefix + key
	var out struct {
		TabID string `json:"tabId"`
	}
	if err := c.call(ctx, "create", http.MethodPost, "/tabs", c.createBody(map[string]any{"userId": user, "sessionKey": key}), &out); err != nil {
		return nil, err
	}
	if out.TabID == "" {
		return nil, c.fail("create", http.StatusOK, errors.New("the answer has no tabId"))
	}
	d := &camofoxTab{c: c, user: user, sessionKey: key, tab: out.TabID}
	return &Session{Key: key, ID: out.TabID, REST: d, HTTPClient: c.client}, nil
}

// ReleaseSession implements [Provider]: DELETE /tabs/{tabId}, then DELETE
// /sessions/{userId}, which ends the user's browser session with its
// cookies. A tab already gone (404) counts as closed.
func (c *Camofox) ReleaseSession(ctx context.Context, s *Session) error {
	if s == nil || s.ID == "" {
		return nil
	}
	d, _ := s.REST.(*camofoxTab)
	if d == nil {
		return nil
	}
	var err error
	if e := c.call(ctx, "release", http.MethodDelete, "/tabs/"+url.PathEscape(d.TabID())+"?userId="+url.QueryEscape(d.user), nil, nil); !notFound(e) {
		err = e
	}
	if e := c.call(ctx, "release", http.MethodDelete, "/sessions/"+url.PathEscape(d.user), nil, nil); !notFound(e) {
		err = errors.Join(err, e)
	}
	return err
}

func notFound(err error) bool {
	var pe *Error
	return err == nil || errors.As(err, &pe) && pe.Status == http.StatusNotFound
}

// camofoxTab is the [RESTDriver] of one Camofox session: its userId, and
// the tab it drives (Reset replaces it).
type camofoxTab struct {
	c          *Camofox
	user       string
	sessionKey string

	mu  sync.Mutex
	tab string
}

// TabID implements [RESTDriver].
func (d *camofoxTab) TabID() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.tab
}

func (d *camofoxTab) path(op string) string {
	return "/tabs/" + url.PathEscape(d.TabID()) + "/" + op
}

// post sends one action with the userId, and returns the URL its answer
// names, or asks for it when the answer has none.
func (d *camofoxTab) post(ctx context.Context, op string, body map[string]any) (string, error) {
	body["userId"] = d.user
	var out struct {
		URL string `json:"url"`
	}
	if err := d.c.call(ctx, op, http.MethodPost, d.path(op), body, &out); err != nil {
		return "", err
	}
	if out.URL != "" {
		return out.URL, nil
	}
	return d.URL(ctx)
}

// Navigate implements [RESTDriver].
func (d *camofoxTab) Navigate(ctx context.Context, rawURL string) (string, error) {
	return d.post(ctx, "navigate", map[string]any{"url": rawURL})
}

// Click implements [RESTDriver].
func (d *camofoxTab) Click(ctx context.Context, ref string) (string, error) {
	return d.post(ctx, "click", map[string]any{"ref": ref})
}

// Type implements [RESTDriver].
func (d *camofoxTab) Type(ctx context.Context, ref, text string, submit bool) (string, error) {
	return d.post(ctx, "type", map[string]any{"ref": ref, "text": text, "pressEnter": submit})
}

// Press implements [RESTDriver].
func (d *camofoxTab) Press(ctx context.Context, key string) (string, error) {
	return d.post(ctx, "press", map[string]any{"key": key})
}

// camofoxScroll is how far one scroll goes, in pixels: most of a screen,
// as the toolset's scroll on a CDP tab.
const camofoxScroll = 600

// Scroll implements [RESTDriver].
func (d *camofoxTab) Scroll(ctx context.Context, direction string) (string, error) {
	return d.post(ctx, "scroll", map[string]any{"direction": direction, "amount": camofoxScroll})
}

// Back implements [RESTDriver].
func (d *camofoxTab) Back(ctx context.Context) (string, error) {
	return d.post(ctx, "back", map[string]any{})
}

// Snapshot implements [RESTDriver]: the first window of the snapshot (the
// server cuts a long one; the toolset cuts shorter still).
func (d *camofoxTab) Snapshot(ctx context.Context) (string, string, error) {
	var out struct {
		URL       string `json:"url"`
		Snapshot  string `json:"snapshot"`
		Truncated bool   `json:"truncated"`
	}
	if err := d.c.call(ctx, "snapshot", http.MethodGet, d.path("snapshot")+"?userId="+url.QueryEscape(d.user), nil, &out); err != nil {
		return "", "", err
	}
	if out.Truncated {
		out.Snapshot += "\n[the server cut the snapshot here]"
	}
	return out.Snapshot, out.URL, nil
}

// URL implements [RESTDriver]: GET /tabs/{tabId}/stats.
func (d *camofoxTab) URL(ctx context.Context) (string, error) {
	var out struct {
		URL string `json:"url"`
	}
	if err := d.c.call(ctx, "stats", http.MethodGet, d.path("stats")+"?userId="+url.QueryEscape(d.user), nil, &out); err != nil {
		return "", err
	}
	return out.URL, nil
}

// maxScreenshotBytes bounds a screenshot's answer.
const maxScreenshotBytes = 32 << 20

// Screenshot implements [RESTDriver]: a PNG, not JSON.
func (d *camofoxTab) Screenshot(ctx context.Context, fullPage bool) ([]byte, error) {
	u := d.c.baseURL + d.path("screenshot") + "?userId=" + url.QueryEscape(d.user)
	if fullPage {
		u += "&fullPage=true"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, d.c.fail("screenshot", 0, err)
	}
	req.Header.Set("Accept", "image/png")
	req.Header.Set("User-Agent", "hybroute")
	if err := checkEndpoint(req.URL, d.c.keyHeader != "" && d.c.key != "", d.c.privateEndpoint); err != nil {
		return nil, d.c.fail("screenshot", 0, err)
	}
	if d.c.keyHeader != "" {
		req.Header.Set(d.c.keyHeader, d.c.keyScheme+d.c.key)
	}
	resp, err := d.c.sender.Do(req)
	if err != nil {
		return nil, d.c.fail("screenshot", 0, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxScreenshotBytes+1))
	if err != nil {
		return nil, d.c.fail("screenshot", resp.StatusCode, fmt.Errorf("reading the answer: %w", err))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, d.c.answerError("screenshot", resp, data, nil)
	}
	if len(data) > maxScreenshotBytes {
		return nil, d.c.fail("screenshot", resp.StatusCode, fmt.Errorf("answer larger than %d bytes", maxScreenshotBytes))
	}
	if !strings.HasPrefix(string(data), "\x89PNG") {
		return nil, d.c.fail("screenshot", resp.StatusCode, errors.New("the answer is not a PNG"))
	}
	return data, nil
}

// Reset implements [RESTDriver]: the tab is closed and a new one opened
// for the same userId, so the session keeps its cookies and loses the
// page. (The server opens http and https URLs only: about:blank is a new
// tab.)
func (d *camofoxTab) Reset(ctx context.Context) error {
	old := d.TabID()
	var out struct {
		TabID string `json:"tabId"`
	}
	if err := d.c.call(ctx, "create", http.MethodPost, "/tabs", d.c.createBody(map[string]any{"userId": d.user, "sessionKey": d.sessionKey}), &out); err != nil {
		return err
	}
	if out.TabID == "" {
		return d.c.fail("create", http.StatusOK, errors.New("the answer has no tabId"))
	}
	d.mu.Lock()
	d.tab = out.TabID
	d.mu.Unlock()
	if err := d.c.call(ctx, "release", http.MethodDelete, "/tabs/"+url.PathEscape(old)+"?userId="+url.QueryEscape(d.user), nil, nil); !notFound(err) {
		return err
	}
	return nil
}

var (
	_ Provider   = (*Camofox)(nil)
	_ RESTDriver = (*camofoxTab)(nil)
)
