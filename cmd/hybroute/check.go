package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent"
	"github.com/hybroute/hybroute/netpolicy"
)

const checkUsage = `Usage: hybroute check [flags] [URL...]
       hybroute check [flags] --code FILE   (or --code - for stdin)

Explains where each URL would run, and why: the host as Chromium parses it,
the addresses it resolves to, its class and the rule that decided it, the
route and the session cache key, and the option that would change the
outcome. URLs are completed as browser_navigate completes them
(localhost:3000 is http://localhost:3000/). With --code, the URL literals of
the whole call are explained, and the call's plan with them.

Exit status: 0 when the call would run, 2 when it would be blocked, 1 on a
usage error. It takes the same routing flags as "hybroute mcp"; API keys are
not needed (nothing is contacted but DNS).

Flags:
`

// checkSession is the session key the explanations use.
const checkSession = "check"

// urlReport is the explanation of one URL.
type urlReport struct {
	Input     string       `json:"input"`
	URL       string       `json:"url"`
	Host      string       `json:"host,omitempty"`
	Addresses []addrReport `json:"addresses,omitempty"`
	Resolve   string       `json:"resolve_error,omitempty"`
	Class     string       `json:"class"`
	Rule      string       `json:"rule"`
	Secret    string       `json:"secret_in_url,omitempty"`
	Blocked   bool         `json:"blocked"`
	Error     string       `json:"error,omitempty"`
	Route     string       `json:"route,omitempty"`
	CacheKey  string       `json:"cache_key,omitempty"`
	Decision  string       `json:"decision"`
	Change    string       `json:"change"`
	ScanNote  string       `json:"scan_note,omitempty"`
	// Inside names the data: URL whose document holds this URL: the
	// browser loads what a data: document names, so the plan decides it.
	Inside string `json:"inside,omitempty"`
}

type addrReport struct {
	Addr  string `json:"addr"`
	Class string `json:"class"`
	Range string `json:"range,omitempty"`
}

// callReport is the plan of a whole call (--code).
type callReport struct {
	URLs     int    `json:"urls"`
	Route    string `json:"route,omitempty"`
	CacheKey string `json:"cache_key,omitempty"`
	Blocked  bool   `json:"blocked"`
	Error    string `json:"error,omitempty"`
}

type checkReport struct {
	Routing string      `json:"routing"`
	Call    *callReport `json:"call,omitempty"`
	URLs    []urlReport `json:"urls"`
}

func runCheck(ctx context.Context, args []string, e env) int {
	fs := flag.NewFlagSet("hybroute check", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	var cfg config
	cfg.register(fs)
	codeFile := fs.String("code", "", "explain the URL literals of the call's code in FILE (- reads stdin)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	fs.Usage = func() { fmt.Fprint(e.stderr, checkUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitFailure
	}
	if err := loadConfigFile(fs, cfg.configPath); err != nil {
		fmt.Fprintln(e.stderr, "hybroute check:", err)
		return exitFailure
	}
	if cfg.printConfig {
		printConfig(e.stdout, fs, e.getenv)
		return exitOK
	}
	for _, a := range fs.Args() {
		// "--allow-private false" is the switch on and a stray word, not
		// the switch off: refuse it rather than check "false" as a URL.
		if strings.EqualFold(a, "true") || strings.EqualFold(a, "false") {
			fmt.Fprintf(e.stderr, "hybroute check: %q is no URL; give a switch its value as --flag=%s\n", a, strings.ToLower(a))
			return exitFailure
		}
	}
	if *codeFile == "" && fs.NArg() == 0 {
		fmt.Fprintln(e.stderr, "hybroute check: give URLs, or --code FILE")
		return exitFailure
	}
	var code string
	if *codeFile != "" {
		var data []byte
		var err error
		if *codeFile == "-" {
			data, err = io.ReadAll(io.LimitReader(e.stdin, 64<<20))
		} else {
			data, err = os.ReadFile(*codeFile)
		}
		if err != nil {
			fmt.Fprintln(e.stderr, "hybroute check:", err)
			return exitFailure
		}
		code = string(data)
	}
	r, provider, err := cfg.newRouter(e.getenv, e.stderr, false, checkOptions...)
	if err != nil {
		fmt.Fprintln(e.stderr, "hybroute check:", err)
		return exitFailure
	}
	defer r.Close()

	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rep := explainAll(ctx, r, &cfg, provider, code, fs.Args())
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		printReport(e.stdout, rep)
	}
	if rep.blocked() {
		return exitBlocked
	}
	return exitOK
}

// checkOptions are extra router options of the check command (a test sets a
// resolver here).
var checkOptions []hybroute.Option

func (rep *checkReport) blocked() bool {
	if rep.Call != nil && rep.Call.Blocked {
		return true
	}
	for _, u := range rep.URLs {
		if u.Blocked {
			return true
		}
	}
	return false
}

func explainAll(ctx context.Context, r *hybroute.Router, cfg *config, provider, code string, urls []string) *checkReport {
	rep := &checkReport{Routing: cfg.describe(provider)}
	if code != "" {
		lits := hybroute.ScanURLs(code)
		// The plan's verdicts: one per literal and one per URL that a
		// data: literal's document names, as the call is decided.
		p, err := r.Plan(ctx, checkSession, code)
		cr := &callReport{URLs: len(p.Verdicts)}
		if err != nil {
			cr.Blocked, cr.Error = true, err.Error()
		} else {
			cr.Route, cr.CacheKey = p.Route.String(), "<session>"+strings.TrimPrefix(p.CacheKey, checkSession)
		}
		rep.Call = cr
		for i, v := range p.Verdicts {
			ur := explain(ctx, r, cfg, provider, v.URL, v, i)
			if !slices.Contains(lits, v.URL) {
				ur.Inside = "a data: URL of the call"
			}
			rep.URLs = append(rep.URLs, ur)
		}
	}
	for _, in := range urls {
		u := agent.CompleteURL(in)
		ur := explain(ctx, r, cfg, provider, in, verdictOf(ctx, r, u), len(rep.URLs))
		rep.URLs = append(rep.URLs, ur)
		if !strings.HasPrefix(strings.ToLower(u), "data:") {
			continue
		}
		// A data: URL opens a document: explain what it names as the
		// plan of opening it decides it.
		at := len(rep.URLs) - 1
		key := fmt.Sprintf("%s-%d", checkSession, at)
		p, err := r.Plan(ctx, key, u, hybroute.Navigation())
		for _, v := range p.Verdicts {
			if v.URL == u {
				continue
			}
			inner := explain(ctx, r, cfg, provider, v.URL, v, len(rep.URLs))
			inner.Inside = u
			rep.URLs = append(rep.URLs, inner)
		}
		last := &rep.URLs[at]
		if err != nil {
			last.Blocked, last.Error = true, err.Error()
			last.Decision = "blocked: its document names a URL that is blocked"
			last.Change = "none: change what the data: document loads"
		} else if len(p.Verdicts) > 1 {
			last.Route = p.Route.String()
			last.CacheKey = "<session>" + strings.TrimPrefix(p.CacheKey, key)
			last.Decision = "runs on the route of the URLs its document names"
		}
	}
	return rep
}

// verdictOf is the verdict on u as the plan of a navigation to it decides
// it: the first of the plan's verdicts is the URL's own.
func verdictOf(ctx context.Context, r *hybroute.Router, u string) netpolicy.Verdict {
	p, err := r.Plan(ctx, checkSession+"-verdict", u, hybroute.Navigation())
	if len(p.Verdicts) == 0 {
		return netpolicy.Verdict{URL: u, Class: netpolicy.ClassInvalid, Err: err}
	}
	return p.Verdicts[0]
}

// explain builds the report of one URL from its verdict. Its route is the
// Plan of a call whose only literal is the URL, on a session of its own, so
// no URL's route leans on another's.
func explain(ctx context.Context, r *hybroute.Router, cfg *config, provider, input string, v netpolicy.Verdict, i int) urlReport {
	u := v.URL
	rep := urlReport{Input: input, URL: u, Host: v.Host, Class: v.Class.String(), Blocked: v.Err != nil}
	for _, a := range v.Addrs {
		rep.Addresses = append(rep.Addresses, addrReport{Addr: a.String(), Class: netpolicy.ClassifyAddr(a).String(), Range: rangeName(a)})
	}
	if v.ResolveErr != nil {
		rep.Resolve = v.ResolveErr.Error()
	}
	rep.Rule = rule(v)
	rep.Secret = secretRule(v, cfg)
	if v.Err != nil {
		rep.Error = v.Err.Error()
	}
	if lits := hybroute.ScanURLs(u); len(lits) != 1 || lits[0] != u {
		rep.ScanNote = fmt.Sprintf("written in a call's code, this reads as the literals %q", lits)
	}
	switch {
	case rep.Blocked || v.Class == netpolicy.ClassNoRoute:
	case rep.ScanNote == "":
		key := fmt.Sprintf("%s-%d", checkSession, i)
		p, err := r.Plan(ctx, key, u)
		if err != nil {
			rep.Blocked, rep.Error = true, err.Error()
		} else {
			rep.Route = p.Route.String()
			rep.CacheKey = "<session>" + strings.TrimPrefix(p.CacheKey, key)
		}
	default:
		// The scanner reads the text otherwise: decide the route on the
		// URL as browser_navigate does (it is the literal itself).
		if r.HybridRoutesLocally(ctx, u) || provider == "none" && cfg.cdpURL == "" {
			rep.Route = "local"
		} else {
			rep.Route = "cloud"
		}
	}
	rep.Decision, rep.Change = decision(v, rep, cfg, provider)
	return rep
}

// rule says what decided the class, from what the verdict holds.
func rule(v netpolicy.Verdict) string {
	literal := false
	if a, err := netip.ParseAddr(strings.Trim(v.Host, "[]")); err == nil {
		literal = true
		_ = a
	}
	h := strings.TrimSuffix(v.Host, ".")
	switch v.Class {
	case netpolicy.ClassInvalid:
		return "Chromium would not load it, or its scheme is not one hybroute routes (fail closed)"
	case netpolicy.ClassNoRoute:
		return "it loads nothing from any network (about:blank, data:), so it runs wherever the session's page is"
	case netpolicy.ClassMetadata:
		switch {
		case literal:
			return "the address is a cloud metadata endpoint"
		case len(v.Addrs) == 0:
			return "the name is a cloud metadata name"
		}
		return "the name resolves to a cloud metadata address (one such answer decides)"
	case netpolicy.ClassPrivate:
		switch {
		case literal:
			return "the address is not globally routable"
		case h == "localhost" || strings.HasSuffix(h, ".localhost"):
			return "localhost names are this machine"
		case len(v.Addrs) > 0:
			return "the name resolves to an address that is not globally routable (one private answer makes the name private)"
		case v.ResolveErr != nil:
			return "the name does not resolve here, and its suffix is reserved for private networks"
		}
		return "the URL reads this machine (an allowed local scheme)"
	}
	switch {
	case literal:
		return "the address is globally routable"
	case len(v.Addrs) > 0:
		return "the name resolves only to globally routable addresses"
	}
	return "the name does not resolve here: public, the cloud browser resolves it itself"
}

// secretRule explains the secret_in_url rule for a URL that carries a
// credential, "" for one that does not.
func secretRule(v netpolicy.Verdict, cfg *config) string {
	if v.Credential == "" {
		return ""
	}
	what := fmt.Sprintf("query parameter %q", v.Credential)
	if v.Credential == "password" {
		what = "a userinfo password"
	}
	if cfg.allowSecrets {
		return "the URL carries a credential (" + what + "); --allow-secrets-in-urls lets remote browsers open it"
	}
	return "the URL carries a credential (" + what + "), so it is kept off cloud browsers (rule secret_in_url): " +
		"with auto-local routing it runs on the local Chromium, elsewhere it is refused"
}

// decision says what happens and which option would change it.
func decision(v netpolicy.Verdict, rep urlReport, cfg *config, provider string) (string, string) {
	override := cfg.cdpURL != "" && provider != "cdp"
	switch {
	case v.Class == netpolicy.ClassMetadata:
		return "blocked on every route", "none: cloud metadata is refused whatever the options"
	case v.Class == netpolicy.ClassInvalid:
		return "blocked", "none: fix the URL"
	case v.Class == netpolicy.ClassNoRoute:
		return "runs wherever the session's page is (no route of its own)", "none needed"
	case errors.Is(v.Err, netpolicy.ErrHostRule):
		return "blocked by an operator rule (" + reasonName(v.Err) + ")", "--allowed-hosts / --blocked-hosts decide it"
	case errors.Is(v.Err, netpolicy.ErrSecretInURL):
		return "blocked: the URL carries a credential (secret_in_url) and the browser that would open it is remote",
			"--allow-secrets-in-urls lets it through; with a provider, --auto-local and no --cdp-url it would run on the local Chromium"
	case v.Credential != "" && !cfg.allowSecrets && rep.Route == "local" && provider != "none" && !override && v.Class == netpolicy.ClassPublic:
		return "runs on the local Chromium: the URL carries a credential (secret_in_url), kept off the cloud browser",
			"--allow-secrets-in-urls would send it to the cloud browser"
	}
	where := map[string]string{"local": "the local Chromium", "cloud": "the cloud browser"}[rep.Route]
	if override && rep.Route == "cloud" {
		where = "the browser at --cdp-url"
	}
	if v.Class == netpolicy.ClassPublic {
		switch {
		case override:
			return "runs on " + where, "none needed"
		case provider == "none":
			return "runs on the local Chromium (no cloud provider)", "a --provider would send it to the cloud browser"
		}
		return "runs on the cloud browser", "--provider none would run it on the local Chromium"
	}
	// Private.
	switch {
	case rep.Blocked && override:
		return "blocked: the --cdp-url browser is not local", "--allow-private lets that browser try it; without --cdp-url, with a provider, it would run on the local Chromium"
	case rep.Blocked:
		return "blocked: auto-local routing is off", "--auto-local (the default) runs it on the local Chromium; --allow-private lets the cloud browser try it"
	case provider == "none" && !override:
		return "runs on the local Chromium (no cloud provider)", "none needed"
	case rep.Route == "local":
		return "runs on the local Chromium: auto-local routing keeps private addresses on this machine", "--auto-local=false refuses it (add --allow-private to let the cloud browser try it instead)"
	}
	return "runs on " + where + ": private addresses are allowed there", "--auto-local (with a provider and no --cdp-url) would run it on the local Chromium"
}

// rangeName names the well-known range an address is in, for the reader;
// the class itself is hybroute's.
func rangeName(a netip.Addr) string {
	a = a.Unmap()
	for _, r := range namedRanges {
		if r.p.Contains(a) {
			return r.name
		}
	}
	return ""
}

var namedRanges = func() []struct {
	p    netip.Prefix
	name string
} {
	list := []struct{ cidr, name string }{
		{"169.254.169.254/32", "the cloud metadata address (link-local)"},
		{"100.100.100.200/32", "Alibaba Cloud metadata"},
		{"168.63.129.16/32", "Azure wire server"},
		{"192.0.0.192/32", "Oracle Cloud metadata"},
		{"169.254.0.0/16", "link-local (cloud metadata)"},
		{"127.0.0.0/8", "loopback"},
		{"10.0.0.0/8", "private network (RFC 1918)"},
		{"172.16.0.0/12", "private network (RFC 1918)"},
		{"192.168.0.0/16", "private network (RFC 1918)"},
		{"100.64.0.0/10", "carrier-grade NAT"},
		{"0.0.0.0/8", "this network"},
		{"198.18.0.0/15", "benchmarking"},
		{"224.0.0.0/4", "multicast"},
		{"240.0.0.0/4", "reserved"},
		{"::1/128", "loopback"},
		{"fd00:ec2::/32", "AWS metadata (IPv6)"},
		{"fc00::/7", "unique local (ULA)"},
		{"fe80::/10", "link-local"},
		{"ff00::/8", "multicast"},
	}
	out := make([]struct {
		p    netip.Prefix
		name string
	}, len(list))
	for i, l := range list {
		out[i].p, out[i].name = netip.MustParsePrefix(l.cidr), l.name
	}
	return out
}()

func printReport(w io.Writer, rep *checkReport) {
	fmt.Fprintf(w, "routing: %s\n", rep.Routing)
	if c := rep.Call; c != nil {
		fmt.Fprintf(w, "\ncall: %d URL literal(s)\n", c.URLs)
		if c.Blocked {
			fmt.Fprintf(w, "  blocked:   %s\n", c.Error)
		} else {
			fmt.Fprintf(w, "  route:     %s (cache key %s)\n", c.Route, c.CacheKey)
		}
	}
	for _, u := range rep.URLs {
		fmt.Fprintf(w, "\n%s\n", u.Input)
		if u.URL != u.Input {
			fmt.Fprintf(w, "  url:       %s\n", u.URL)
		}
		if u.Host != "" {
			fmt.Fprintf(w, "  host:      %s (as Chromium parses it)\n", u.Host)
		}
		for _, a := range u.Addresses {
			line := a.Addr + " " + a.Class
			if a.Range != "" {
				line += " (" + a.Range + ")"
			}
			fmt.Fprintf(w, "  address:   %s\n", line)
		}
		if u.Resolve != "" {
			fmt.Fprintf(w, "  resolve:   %s\n", u.Resolve)
		}
		fmt.Fprintf(w, "  class:     %s\n", u.Class)
		fmt.Fprintf(w, "  rule:      %s\n", u.Rule)
		if u.Secret != "" {
			fmt.Fprintf(w, "  secret:    %s\n", u.Secret)
		}
		if u.Route != "" {
			key := u.CacheKey
			if key == "" {
				key = "-"
			}
			fmt.Fprintf(w, "  route:     %s (cache key %s)\n", u.Route, key)
		}
		fmt.Fprintf(w, "  decision:  %s\n", u.Decision)
		if u.Error != "" {
			fmt.Fprintf(w, "  error:     %s\n", u.Error)
		}
		fmt.Fprintf(w, "  change:    %s\n", u.Change)
		if u.ScanNote != "" {
			fmt.Fprintf(w, "  note:      %s\n", u.ScanNote)
		}
		if u.Inside != "" {
			fmt.Fprintf(w, "  inside:    %s (the browser loads what a data: document names)\n", u.Inside)
		}
	}
}

// reasonName is the rule a refusal names (host_blocked, …).
func reasonName(err error) string {
	if be, ok := errors.AsType[*netpolicy.BlockedError](err); ok {
		return be.Reason.String()
	}
	return "refused"
}
