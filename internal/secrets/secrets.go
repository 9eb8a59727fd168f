// Package secrets holds the named secrets a model may have typed into a
// page without ever reading them: each value is bound to the exact origins
// where it may be typed, and is known in every spelling a page or a log may
// carry it in, so that it is scrubbed from whatever leaves the toolset.
//
// A secrets file is JSON, one object whose keys are the secrets' names:
//
//	{
//	  "app-password": {"env": "APP_PASSWORD", "origins": ["http://10.0.0.5:8080"]},
//	  "shop-login":   {"value": "s3cret-pa55", "origins": ["https://shop.example.com"], "local_only": true}
//	}
//
// A value is given in the file ("value") or named by an environment
// variable that holds it ("env"), never both. The file must not be
// readable or writable by anyone but its owner (chmod 600): it holds
// values, and whoever can write it can bind a secret to an origin of
// theirs.
package secrets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"

	"github.com/hybroute/hybroute/internal/redact"
)

// Errors a caller tells apart with errors.Is. No error of the package
// holds a secret's value.
var (
	// ErrInvalid: a secret, an origin or a file is not as the format says.
	ErrInvalid = errors.New("secrets: invalid")
	// ErrFileMode: the file may be read or written by others than its owner.
	ErrFileMode = errors.New("secrets: the file is open to others than its owner (chmod 600 it)")
)

// Secret is one named secret and the origins where it may be typed.
type Secret struct {
	Name  string
	Value string
	// Origins are where the secret may be typed: scheme://host[:port],
	// http or https, exactly (no wildcard, no path).
	Origins []string
	// LocalOnly keeps the secret off remote browsers even where every
	// origin of it is public. A secret with a private origin is kept off
	// them anyway.
	LocalOnly bool
}

// String names the secret and its origins, never its value; %v, %+v and
// %#v print it so.
func (x Secret) String() string {
	return fmt.Sprintf("secret %q for %s", x.Name, strings.Join(x.Origins, ", "))
}

// GoString is String.
func (x Secret) GoString() string { return x.String() }

// MinValueLen is the shortest value a secret may have: a shorter one
// could not be scrubbed from texts without wrecking them.
const MinValueLen = 4

// maxFile bounds what is read of a secrets file.
const maxFile = 1 << 20

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$`)

// Set is a validated set of secrets, safe for concurrent use. Its zero
// value, and a nil *Set, hold none.
type Set struct {
	byName map[string]Secret // origins normalised
	names  []string
	red    redact.Secrets
}

// New validates ss and returns their set: names unique and plain, values
// at least MinValueLen bytes, at least one origin each, every origin an
// http or https origin.
func New(ss ...Secret) (*Set, error) {
	s := &Set{byName: make(map[string]Secret, len(ss))}
	values := make([]string, 0, len(ss))
	for _, x := range ss {
		if !nameRE.MatchString(x.Name) {
			return nil, fmt.Errorf("%w: secret name %q: use letters, digits, '.', '_' and '-' (up to 64)", ErrInvalid, x.Name)
		}
		if _, dup := s.byName[x.Name]; dup {
			return nil, fmt.Errorf("%w: secret %q is named twice", ErrInvalid, x.Name)
		}
		if len(x.Value) < MinValueLen {
			return nil, fmt.Errorf("%w: secret %q: its value is shorter than %d bytes", ErrInvalid, x.Name, MinValueLen)
		}
		if len(x.Origins) == 0 {
			return nil, fmt.Errorf("%w: secret %q is bound to no origin", ErrInvalid, x.Name)
		}
		origins := make([]string, 0, len(x.Origins))
		for _, o := range x.Origins {
			n, err := Origin(o)
			if err != nil {
				return nil, fmt.Errorf("secret %q: %w", x.Name, err)
			}
			if !slices.Contains(origins, n) {
				origins = append(origins, n)
			}
		}
		x.Origins = origins
		s.byName[x.Name] = x
		s.names = append(s.names, x.Name)
		values = append(values, x.Value)
	}
	slices.Sort(s.names)
	s.red = redact.Typed(values...)
	return s, nil
}

// Names lists the secrets' names, sorted.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	return slices.Clone(s.names)
}

// Len is how many secrets the set holds.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.names)
}

// Get returns the secret called name.
func (s *Set) Get(name string) (Secret, bool) {
	if s == nil {
		return Secret{}, false
	}
	x, ok := s.byName[name]
	return x, ok
}

// Binds reports whether x may be typed on a page of origin (as a browser
// serialises it: location.origin).
func (x Secret) Binds(origin string) bool {
	n, err := Origin(origin)
	return err == nil && slices.Contains(x.Origins, n)
}

// Scrub returns text with every secret of the set replaced by REDACTED, in
// every spelling redact.Typed knows, also where a bound cut one short
// (redact.CutMarks).
func (s *Set) Scrub(text string) string {
	if s == nil || s.Len() == 0 {
		return text
	}
	return s.red.ScrubCut(text, redact.CutMarks...)
}

// Clean reports whether text holds none of the secrets, in any spelling.
func (s *Set) Clean(text string) bool {
	if s == nil || s.Len() == 0 {
		return true
	}
	return s.red.Clean(text)
}

// Origin returns raw as an origin is serialised, scheme://host[:port]:
// scheme and host lower case, the scheme's default port dropped. Only http
// and https origins, without userinfo, path, query or fragment, and with an
// ASCII host (a name in its xn-- form), are origins here.
func Origin(raw string) (string, error) {
	bad := func(why string) error { return fmt.Errorf("%w: origin %q: %s", ErrInvalid, raw, why) }
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", bad("not a URL")
	}
	scheme := strings.ToLower(u.Scheme)
	switch {
	case scheme != "http" && scheme != "https":
		return "", bad("want http:// or https://")
	case u.Opaque != "" || u.Host == "":
		return "", bad("no host")
	case u.User != nil:
		return "", bad("an origin has no user name or password")
	case u.Path != "" && u.Path != "/", u.RawQuery != "", u.ForceQuery, u.Fragment != "":
		return "", bad("an origin is scheme://host[:port], without path, query or fragment")
	}
	host := strings.ToLower(u.Hostname())
	for i := 0; i < len(host); i++ {
		if host[i] >= 0x80 {
			return "", bad("write the host in its xn-- form")
		}
	}
	if host == "" || strings.ContainsAny(host, "*%") {
		return "", bad("want one exact host")
	}
	port := u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		return scheme + "://" + host + ":" + port, nil
	}
	return scheme + "://" + host, nil
}

// fileEntry is one secret as a file writes it.
type fileEntry struct {
	Value     *string  `json:"value"`
	Env       string   `json:"env"`
	Origins   []string `json:"origins"`
	LocalOnly bool     `json:"local_only"`
}

// Load reads the secrets file at path (the package doc gives its format),
// taking "env" values from getenv. It refuses a file that others than its
// owner may read or write (ErrFileMode), where the system has such modes.
func Load(path string, getenv func(string) string) ([]Secret, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %04o", ErrFileMode, path, fi.Mode().Perm())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxFile {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrInvalid, path, maxFile)
	}
	ss, err := Parse(b, getenv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ss, nil
}

// Parse reads a secrets file's content. Its errors say where the file is
// wrong without quoting it: a value is never in an error.
func Parse(b []byte, getenv func(string) string) ([]Secret, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, jsonError(err)
	}
	ss := make([]Secret, 0, len(raw))
	for name, m := range raw {
		var e fileEntry
		d := json.NewDecoder(bytes.NewReader(m))
		d.DisallowUnknownFields()
		if err := d.Decode(&e); err != nil {
			var ue *json.UnmarshalTypeError
			if errors.As(err, &ue) || strings.Contains(err.Error(), "unknown field") {
				return nil, fmt.Errorf("%w: secret %q: want {\"value\" or \"env\", \"origins\", \"local_only\"}", ErrInvalid, name)
			}
			return nil, fmt.Errorf("secret %q: %w", name, jsonError(err))
		}
		x := Secret{Name: name, Origins: e.Origins, LocalOnly: e.LocalOnly}
		switch {
		case e.Value != nil && e.Env != "":
			return nil, fmt.Errorf("%w: secret %q has both a value and an env", ErrInvalid, name)
		case e.Value != nil:
			x.Value = *e.Value
		case e.Env != "":
			if x.Value = getenv(e.Env); x.Value == "" {
				return nil, fmt.Errorf("%w: secret %q: the environment variable %s is not set", ErrInvalid, name, e.Env)
			}
		default:
			return nil, fmt.Errorf("%w: secret %q has neither a value nor an env", ErrInvalid, name)
		}
		ss = append(ss, x)
	}
	slices.SortFunc(ss, func(a, b Secret) int { return strings.Compare(a.Name, b.Name) })
	return ss, nil
}

// jsonError says where JSON is wrong, not what it holds.
func jsonError(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("%w: not valid JSON at byte %d", ErrInvalid, se.Offset)
	}
	return fmt.Errorf("%w: want a JSON object of secrets by name", ErrInvalid)
}
