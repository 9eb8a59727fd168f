package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/hybroute/hybroute/internal/redact"
)

// A config file holds the command's flags, by name, in JSON or YAML (YAML
// reads both): what is deployed as a file rather than a command line.
// Flags given on the command line win over the file. API keys are never
// read from it: they stay in the environment, where the provider's
// variables are looked up, so a file that is copied around carries none.

// maxConfigBytes bounds a config file.
const maxConfigBytes = 1 << 20

// registerConfigFlags adds --config and --print-config.
func (c *config) registerConfigFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.configPath, "config", "", "read flags from this JSON or YAML file (keys are flag names: provider, allowed-hosts, …); flags on the command line win")
	fs.BoolVar(&c.printConfig, "print-config", false, "print the effective configuration, secrets masked, and exit")
}

// loadConfigFile sets every flag the file names that the command line did
// not. It fails on a key that is no flag, and on a value its flag refuses.
func loadConfigFile(fs *flag.FlagSet, path string) error {
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%w: --config: %w", errConfig, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return fmt.Errorf("%w: --config %s: %w", errConfig, path, err)
	}
	if len(b) > maxConfigBytes {
		return fmt.Errorf("%w: --config %s: larger than %d bytes", errConfig, path, maxConfigBytes)
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("%w: --config %s: not JSON or YAML of flag names: %w", errConfig, path, err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		name := strings.TrimLeft(k, "-")
		fl := fs.Lookup(name)
		switch {
		case fl == nil || name == "config" || name == "print-config":
			return fmt.Errorf("%w: --config %s: unknown key %q (keys are the flags of %s)%s", errConfig, path, k, fs.Name(), didYouMean(fs, k))
		case set[name]:
			continue // the command line wins
		}
		vals, err := configValues(m[k])
		if err != nil {
			return fmt.Errorf("%w: --config %s: %s: %w", errConfig, path, k, err)
		}
		if len(vals) == 0 {
			// An empty list or no value: the flag decides what an empty
			// value means (an empty allow list is an error), rather than
			// the key being dropped as if it were not there.
			vals = []string{""}
		}
		for _, v := range vals {
			if err := fs.Set(name, v); err != nil {
				return fmt.Errorf("%w: --config %s: %s: %w", errConfig, path, k, err)
			}
		}
	}
	return nil
}

// configValues are the flag values a file's value stands for: a scalar is
// one, a list is one per element (for repeatable flags).
func configValues(v any) ([]string, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case []any:
		var out []string
		for _, e := range v {
			s, err := configValues(e)
			if err != nil {
				return nil, err
			}
			out = append(out, s...)
		}
		return out, nil
	case map[string]any:
		return nil, errors.New("want a value or a list, not a map")
	}
	return []string{fmt.Sprint(v)}, nil
}

// secretName is a flag or variable whose value is never printed.
var secretName = regexp.MustCompile(`(?i)key|token|secret|passw|auth|credential|cookie|bearer|signature`)

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// printableURLs is a flag value holding URLs (comma-separated) with every
// credential spelling removed: userinfo and query values (redact.URL),
// and the path segments that may be tokens. A CDP URL carries its token
// in the path as often as in the query (…/devtools/browser/TOKEN), so
// only segments that read as plain words (devtools, browser, v1) are
// kept.
func printableURLs(v string) string {
	// A comma is a list separator only before a part that starts a URL:
	// one URL's token may hold a comma (…?token=abc,def), and its tail
	// is redacted with the URL, not printed as an item of its own.
	var parts []string
	for _, p := range strings.Split(v, ",") {
		if n := len(parts); n > 0 && strings.Contains(parts[n-1], "://") && !strings.Contains(p, "://") {
			parts[n-1] += "," + p
			continue
		}
		parts = append(parts, p)
	}
	for i, p := range parts {
		if !strings.Contains(p, "://") {
			continue
		}
		u, err := url.Parse(redact.URL(strings.TrimSpace(p)))
		if err != nil {
			parts[i] = "[unparseable URL]"
			continue
		}
		segs := strings.Split(u.EscapedPath(), "/")
		for j, s := range segs {
			if s != "" && !plainSegment.MatchString(s) {
				segs[j] = redact.Redacted
			}
		}
		u.RawPath = ""
		u.Path = strings.Join(segs, "/")
		parts[i] = u.String()
	}
	return strings.Join(parts, ",")
}

// plainSegment is a URL path segment that reads as a word, not a token.
var plainSegment = regexp.MustCompile(`^(?:[a-z][a-z._-]{0,15}|v[0-9]{1,2})$`)

// printConfig writes the effective configuration: every flag with its
// value (secrets masked, URLs with their credentials redacted), and which
// provider keys the environment holds, never their values.
func printConfig(w io.Writer, fs *flag.FlagSet, getenv func(string) string) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s: the effective configuration (secrets masked)\n", fs.Name())
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name == "config" || f.Name == "print-config" {
			return
		}
		v := f.Value.String()
		switch {
		case isBoolFlag(f):
			// A switch is no credential: whether it is on is what the
			// reader needs (allow-secrets-in-urls: true).
		case secretName.MatchString(f.Name) && v != "":
			v = "****"
		case strings.Contains(v, "://"):
			v = printableURLs(v)
		}
		fmt.Fprintf(&b, "%s: %q\n", f.Name, v)
	})
	b.WriteString("# API keys come from the environment only:\n")
	for _, v := range keyVariables() {
		state := "unset"
		if getenv(v) != "" {
			state = "set (****)"
		}
		fmt.Fprintf(&b, "#   %s: %s\n", v, state)
	}
	_, _ = w.Write(b.Bytes())
}

// keyVariables are the environment variables that hold a provider's key or
// token, each once, in the order of the providers.
func keyVariables() []string {
	var out []string
	seen := map[string]bool{}
	add := func(vs ...string) {
		for _, v := range vs {
			if !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
	}
	for _, k := range providerKinds() {
		add(k.env...)
	}
	add(specKeyEnv, "CAMOFOX_ACCESS_KEY")
	return out
}
