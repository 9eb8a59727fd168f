package provider

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"regexp"
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
	tokens    *tokens // WithTokenSource: the key of each request comes from it
}

func newAPIClient(defaultBase, defaultName, keyHeader, key string, opts []Option) apiClient {
	c := apiClient{config: newConfig(defaultBase, defaultName, opts), keyHeader: keyHeader, key: key}
	if c.tokenSource != nil {
		c.tokens = &tokens{source: c.tokenSource}
	}
	return c
}

// currentKey is the key of a request: the token source's current token,
// or the fixed key.
func (c *apiClient) currentKey(ctx context.Context) (string, error) {
	if c.tokens == nil {
		return c.key, nil
	}
	return c.tokens.get(ctx)
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
	key, err := c.currentKey(ctx)
	if err != nil {
		return nil, c.fail(op, 0, err)
	}
	if err := checkEndpoint(req.URL, key != "" && (c.keyHeader != "" || c.keyQuery != ""), c.privateEndpoint); err != nil {
		return nil, c.fail(op, 0, err)
	}
	if c.keyHeader != "" {
		req.Header.Set(c.keyHeader, c.keyScheme+key)
	}
	if c.keyQuery != "" {
		q := req.URL.Query()
		q.Set(c.keyQuery, key)
		req.URL.RawQuery = q.Encode()
	}
	return c.send(req, op, out, sentFields(in))
}

// sentFields are the top-level fields of a JSON object body, which a
// refusal may name.
func sentFields(in any) []string {
	m, ok := in.(map[string]any)
	if !ok {
		return nil
	}
	return slices.Sorted(maps.Keys(m))
}

// send runs req and decodes the answer; sent are the fields of its body.
func (c *apiClient) send(req *http.Request, op string, out any, sent []string) (http.Header, error) {
	resp, err := c.sender.Do(req)
	if err != nil {
		return nil, c.fail(op, 0, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return resp.Header, c.fail(op, resp.StatusCode, fmt.Errorf("reading the answer: %w", err))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.Header, c.answerError(op, resp, data, sent)
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

// secrets is the API key in every spelling, and the last token a token
// source gave, for redaction.
func (c *apiClient) secrets() redact.Secrets {
	if c.tokens != nil {
		return redact.Values(c.key, c.tokens.last())
	}
	return redact.Values(c.key)
}

// answerError turns a non-2xx answer into an *Error, reading the shapes
// the providers document: Fastify's {"statusCode","error","message"}
// (Browserbase), FastAPI's {"detail":"..."} and {"detail":[{"loc","msg"}]}
// (Browser Use), {"error":"..."} (Browser.cash, Camofox),
// {"error":{"code","message"}}, {"code","message"} (Kernel),
// {"message"} (Steel, Hyperbrowser), plain text (browserless); a
// "retryAfter" and "limit" in the body, and the Retry-After and
// X-RateLimit-Limit headers of HTTP, are read when they come. sent are the
// fields the request's body had, which a refusal may name (Param).
func (c *apiClient) answerError(op string, resp *http.Response, data []byte, sent []string) *Error {
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
		e.Param = detailParam(obj["detail"])
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
	if e.Param == "" && (e.Status == http.StatusBadRequest || e.Status == http.StatusForbidden || e.Status == http.StatusUnprocessableEntity) {
		e.Param = namedParam(e.Code+" "+e.Message, sent)
	}
	sec := c.secrets()
	e.Code = truncate(sec.Scrub(e.Code), 100)
	e.Message = truncate(sec.Scrub(e.Message), 500)
	e.Param = truncate(sec.Scrub(e.Param), 100)
	return e
}

// detailParam reads the field of FastAPI's first validation error:
// {"detail": [{"loc": ["body", "timeout"], ...}]} names "timeout".
func detailParam(v any) string {
	list, _ := v.([]any)
	for _, item := range list {
		m, _ := item.(map[string]any)
		loc, _ := m["loc"].([]any)
		var parts []string
		for i, p := range loc {
			s := fmt.Sprint(p)
			if i == 0 && (s == "body" || s == "query" || s == "header" || s == "path") {
				continue
			}
			parts = append(parts, s)
		}
		if len(parts) > 0 {
			return strings.Join(parts, ".")
		}
	}
	return ""
}

// validatorParam matches a JSON-schema validator's naming of a field:
// "body/timeout must be <= 240", "body.timeout ...", "must have required
// property 'projectId'".
var validatorParam = regexp.MustCompile(`\bbody[/.]([A-Za-z_][A-Za-z0-9_./]*)|property '([A-Za-z_][A-Za-z0-9_.]*)'`)

// namedParam finds the field a refusal's text names: a validator's path,
// else the first field of the request it names as a word ("Session
// timeout limit exceeded" names "timeout").
func namedParam(text string, sent []string) string {
	if m := validatorParam.FindStringSubmatch(text); m != nil {
		return strings.ReplaceAll(strings.TrimRight(cmp.Or(m[1], m[2]), "./"), "/", ".")
	}
	lower := strings.ToLower(text)
	best, at := "", len(lower)
	for _, f := range sent {
		if i := wordIndex(lower, strings.ToLower(f)); i >= 0 && i < at {
			best, at = f, i
		}
	}
	return best
}

// wordIndex is the index of word in text where it stands as a word of its
// own (no letter, digit or underscore on either side), or -1.
func wordIndex(text, word string) int {
	if word == "" {
		return -1
	}
	isWord := func(r byte) bool {
		return r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
	}
	for off := 0; ; {
		i := strings.Index(text[off:], word)
		if i < 0 {
			return -1
		}
		i += off
		end := i + len(word)
		if (i == 0 || !isWord(text[i-1])) && (end == len(text) || !isWord(text[end])) {
			return i
		}
		off = i + 1
	}
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
	ws, err := cdpconn.Resolve(ctx, c.sender, raw, nil)
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
