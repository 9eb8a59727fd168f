// Package state is a browser session's storage state, its login: its
// cookies, and the local and session storage of its origins, in the JSON
// shape of Playwright's storageState, so a file moves between the tools.
// It holds credentials: it is written 0600 ([WriteFile]), never logged
// (its LogValue and its fmt verbs show counts only), and a router never
// hands a cloud browser a cookie or an origin whose host it keeps local.
package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// State is a storage state in Playwright's storageState shape:
//
//	{"cookies": [{"name", "value", "domain", "path", "expires", "httpOnly", "secure", "sameSite"}],
//	 "origins": [{"origin": "https://example.com", "localStorage": [{"name", "value"}],
//	              "sessionStorage": [{"name", "value"}]}]}
//
// sessionStorage is hybroute's own: Playwright keeps session storage out
// of storageState, and ignores the field when it reads such a file.
type State struct {
	Cookies []Cookie `json:"cookies"`
	Origins []Origin `json:"origins"`
}

// Cookie is one cookie of a [State], as Playwright writes it.
type Cookie struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Domain string `json:"domain"` // ".example.com" for a domain cookie, "example.com" for a host-only one
	Path   string `json:"path"`
	// Expires is the expiry in seconds since the Unix epoch; -1 for a
	// session cookie.
	Expires  float64 `json:"expires"`
	HTTPOnly bool    `json:"httpOnly"`
	Secure   bool    `json:"secure"`
	SameSite string  `json:"sameSite"` // "Strict", "Lax" or "None"
}

// Origin is the storage of one origin of a [State].
type Origin struct {
	Origin       string `json:"origin"` // scheme://host[:port], no path
	LocalStorage []Item `json:"localStorage"`
	// SessionStorage is hybroute's extension, which Playwright ignores.
	SessionStorage []Item `json:"sessionStorage,omitempty"`
}

// Item is one key and value of an origin's storage.
type Item struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// ErrInvalid is wrapped by the error of a storage state that cannot be
// loaded: not Playwright's storageState JSON, or a cookie or an origin in
// it that is malformed. The message says what, and names no value.
// Nothing of such a state is loaded.
var ErrInvalid = errors.New("hybroute: bad storage state")

// Bounds of a state: a file past them is refused, not half loaded.
const (
	maxStateBytes   = 16 << 20
	maxStateCookies = 10000
	MaxOrigins      = 1000
)

// LogValue keeps a state's values out of every log line: counts only.
func (s State) LogValue() slog.Value {
	return slog.GroupValue(slog.Int("cookies", len(s.Cookies)), slog.Int("origins", len(s.Origins)))
}

// Format prints counts for every verb, so a state passed to fmt by mistake
// shows no credential (a nil *State prints as <nil>).
func (s State) Format(f fmt.State, _ rune) {
	fmt.Fprintf(f, "hybroute.State{%d cookies, %d origins}", len(s.Cookies), len(s.Origins))
}

// LogValue keeps a cookie's value out of a log line.
func (c Cookie) LogValue() slog.Value {
	return slog.GroupValue(slog.String("name", c.Name), slog.String("domain", c.Domain))
}

// Format shows a cookie without its value.
func (c Cookie) Format(f fmt.State, _ rune) {
	fmt.Fprintf(f, "cookie %q for %s%s", c.Name, c.Domain, c.Path)
}

// LogValue keeps an origin's stored values out of a log line.
func (o Origin) LogValue() slog.Value {
	return slog.GroupValue(slog.String("origin", o.Origin), slog.Int("localStorage", len(o.LocalStorage)),
		slog.Int("sessionStorage", len(o.SessionStorage)))
}

// Format shows an origin without its stored values.
func (o Origin) Format(f fmt.State, _ rune) {
	fmt.Fprintf(f, "storage of %s (%d local, %d session)", o.Origin, len(o.LocalStorage), len(o.SessionStorage))
}

// LogValue keeps a stored value out of a log line.
func (it Item) LogValue() slog.Value { return slog.StringValue(it.Name) }

// Format shows a stored item's name, not its value.
func (it Item) Format(f fmt.State, _ rune) { fmt.Fprintf(f, "item %q", it.Name) }

// Parse reads a storage state from Playwright's storageState JSON and
// checks it. A malformed one fails with an error that wraps [ErrInvalid]
// and says what is wrong, naming no value. Fields Playwright added that
// hybroute does not use (a cookie's partitionKey, an origin's indexedDB)
// are ignored.
func Parse(data []byte) (*State, error) {
	if len(data) > maxStateBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrInvalid, maxStateBytes)
	}
	var s State
	d := json.NewDecoder(bytes.NewReader(data))
	if err := d.Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: not storageState JSON: %s", ErrInvalid, jsonProblem(err))
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: not storageState JSON: text after the object", ErrInvalid)
	}
	if err := s.Check(); err != nil {
		return nil, err
	}
	return &s, nil
}

// jsonProblem is a decoder's complaint without the input it quotes: a
// syntax error names an offset, a type error a field; neither a value.
func jsonProblem(err error) string {
	switch e := err.(type) {
	case *json.SyntaxError:
		return fmt.Sprintf("invalid JSON at byte %d", e.Offset)
	case *json.UnmarshalTypeError:
		return fmt.Sprintf("%s must be a JSON %s, not %s", e.Field, e.Type, e.Value)
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return "empty or cut short"
	}
	return "malformed"
}

// Check validates a state in place, normalising its origins, so a state
// that passes loads into any browser.
func (s *State) Check() error {
	if len(s.Cookies) > maxStateCookies {
		return fmt.Errorf("%w: %d cookies, the limit is %d", ErrInvalid, len(s.Cookies), maxStateCookies)
	}
	if len(s.Origins) > MaxOrigins {
		return fmt.Errorf("%w: %d origins, the limit is %d", ErrInvalid, len(s.Origins), MaxOrigins)
	}
	for i := range s.Cookies {
		c := &s.Cookies[i]
		switch {
		case c.Name == "" && c.Value == "":
			return fmt.Errorf("%w: cookie %d has no name and no value", ErrInvalid, i)
		case c.Domain == "" || strings.ContainsAny(c.Domain, "/ \t\r\n;") || c.Domain == ".":
			return fmt.Errorf("%w: cookie %d (%q) has no valid domain", ErrInvalid, i, c.Name)
		case c.Path == "":
			c.Path = "/"
		case !strings.HasPrefix(c.Path, "/"):
			return fmt.Errorf("%w: cookie %d (%q): path %q must start with /", ErrInvalid, i, c.Name, c.Path)
		case math.IsNaN(c.Expires) || math.IsInf(c.Expires, 0):
			return fmt.Errorf("%w: cookie %d (%q): expires is not a number of seconds", ErrInvalid, i, c.Name)
		}
		switch c.SameSite {
		case "", "Strict", "Lax", "None":
		default:
			return fmt.Errorf("%w: cookie %d (%q): sameSite %q is not Strict, Lax or None", ErrInvalid, i, c.Name, c.SameSite)
		}
		if err := browserRules(*c); err != nil {
			return fmt.Errorf("%w: cookie %d (%q): %w", ErrInvalid, i, c.Name, err)
		}
	}
	seen := map[string]bool{}
	for i := range s.Origins {
		o := &s.Origins[i]
		norm, err := CanonicalOrigin(o.Origin)
		if err != nil {
			return fmt.Errorf("%w: origin %d: %w", ErrInvalid, i, err)
		}
		if seen[norm] {
			return fmt.Errorf("%w: origin %s is listed twice", ErrInvalid, norm)
		}
		seen[norm] = true
		o.Origin = norm
	}
	return nil
}

// browserRules are the rules Chromium holds a cookie to when it is set
// (Storage.setCookies refuses the whole list for one that breaks them):
// caught here, a bad file fails when it is read, not at every session
// its key makes.
func browserRules(c Cookie) error {
	switch {
	case strings.ContainsFunc(c.Name+c.Value, func(r rune) bool { return r < 0x20 || r == 0x7f || r == ';' }):
		return errors.New("its name or value holds a control character or ';'")
	case strings.ContainsAny(c.Name, "= \t"):
		return errors.New("its name holds '=' or a blank")
	case strings.HasPrefix(c.Name, "__Secure-") && !c.Secure:
		return errors.New("a __Secure- cookie needs secure")
	case strings.HasPrefix(c.Name, "__Host-") && (!c.Secure || c.Path != "/" || strings.HasPrefix(c.Domain, ".")):
		return errors.New("a __Host- cookie needs secure, path / and no domain of its own")
	}
	return nil
}

// CanonicalOrigin checks an origin of a state and returns it as the browser
// writes it: scheme://host[:port], lower case, without a default port.
func CanonicalOrigin(raw string) (string, error) {
	u, err := url.Parse(raw)
	// The errors quote nothing of raw: a URL where an origin should be
	// may carry a token in its path or query.
	switch {
	case err != nil:
		return "", errors.New("not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return "", errors.New("not http or https")
	case u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return "", errors.New("not an origin (scheme://host[:port], no path)")
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return u.Scheme + "://" + host, nil
}

// ReadFile reads and checks the storage state file at path
// ([Parse]).
func ReadFile(path string) (*State, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("hybroute: reading the state file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxStateBytes+1))
	if err != nil {
		return nil, fmt.Errorf("hybroute: reading the state file %s: %w", path, err)
	}
	s, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("hybroute: state file %s: %w", path, err)
	}
	return s, nil
}

// WriteFile writes s to path as Playwright's storageState JSON, with
// mode 0600 whatever the umask and whatever file was there: it holds
// credentials. The file is written whole or not at all (a temporary file
// in the same directory, renamed over path).
func WriteFile(path string, s *State) error {
	if s == nil {
		return fmt.Errorf("%w: no state to write", ErrInvalid)
	}
	b, err := json.MarshalIndent(s.forJSON(), "", "  ")
	if err != nil {
		return fmt.Errorf("hybroute: encoding the state: %w", err)
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".hybroute-state-*")
	if err != nil {
		return fmt.Errorf("hybroute: writing the state file: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // gone by then after a rename
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("hybroute: writing the state file: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("hybroute: writing the state file: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("hybroute: writing the state file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("hybroute: writing the state file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("hybroute: writing the state file: %w", err)
	}
	return nil
}

// forJSON is s with empty lists rather than nulls, as Playwright writes
// them (and reads them: a null cookies list fails its check).
func (s *State) forJSON() *State {
	out := &State{Cookies: s.Cookies, Origins: make([]Origin, len(s.Origins))}
	if out.Cookies == nil {
		out.Cookies = []Cookie{}
	}
	for i, o := range s.Origins {
		if o.LocalStorage == nil {
			o.LocalStorage = []Item{}
		}
		out.Origins[i] = o
	}
	return out
}

// Clone is a deep copy of s: a state handed in or out is the caller's.
func (s *State) Clone() *State {
	if s == nil {
		return nil
	}
	out := &State{Cookies: slices.Clone(s.Cookies), Origins: make([]Origin, len(s.Origins))}
	for i, o := range s.Origins {
		o.LocalStorage = slices.Clone(o.LocalStorage)
		o.SessionStorage = slices.Clone(o.SessionStorage)
		out.Origins[i] = o
	}
	return out
}

// Merge returns s with over laid on it: a cookie of over replaces the
// one of s with its name, domain and path; an origin of over replaces
// s's storage of that origin, but for a sessionStorage over did not
// read (nil), which s's keeps.
func (s *State) Merge(over *State) *State {
	if s == nil {
		return over.Clone()
	}
	out := s.Clone()
	if over == nil {
		return out
	}
	type ck struct{ name, domain, path string }
	at := map[ck]int{}
	for i, c := range out.Cookies {
		at[ck{c.Name, c.Domain, c.Path}] = i
	}
	for _, c := range over.Cookies {
		if i, ok := at[ck{c.Name, c.Domain, c.Path}]; ok {
			out.Cookies[i] = c
			continue
		}
		at[ck{c.Name, c.Domain, c.Path}] = len(out.Cookies)
		out.Cookies = append(out.Cookies, c)
	}
	oi := map[string]int{}
	for i, o := range out.Origins {
		oi[o.Origin] = i
	}
	for _, o := range over.Clone().Origins {
		i, ok := oi[o.Origin]
		if !ok {
			oi[o.Origin] = len(out.Origins)
			out.Origins = append(out.Origins, o)
			continue
		}
		if o.SessionStorage == nil {
			o.SessionStorage = out.Origins[i].SessionStorage
		}
		out.Origins[i] = o
	}
	return out
}

// AddOrigin adds an origin's storages when they hold anything.
func (s *State) AddOrigin(origin string, local, sess []Item) {
	if len(local) == 0 && len(sess) == 0 {
		return
	}
	if local == nil {
		local = []Item{}
	}
	s.Origins = append(s.Origins, Origin{Origin: origin, LocalStorage: local, SessionStorage: sess})
}
