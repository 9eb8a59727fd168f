package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A provider described by data rather than code: the many CDP session
// services whose API is one create call that answers a CDP URL and an id,
// and one release call. A spec names the base URL, where the key goes, the
// create call (method, path, body), the answer's fields that hold the id
// and the CDP URL (dotted paths, "data.cdp_url"), and the release call
// (a path with {id}, or a URL the create answer gives). The presets
// (sessionapi_presets.go) are specs too; a user adds a provider with a
// JSON file of the same shape ([LoadSessionAPISpec]), no Go needed.

// SessionAPISpec describes a session API.
type SessionAPISpec struct {
	// Name names the provider in logs and errors.
	Name string `json:"name"`
	// BaseURL is the API's base URL; WithBaseURL overrides it.
	BaseURL string `json:"base_url"`
	// Auth says where the API key goes.
	Auth SessionAPIAuth `json:"auth"`
	// Create is the call that starts a session.
	Create SessionAPICall `json:"create"`
	// IDField and CDPField are the dotted paths of the session id and of
	// its CDP URL (ws(s), or an http(s) endpoint resolved through
	// /json/version) in the create answer.
	IDField  string `json:"id_field"`
	CDPField string `json:"cdp_field"`
	// MoreCDPFields are the paths read, in order, when CDPField is empty
	// in an answer: a provider whose answers come in several documented
	// shapes (browserless's "connect", or "browserWSEndpoint").
	MoreCDPFields []string `json:"more_cdp_fields,omitempty"`
	// LiveViewField is the path of the live view URL in the create answer
	// ([Session].LiveViewURL).
	LiveViewField string `json:"live_view_field,omitempty"`
	// Replay is the call that asks for a session's recording ([Replayer]):
	// its path holds {id}. ReplayField is the path of the recording's URL
	// in that call's answer, or, for a spec without one, in the create
	// answer ([Session].ReplayURL). A number in a path picks an item of a
	// list: "data.items.0.file_link".
	Replay      SessionAPICall `json:"replay,omitzero"`
	ReplayField string         `json:"replay_field,omitempty"`
	// ExpiresAtField is the path of the session's end as an RFC 3339 time;
	// TTLField that of its lifetime in milliseconds from the create
	// (browserless's "ttl"). Either gives [Session].ExpiresAt.
	ExpiresAtField string `json:"expires_at_field,omitempty"`
	TTLField       string `json:"ttl_field,omitempty"`
	// Poll reads a session whose create answered no CDP URL while its
	// StatusField was one of PendingStatuses (Browser.cash's "starting"):
	// a GET whose path holds {id}, called every second until the answer
	// (of the create's shape) has the CDP URL, names another status, or
	// the create's deadline passes. A session that never starts is
	// released.
	Poll            SessionAPICall `json:"poll,omitzero"`
	StatusField     string         `json:"status_field,omitempty"`
	PendingStatuses []string       `json:"pending_statuses,omitempty"`
	// Release is the call that ends a session: its path holds {id}. Leave
	// it empty when ReleaseURLField names the URL, or when sessions end by
	// themselves.
	Release SessionAPICall `json:"release"`
	// ReleaseURLField is the dotted path of a release URL in the create
	// answer (browserless's "stop"), called with Release.Method (default
	// DELETE). It must be on the base URL's host, or it is not called.
	ReleaseURLField string `json:"release_url_field,omitempty"`
	// ReleaseNotFoundIsEnded: the provider answers 404 to the release of
	// a session that already ended (Browser.cash), which is then no
	// failure.
	ReleaseNotFoundIsEnded bool `json:"release_not_found_is_ended,omitempty"`
	// SingleConnection marks a provider that serves one CDP websocket per
	// session (see [Session].SingleConnection).
	SingleConnection bool `json:"single_connection,omitempty"`
	// Docs says where the shape comes from, for people reading the spec.
	Docs string `json:"docs,omitempty"`
}

// SessionAPIAuth says where a session API takes its key: a header (with
// an optional scheme, "Bearer"), or a query parameter.
type SessionAPIAuth struct {
	Header string `json:"header,omitempty"`
	Scheme string `json:"scheme,omitempty"`
	Query  string `json:"query,omitempty"`
}

// SessionAPICall is one call of a session API.
type SessionAPICall struct {
	Method string `json:"method,omitempty"`
	Path   string `json:"path,omitempty"`
	// Body is the JSON body; nil sends none. WithSessionParams adds to it.
	Body map[string]any `json:"body,omitempty"`
}

// ErrInvalidSpec is wrapped by the error of a session API spec that cannot
// describe a provider.
var ErrInvalidSpec = errors.New("hybroute: invalid session API spec")

// Validate reports what makes the spec unusable, wrapping [ErrInvalidSpec].
func (s SessionAPISpec) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w %q: %s", ErrInvalidSpec, s.Name, fmt.Sprintf(format, a...))
	}
	if strings.TrimSpace(s.Name) == "" {
		return fmt.Errorf("%w: no name", ErrInvalidSpec)
	}
	if u, err := url.Parse(s.BaseURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return bad("base_url must be an http(s) URL")
	}
	if (s.Auth.Header == "") == (s.Auth.Query == "") {
		return bad("auth needs a header or a query parameter (one of them)")
	}
	if !validMethod(s.Create.Method) || !strings.HasPrefix(s.Create.Path, "/") {
		return bad("create needs a method and a path starting with /")
	}
	if s.IDField == "" || s.CDPField == "" {
		return bad("id_field and cdp_field are required")
	}
	if s.Poll.Method != "" || s.Poll.Path != "" {
		if s.Poll.Method != http.MethodGet || !strings.HasPrefix(s.Poll.Path, "/") || !strings.Contains(s.Poll.Path, "{id}") {
			return bad("poll needs the method GET and a path starting with / holding {id}")
		}
		if s.StatusField == "" || len(s.PendingStatuses) == 0 {
			return bad("poll needs status_field and pending_statuses")
		}
	}
	if s.Replay.Method != "" || s.Replay.Path != "" {
		if !validMethod(s.Replay.Method) || !strings.HasPrefix(s.Replay.Path, "/") || !strings.Contains(s.Replay.Path, "{id}") {
			return bad("replay needs a method and a path starting with / holding {id}")
		}
		if s.ReplayField == "" {
			return bad("replay needs replay_field")
		}
	}
	switch {
	case s.ReleaseURLField != "":
		if s.Release.Path != "" || (s.Release.Method != "" && !validMethod(s.Release.Method)) {
			return bad("release_url_field takes a release method only, no path")
		}
	case s.Release.Path != "" || s.Release.Method != "":
		if !validMethod(s.Release.Method) || !strings.HasPrefix(s.Release.Path, "/") || !strings.Contains(s.Release.Path, "{id}") {
			return bad("release needs a method and a path starting with / holding {id}")
		}
	}
	return nil
}

func validMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// LoadSessionAPISpec reads a spec from JSON (the fields of
// [SessionAPISpec]; an unknown field is an error, a typo must not pass
// silently) and validates it.
func LoadSessionAPISpec(r io.Reader) (SessionAPISpec, error) {
	var s SessionAPISpec
	data, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return s, fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	return s, s.Validate()
}

// SessionAPI is the client of a session API a [SessionAPISpec] describes.
type SessionAPI struct {
	apiClient
	spec      SessionAPISpec
	pollEvery time.Duration // between two reads of a starting session
}

// NewSessionAPI returns the client of the spec's API with the API key.
func NewSessionAPI(spec SessionAPISpec, apiKey string, opts ...Option) (*SessionAPI, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	c := newAPIClient(spec.BaseURL, spec.Name, spec.Auth.Header, apiKey, opts)
	if spec.Auth.Scheme != "" {
		c.keyScheme = spec.Auth.Scheme + " "
	}
	c.keyQuery = spec.Auth.Query
	return &SessionAPI{apiClient: c, spec: spec, pollEvery: pollInterval}, nil
}

// Spec returns the spec the client speaks.
func (p *SessionAPI) Spec() SessionAPISpec { return p.spec }

// CreateSession implements [Provider]: the spec's create call; the id and
// the CDP URL are read from the answer's fields.
func (p *SessionAPI) CreateSession(ctx context.Context, key string) (*Session, error) {
	var body any
	if p.spec.Create.Body != nil || len(p.params) > 0 {
		// The user's params win over the spec's defaults.
		b := maps.Clone(p.spec.Create.Body)
		if b == nil {
			b = map[string]any{}
		}
		maps.Copy(b, p.params)
		body = b
	}
	var out map[string]any
	if _, err := p.request(ctx, "create", p.spec.Create.Method, p.baseURL+p.spec.Create.Path, body, &out, nil); err != nil {
		return nil, err
	}
	id, _ := field(out, p.spec.IDField)
	if id != "" && p.cdpOf(out) == "" && p.pending(out) {
		var err error
		if out, err = p.poll(ctx, id); err != nil {
			p.releaseUnstarted(ctx, key, id, out)
			return nil, err
		}
	}
	s, err := p.session(ctx, key, id, p.cdpOf(out))
	if err != nil {
		return nil, err
	}
	s.SingleConnection = p.spec.SingleConnection
	if p.spec.ReleaseURLField != "" {
		s.releaseURL, _ = field(out, p.spec.ReleaseURLField)
	}
	p.describe(s, out)
	return s, nil
}

// cdpOf is the CDP URL of an answer: CDPField, else the first of
// MoreCDPFields that holds one.
func (p *SessionAPI) cdpOf(out map[string]any) string {
	for _, f := range append([]string{p.spec.CDPField}, p.spec.MoreCDPFields...) {
		if v, _ := field(out, f); v != "" {
			return v
		}
	}
	return ""
}

// pending reports an answer whose status says the session is starting.
func (p *SessionAPI) pending(out map[string]any) bool {
	if p.spec.Poll.Path == "" {
		return false
	}
	st, _ := field(out, p.spec.StatusField)
	return slices.Contains(p.spec.PendingStatuses, st)
}

// pollInterval is the pause between two reads of a starting session: the
// second Browser.cash's docs wait.
const pollInterval = time.Second

// poll reads session id until it has its CDP URL: the last answer, or
// an error when it ended, or ctx (bounded by defaultTimeout when it has
// no deadline) ran out.
func (p *SessionAPI) poll(ctx context.Context, id string) (map[string]any, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultTimeout)
		defer cancel()
	}
	var out map[string]any
	for {
		t := time.NewTimer(p.pollEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return out, p.fail("create", 0, fmt.Errorf("session %s still starting: %w", id, context.Cause(ctx)))
		case <-t.C:
		}
		out = nil
		if err := p.call(ctx, "create", http.MethodGet, p.idPath(p.spec.Poll.Path, id), nil, &out); err != nil {
			if ctx.Err() != nil {
				return nil, p.fail("create", 0, fmt.Errorf("session %s still starting: %w", id, context.Cause(ctx)))
			}
			return nil, err
		}
		if p.cdpOf(out) != "" {
			return out, nil
		}
		if !p.pending(out) {
			st, _ := field(out, p.spec.StatusField)
			return nil, p.fail("create", http.StatusOK, fmt.Errorf("session %s ended before it started (status %q)", id, truncate(st, 40)))
		}
	}
}

// releaseUnstarted gives back a session that did not start in time, on a
// context of its own (the create's is over).
func (p *SessionAPI) releaseUnstarted(ctx context.Context, key, id string, out map[string]any) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	s := &Session{Key: key, ID: id}
	if p.spec.ReleaseURLField != "" {
		s.releaseURL, _ = field(out, p.spec.ReleaseURLField)
	}
	_ = p.ReleaseSession(ctx, s)
}

// describe sets what the answer says of the session beyond its CDP URL:
// its live view, its recording, its end.
func (p *SessionAPI) describe(s *Session, out map[string]any) {
	if p.spec.LiveViewField != "" {
		s.LiveViewURL, _ = field(out, p.spec.LiveViewField)
	}
	if p.spec.ReplayField != "" && p.spec.Replay.Path == "" {
		s.ReplayURL, _ = field(out, p.spec.ReplayField)
	}
	if p.spec.ExpiresAtField != "" {
		v, _ := field(out, p.spec.ExpiresAtField)
		s.ExpiresAt = parseTime(v)
	}
	if p.spec.TTLField != "" && s.ExpiresAt.IsZero() {
		if ms, ok := number(fieldAny(out, p.spec.TTLField)); ok && ms > 0 {
			s.ExpiresAt = time.Now().Add(time.Duration(ms * float64(time.Millisecond))).Truncate(time.Second)
		}
	}
}

// idPath is a spec path with the session id in its {id}, escaped for
// the path or the query it stands in.
func (p *SessionAPI) idPath(raw, id string) string {
	path, query, _ := strings.Cut(raw, "?")
	path = strings.ReplaceAll(path, "{id}", url.PathEscape(id))
	if query != "" {
		path += "?" + strings.ReplaceAll(query, "{id}", url.QueryEscape(id))
	}
	return path
}

// ReleaseSession implements [Provider]: the spec's release call, or the
// release URL the create answer gave, when it is on the API's host.
func (p *SessionAPI) ReleaseSession(ctx context.Context, s *Session) error {
	if s == nil || s.ID == "" {
		return nil
	}
	method := p.spec.Release.Method
	if p.spec.ReleaseURLField != "" {
		if s.releaseURL == "" {
			return p.fail("release", 0, errors.New("the create answer gave no release URL"))
		}
		if !sameOrigin(s.releaseURL, p.baseURL) {
			// The key would go with it: a URL off the API's host is
			// not called, whatever the answer said.
			return p.fail("release", 0, errors.New("the release URL is not on the API's host"))
		}
		if method == "" {
			method = http.MethodDelete
		}
		_, err := p.request(ctx, "release", method, s.releaseURL, nil, nil, nil)
		var pe *Error
		if p.spec.ReleaseNotFoundIsEnded && errors.As(err, &pe) && pe.Status == http.StatusNotFound {
			return nil
		}
		return err
	}
	if p.spec.Release.Path == "" {
		return nil
	}
	var body any
	if p.spec.Release.Body != nil {
		body = p.spec.Release.Body
	}
	err := p.call(ctx, "release", method, p.idPath(p.spec.Release.Path, s.ID), body, nil)
	var pe *Error
	if p.spec.ReleaseNotFoundIsEnded && errors.As(err, &pe) && pe.Status == http.StatusNotFound {
		return nil // it ended already: what the release was for
	}
	return err
}

// Replay implements [Replayer]: the spec's replay call, and the URL at
// its ReplayField; a spec without a replay call gives the URL the create
// answer named, if any. No URL there is [ErrNoReplay].
func (p *SessionAPI) Replay(ctx context.Context, s *Session) (string, error) {
	if s == nil || s.ID == "" {
		return "", noReplay(p.name, "")
	}
	if p.spec.Replay.Path == "" {
		if s.ReplayURL != "" {
			return s.ReplayURL, nil
		}
		return "", noReplay(p.name, s.ID)
	}
	var body any
	if p.spec.Replay.Body != nil {
		body = p.spec.Replay.Body
	}
	var out any
	if err := p.call(ctx, "replay", p.spec.Replay.Method, p.idPath(p.spec.Replay.Path, s.ID), body, &out); err != nil {
		return "", err
	}
	if u, _ := field(out, p.spec.ReplayField); u != "" {
		return u, nil
	}
	return "", noReplay(p.name, s.ID)
}

// sameOrigin reports whether u has base's scheme and host.
func sameOrigin(u, base string) bool {
	a, err1 := url.Parse(u)
	b, err2 := url.Parse(base)
	return err1 == nil && err2 == nil && a.Scheme == b.Scheme && strings.EqualFold(a.Host, b.Host) && a.User == nil
}

// field reads the string at a dotted path of a decoded JSON value.
func field(obj any, path string) (string, bool) {
	s, ok := fieldAny(obj, path).(string)
	return s, ok
}

// fieldAny reads the value at a dotted path of a decoded JSON value: a
// name picks an object's field, a number a list's item.
func fieldAny(obj any, path string) any {
	cur := obj
	for _, part := range strings.Split(path, ".") {
		switch v := cur.(type) {
		case map[string]any:
			cur = v[part]
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(v) {
				return nil
			}
			cur = v[i]
		default:
			return nil
		}
	}
	return cur
}

var _ Provider = (*SessionAPI)(nil)
