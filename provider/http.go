package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hybroute/hybroute/internal/cdpconn"
	"github.com/hybroute/hybroute/internal/redact"
)

// The HTTP plumbing the provider clients share: one JSON call, the reading
// of an error answer (and its Retry-After), the resolution of an http(s)
// CDP URL, and the redaction of the key from every error.

// maxAnswerBytes bounds how much of any answer body a client reads.
const maxAnswerBytes = 1 << 20

// apiClient is what every provider client embeds: its options (name, base
// URL, HTTP client, session params), its API key and where it goes (a
// header, with a scheme such as "Bearer ", or a query parameter), and the
// plumbing.
type apiClient struct {
	config
	keyHeader string
	keyScheme string // put before the key in keyHeader: "Bearer "
	keyQuery  string // the query parameter that carries the key (browserless: token)
	key       string
}

func newAPIClient(defaultBase, defaultName, keyHeader, key string, opts []Option) apiClient {
	return apiClient{config: newConfig(defaultBase, defaultName, opts), keyHeader: keyHeader, key: key}
}

// Name implements [Provider].
func (c *apiClient) Name() string { return c.name }

// SessionParamKeys implements [SessionParamLister].
func (c *apiClient) SessionParamKeys() []string { return slices.Sorted(maps.Keys(c.params)) }

// CloseIdleConnections closes the idle connections of the default HTTP
// client, so nothing of the client outlives the Router that used it
// ([github.com/hybroute/hybroute.Router.Close] calls it). A client given
// with [WithHTTPClient] is the caller's, and is left alone.
func (c *apiClient) CloseIdleConnections() {
	if c.own {
		c.client.CloseIdleConnections()
	}
}

// createBody merges the configured session params with the fields the client
// must set.
func (c *apiClient) createBody(fields map[string]any) map[string]any {
	body := make(map[string]any, len(c.params)+len(fields))
	maps.Copy(body, c.params)
	maps.Copy(body, fields)
	return body
}

// call sends one JSON request to path under the base URL and decodes a 2xx
// answer into out (when out is not nil). It returns an *Error for
// every failure.
func (c *apiClient) call(ctx context.Context, op, method, path string, in, out any) error {
	_, err := c.request(ctx, op, method, c.baseURL+path, in, out, nil)
	return err
}

// request sends one JSON request to the absolute URL u with the key and
// the extra headers, decodes a 2xx answer into out, and returns the
// answer's headers (nil when no answer came).
func (c *apiClient) request(ctx context.Context, op, method, u string, in, out any, extra http.Header) (http.Header, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, c.fail(op, 0, fmt.Errorf("encoding the request: %w", err))
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, c.fail(op, 0, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "hybroute")
	for k, vs := range extra {
		req.Header[k] = vs
	}
	if c.keyHeader != "" {
		req.Header.Set(c.keyHeader, c.keyScheme+c.key)
	}
	if c.keyQuery != "" {
		q := req.URL.Query()
		q.Set(c.keyQuery, c.key)
		req.URL.RawQuery = q.Encode()
	}
	return c.send(req, op, out)
}

// send runs req and decodes the answer.
func (c *apiClient) send(req *http.Request, op string, out any) (http.Header, error) {
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, c.fail(op, 0, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return resp.Header, c.fail(op, resp.StatusCode, fmt.Errorf("reading the answer: %w", err))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.Header, c.answerError(op, resp, data)
	}
	if len(data) > maxAnswerBytes {
		return resp.Header, c.fail(op, resp.StatusCode, fmt.Errorf("answer larger than %d bytes", maxAnswerBytes))
	}
	if out == nil {
		return resp.Header, nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return resp.Header, c.fail(op, resp.StatusCode, fmt.Errorf("decoding the answer: %w", err))
	}
	return resp.Header, nil
}

// fail builds the *Error of a failure without a usable answer.
func (c *apiClient) fail(op string, status int, cause error) *Error {
	return &Error{Provider: c.name, Op: op, Status: status, Err: redactErr(cause, c.secrets())}
}

// secrets is the API key in every spelling, for redaction.
func (c *apiClient) secrets() redact.Secrets { return redact.Values(c.key) }

// answerError turns a non-2xx answer into an *Error, reading the
// shapes the providers use: {"error":"RATE_LIMIT_EXCEEDED","retryAfter":17,
// "limit":200}, {"statusCode":429,"error":"Too Many Requests","message":...},
// {"error":{"code":...,"message":...}}, {"code":...,"message":...},
// {"detail":"..."} and {"detail":[{"msg":...}]}.
func (c *apiClient) answerError(op string, resp *http.Response, data []byte) *Error {
	e := &Error{Provider: c.name, Op: op, Status: resp.StatusCode,
		ExternalCallID: truncate(resp.Header.Get(externalCallIDHeader), 200)}
	if len(data) > maxAnswerBytes {
		data = data[:maxAnswerBytes]
	}
	now := time.Now()
	e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), now)
	if n, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("X-RateLimit-Limit"))); err == nil && n > 0 {
		e.Limit = n
	}

	var obj map[string]any
	if json.Unmarshal(data, &obj) == nil && obj != nil {
		nested, _ := obj["error"].(map[string]any)
		e.Code = firstString(obj["errorCode"], obj["error_code"], obj["code"], obj["error"], nested["code"], nested["type"])
		e.Message = firstString(obj["message"], detailMessage(obj["detail"]), nested["message"], obj["msg"], obj["error_description"])
		if d, ok := seconds(firstPresent(obj["retryAfter"], obj["retry_after"], nested["retryAfter"], nested["retry_after"])); ok && d > e.RetryAfter {
			e.RetryAfter = d
		}
		if n, ok := number(firstPresent(obj["limit"], nested["limit"])); ok && n > 0 {
			e.Limit = int(n)
		}
	} else if text := strings.TrimSpace(string(data)); text != "" && !strings.HasPrefix(text, "<") {
		// A plain-text answer: keep its first line, briefly.
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			text = text[:i]
		}
		e.Message = truncate(strings.TrimSpace(text), 200)
	}
	if e.Code == "" && e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	sec := c.secrets()
	e.Code = truncate(sec.Scrub(e.Code), 100)
	e.Message = truncate(sec.Scrub(e.Message), 500)
	return e
}

// parseRetryAfter reads a Retry-After header: delta-seconds or an HTTP-date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if d, ok := seconds(v); ok {
		return d
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d.Round(time.Second)
		}
	}
	return 0
}

// seconds reads a number of seconds from a JSON number or a numeric string.
func seconds(v any) (time.Duration, bool) {
	f, ok := number(v)
	if !ok || f < 0 || f > 1e9 {
		return 0, false
	}
	return time.Duration(f * float64(time.Second)), true
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, !math.IsNaN(n) && !math.IsInf(n, 0)
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, false
		}
		return f, true
	}
	return 0, false
}

func firstPresent(vs ...any) any {
	for _, v := range vs {
		if v != nil {
			return v
		}
	}
	return nil
}

func firstString(vs ...any) string {
	for _, v := range vs {
		if s, ok := v.(string); ok && strings.TrimSpace(s) != "" {
			return strings.TrimSpace(s)
		}
	}
	return ""
}

// detailMessage reads FastAPI's "detail": a string, or a list of
// {"loc","msg","type"} objects.
func detailMessage(v any) any {
	list, ok := v.([]any)
	if !ok {
		return v
	}
	var msgs []string
	for _, item := range list {
		if m, ok := item.(map[string]any); ok {
			if s, ok := m["msg"].(string); ok && s != "" {
				msgs = append(msgs, s)
			}
		}
	}
	return strings.Join(msgs, "; ")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// resolveCDP turns a provider's CDP endpoint into the websocket URL to dial,
// through cdpconn.Resolve: a ws(s) URL as given, an http(s) URL through its
// /json/version (Browser Use's documented discovery), whose answer is
// checked before it is used. No answer, however malformed, gets further
// than an *Error; one with an HTTP status keeps it (401 is
// ErrAuth), every other is ErrUnavailable. The API key is
// not sent to the endpoint.
func (c *apiClient) resolveCDP(ctx context.Context, op, raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	ws, err := cdpconn.Resolve(ctx, c.client, raw, nil)
	if err != nil {
		return "", c.fail(op, cdpconn.HTTPStatus(err), err)
	}
	return ws, nil
}

// session builds the Session of a create answer, resolving an http(s) CDP URL.
// A 2xx answer without a session id is a malformed answer.
func (c *apiClient) session(ctx context.Context, key, id, cdp string) (*Session, error) {
	if id == "" {
		return nil, c.fail("create", http.StatusOK, errors.New("the answer has no session id"))
	}
	ws, err := c.resolveCDP(ctx, "create", cdp)
	if err != nil {
		return nil, err
	}
	return &Session{Key: key, ID: id, CDPURL: ws, HTTPClient: c.client}, nil
}
