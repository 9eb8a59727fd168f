package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/provider"
)

// config is what the flags and the environment say about the router.
type config struct {
	provider     string // a providerNames value; "" picks from the environment
	providerURL  string // the provider API's base URL (self-hosted, or a stand-in)
	providerSpec string // a session API spec file, for --provider spec
	cdpURL       string
	autoLocal    bool
	allowPrivate bool
	allowSecrets bool
	cloudWebRTC  bool
	chromium     string
	idle         time.Duration
	verbose      bool
	allowedHosts hostList // operator rules: hybroute.WithAllowedHosts
	blockedHosts hostList // hybroute.WithBlockedHosts
	configPath   string   // --config (configfile.go)
	printConfig  bool     // --print-config

	// allowPrivateProvider lets the provider's URL be a private address
	// (provider.WithPrivateEndpoint).
	allowPrivateProvider bool
}

// hostList is a flag of host patterns: comma-separated, repeatable.
type hostList []string

func (h *hostList) String() string { return strings.Join(*h, ",") }

// Set adds the patterns of s. A value with none ("", ",") is an error: an
// empty allow list would read as no list at all, which allows every host,
// so the mistake fails closed instead of open.
func (h *hostList) Set(s string) error {
	n := 0
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*h = append(*h, p)
			n++
		}
	}
	if n == 0 {
		return errEmptyHostList
	}
	return nil
}

// errEmptyHostList is the error of a host list flag given no host.
var errEmptyHostList = errors.New("no host given; to put no rule, leave the flag out")

func (c *config) register(fs *flag.FlagSet) {
	fs.StringVar(&c.provider, "provider", "", "cloud browser provider: "+strings.Join(providerNames(), ", ")+
		" (default: the first whose API key is set in the environment, else none; local is none)")
	fs.StringVar(&c.providerSpec, "provider-spec", "", "with --provider spec: a JSON file describing a session API "+
		"(base_url, auth, create, id_field, cdp_field, release; see docs/library.md), its key in $"+specKeyEnv)
	fs.StringVar(&c.providerURL, "provider-url", "", "the provider API's base URL, for a self-hosted or stand-in API (default: the provider's own)")
	fs.StringVar(&c.cdpURL, "cdp-url", "", "with --provider cdp: the CDP endpoint of a remote browser service (routing stays hybrid); "+
		"without it: send every call to this browser (an override: never local, private URLs refused unless --allow-private)")
	fs.BoolVar(&c.autoLocal, "auto-local", true, "run calls that target private addresses (localhost, LAN) on the local Chromium")
	fs.BoolVar(&c.allowPrivate, "allow-private", false, "let a remote browser try private addresses it would otherwise refuse")
	fs.BoolVar(&c.allowSecrets, "allow-secrets-in-urls", false, "let a remote browser open URLs that carry a credential (token=, api_key=, a password…), which otherwise run locally or are refused")
	fs.BoolVar(&c.allowPrivateProvider, "allow-private-provider-url", false, "let the provider's URL (--provider-url, a spec's base_url, --cdp-url with --provider cdp) be a private address "+
		"(10.x, 192.168.x, link-local…): this process then sends its requests, and the key with them, into the local network, wherever that URL points. "+
		"Metadata addresses stay refused, and a key never goes over plain http except to loopback")
	fs.BoolVar(&c.cloudWebRTC, "cloud-webrtc", false, "keep WebRTC in cloud browsers' pages; it then reaches any address a page names "+
		"(metadata, private addresses, blocked hosts) over UDP and TCP from the provider's network, unseen by any rule (off: no RTCPeerConnection there, and window.open returns no handle)")
	fs.BoolVar(&c.verbose, "v", false, "log every routing decision")
	c.registerConfigFlags(fs)
	fs.Var(&c.allowedHosts, "allowed-hosts", "only these hosts may be reached, on every route and by every request: comma-separated "+
		"host names, *.name (its subdomains), IP addresses or prefixes (10.1.0.0/16); repeatable. Narrows the security rules, never widens them")
	fs.Var(&c.blockedHosts, "blocked-hosts", "these hosts may not be reached, on every route and by every request (patterns as --allowed-hosts); repeatable")
}

// registerBrowser adds the flags of the browsers a command runs: a
// command that runs none (check) does not offer them.
func (c *config) registerBrowser(fs *flag.FlagSet) {
	fs.StringVar(&c.chromium, "chromium", "", "the local Chromium or Chrome binary (default: $CHROMIUM, then chromium, google-chrome… on PATH, "+
		"then the system's own places and Chrome for Testing's caches; see README)")
	fs.DurationVar(&c.idle, "idle-timeout", 15*time.Minute, "release a browser session after this long unused")
}

// errConfig marks a configuration the command refuses.
var errConfig = errors.New("configuration")

// newProvider builds the provider the configuration names. strict requires
// its API key (serving needs it; explaining a decision does not).
func (c *config) newProvider(getenv func(string) string, strict bool) (provider.Provider, string, error) {
	name := strings.ToLower(strings.TrimSpace(c.provider))
	kinds := providerKinds()
	if name == "" {
		name = "none"
		for _, k := range kinds {
			if getenv(k.env[0]) != "" {
				name = k.name
				break
			}
		}
	}
	var opts []provider.Option
	if c.providerURL != "" {
		opts = append(opts, provider.WithBaseURL(c.providerURL))
	}
	if c.allowPrivateProvider {
		opts = append(opts, provider.WithPrivateEndpoint())
	}
	// checkURL refuses, before anything is served, a provider URL the
	// client would refuse at its first request.
	checkURL := func(flag, u string, keyed bool) error {
		if err := provider.CheckEndpoint(u, keyed, opts...); err != nil {
			return fmt.Errorf("%w: %s: %w", errConfig, flag, err)
		}
		return nil
	}
	if c.providerURL != "" && name != "cdp" && name != "none" && name != "local" {
		keyed := name != "camofox" || getenv("CAMOFOX_ACCESS_KEY") != ""
		if err := checkURL("--provider-url", c.providerURL, keyed); err != nil {
			return nil, "", err
		}
	}
	switch name {
	case "spec":
		p, specName, err := specProvider(c.providerSpec, getenv, strict, opts)
		if sp, ok := p.(*provider.SessionAPI); ok && err == nil && c.providerURL == "" {
			err = checkURL("--provider-spec base_url", sp.Spec().BaseURL, true)
		}
		if err != nil {
			return nil, "", err
		}
		return p, specName, nil
	case "camofox":
		// A camofox-browser server: no API key, an optional access key;
		// its URL from --provider-url, else $CAMOFOX_URL, else its default.
		if u := getenv("CAMOFOX_URL"); u != "" && c.providerURL == "" {
			if err := checkURL("$CAMOFOX_URL", u, getenv("CAMOFOX_ACCESS_KEY") != ""); err != nil {
				return nil, "", err
			}
			opts = append(opts, provider.WithBaseURL(u))
		}
		return provider.NewCamofox(getenv("CAMOFOX_ACCESS_KEY"), opts...), name, nil
	case "cdp":
		if c.cdpURL == "" {
			return nil, "", fmt.Errorf("%w: --provider cdp needs --cdp-url", errConfig)
		}
		if u, err := url.Parse(c.cdpURL); err == nil {
			if err := checkURL("--cdp-url", c.cdpURL, u.RawQuery != ""); err != nil {
				return nil, "", err
			}
		}
		return provider.CDPEndpoint(c.cdpURL, opts...), name, nil
	case "none", "local":
		return nil, "none", nil
	}
	for _, k := range kinds {
		if k.name != name {
			continue
		}
		if strict {
			var missing []string
			for _, e := range k.env {
				if getenv(e) == "" {
					missing = append(missing, e)
				}
			}
			if len(missing) > 0 {
				return nil, "", fmt.Errorf("%w: --provider %s needs %s in the environment", errConfig, name, strings.Join(missing, " and "))
			}
		}
		return k.make(getenv, opts), name, nil
	}
	return nil, "", fmt.Errorf("%w: unknown --provider %q (want one of %s)", errConfig, c.provider, strings.Join(providerNames(), ", "))
}

// logHandler is the Router's log on stderr, at the level --verbose sets.
func (c *config) logHandler(stderr io.Writer) slog.Handler {
	level := slog.LevelInfo
	if c.verbose {
		level = slog.LevelDebug
	}
	return slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})
}

// routerOptions are the Router's options from the configuration, with the
// provider's name (for messages).
func (c *config) routerOptions(stderr io.Writer) []hybroute.Option {
	opts := []hybroute.Option{
		hybroute.WithLogger(slog.New(c.logHandler(stderr))),
		hybroute.WithAutoLocalForPrivateURLs(c.autoLocal),
		hybroute.WithAllowPrivateURLs(c.allowPrivate),
		hybroute.WithAllowSecretsInURLs(c.allowSecrets),
		hybroute.WithCloudWebRTC(c.cloudWebRTC),
		hybroute.WithIdleTimeout(c.idle, 0),
	}
	if len(c.allowedHosts) > 0 {
		opts = append(opts, hybroute.WithAllowedHosts(c.allowedHosts...))
	}
	if len(c.blockedHosts) > 0 {
		opts = append(opts, hybroute.WithBlockedHosts(c.blockedHosts...))
	}
	if c.cdpURL != "" && !strings.EqualFold(c.provider, "cdp") {
		opts = append(opts, hybroute.WithCDPURL(c.cdpURL))
	}
	if c.chromium != "" {
		opts = append(opts, hybroute.WithChromiumPath(c.chromium))
	}
	if testRouterOptions != nil {
		opts = append(opts, testRouterOptions(stderr)...)
	}
	return opts
}

// newRouter builds the router the configuration describes.
func (c *config) newRouter(getenv func(string) string, stderr io.Writer, strict bool, extra ...hybroute.Option) (*hybroute.Router, string, error) {
	p, name, err := c.newProvider(getenv, strict)
	if err != nil {
		return nil, "", err
	}
	r, err := hybroute.New(p, append(c.routerOptions(stderr), extra...)...)
	if err != nil {
		return nil, "", err
	}
	return r, name, nil
}

// describe is one line on the routing the configuration gives.
func (c *config) describe(provider string) string {
	switch {
	case c.cdpURL != "" && provider != "cdp":
		return "every call goes to the browser at --cdp-url (not local; private URLs " + allowed(c.allowPrivate) + ")"
	case provider == "none":
		return "no cloud provider: every call runs on the local Chromium"
	case c.autoLocal:
		return "cloud provider " + provider + "; private addresses run on the local Chromium"
	}
	return "cloud provider " + provider + "; private addresses " + allowed(c.allowPrivate)
}

func allowed(on bool) string {
	if on {
		return "allowed on the remote browser"
	}
	return "refused"
}

// parseViewport reads "WIDTHxHEIGHT".
func parseViewport(s string) (int, int, error) {
	w, h, ok := strings.Cut(strings.ToLower(strings.TrimSpace(s)), "x")
	if !ok {
		return 0, 0, fmt.Errorf("%w: --viewport %q: want WIDTHxHEIGHT, e.g. 1280x720", errConfig, s)
	}
	wi, err1 := strconv.Atoi(w)
	hi, err2 := strconv.Atoi(h)
	if err1 != nil || err2 != nil || wi < 0 || hi < 0 || wi > 10000 || hi > 10000 {
		return 0, 0, fmt.Errorf("%w: --viewport %q: want WIDTHxHEIGHT, e.g. 1280x720", errConfig, s)
	}
	return wi, hi, nil
}

// testRouterOptions is nil in a release build. A build with the
// hybroutetest tag sets it, so the tests of the built binary send traffic
// to loopback only.
var testRouterOptions func(stderr io.Writer) []hybroute.Option
