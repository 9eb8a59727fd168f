package docs_test

import (
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/hybroute/hybroute"

// layer is the rank of each package of the library's module: a package may
// import the module's packages of a lower rank only, so the arrows point
// one way (docs/decisions/2026-12-03-a-facade-root-and-layers-that-point-one-way.md).
// A package missing from this table fails the test: a new package takes a
// place in the layering on purpose, not by accident.
var layer = map[string]int{
	// Leaves: one job each, no rules of the product.
	"internal/metadata":  0,
	"store":              1,
	"internal/whatwg":    0,
	"internal/redact":    0,
	"internal/secrets":   1, // named secrets, over redact
	"internal/procfs":    0,
	"internal/chromium":  0,
	"internal/cdpcompat": 0,
	"internal/cdpmux":    0,
	"internal/dnstest":   0,
	"internal/redistest": 0,
	// A tab's screencast, shared by the live view and the session record.
	"internal/screencast": 0,
	// The Host and Origin check of the loopback servers (MCP, live view).
	"internal/hostguard": 0,
	// The live view: a session's tab shown to a person, whose input goes
	// back through the Router's calls (the root lends them).
	"internal/liveview": 1,
	// The staged end of a session.
	"internal/teardown": 0,
	// The one location type: which browser a call, a rule or a guard
	// speaks of.
	"route": 0,
	// The sticky route of each session key.
	"internal/routememory": 1,
	// What a URL is: the scanner, the CDP dial, and the network policy.
	"internal/urlscan": 1,
	"internal/cdpconn": 1,
	"netpolicy":        1,
	// The router's shared state, guarded (the fleet), and the provider's
	// health kept in it: mechanisms that know nothing of the policy, the
	// telemetry or a provider's errors.
	"internal/fleet":  2,
	"internal/health": 2,
	// How a provider's failure reads: its account, whether it is the
	// configuration's, the provider's share of a creation's time.
	"internal/outage": 3,
	// What the root's options set, and their defaults.
	"internal/config": 3,
	// The conformance suite every Store runs, public for users' stores.
	"hybroutetest/storetest": 2,
	// Stand-ins for the parts users have (provider APIs in front of a
	// real Chromium), which know nothing of the library.
	"internal/testenv":     1,
	"internal/testlog":     1,
	"internal/cloudtest":   2,
	"internal/camofoxtest": 3,
	// The enforcement points: they carry out decisions the root makes.
	// Beside them, the mechanics of a tab, on any browser, and the handle a
	// session keeps of its tab.
	"internal/guard":      2,
	"internal/egress":     2,
	"internal/browsertab": 2,
	// The cloud browser providers: they make and end sessions, and know
	// nothing of the Router, its rules or its enforcement points.
	"provider":              2,
	"internal/providertest": 3,
	// The local Chromium's process, with its guard and egress proxy.
	"internal/sidecar":   3,
	"internal/remotetab": 3,
	// A session's storage state, as a file and in memory; cookie jars on
	// disk for persistent profiles; the fair queue of tab openings.
	"state":              0,
	"internal/admission": 0,
	"internal/profiles":  4,
	// The session cache's mechanics, generic over the router's entry.
	"internal/sessions": 1,
	// A seam for the root's tests into store.Memory's records.
	"internal/storeseam": 0,
	// The floor as the router applies it: the options turned into one
	// policy, and the decisions the guard and the egress check carry out.
	// Not an enforcement point: it decides, they enforce.
	"internal/floor": 3,
	// The instruments and the bounded names they count under, the Router's
	// spans, and the decorators of the provider and the store.
	"internal/telemetry": 3,
	// A session key's storage state in and out of its browsers, over the
	// tab mechanics; the rules of which browser may hold what are lent.
	"internal/statesync": 3,
	// A cloud session, or the local floor in its place: the provider's
	// health and slots, the connect, the fallback; generic over the
	// router's entry.
	"internal/cloud": 4,
	// The facade: the Router, its plan, sessions and tabs.
	"": 5,
	// The toolset's engines: text for the model, the snapshot and the
	// downloads; they know nothing of the Router.
	"agent/internal/modeltext": 1,
	"agent/internal/snapshot":  2,
	"agent/internal/download":  2,
	// A session's record and its replay file: frames and a timeline it is
	// handed, redacted by the toolset.
	"agent/internal/record": 0,
	// Users of the facade.
	"agent":              6,
	"internal/agenttest": 7,
	// The toolset fuzzer: the model-misuse generator and its invariants,
	// which know the Router, not the toolset (the agent package's tests
	// use it); and the world it runs on, in process and over MCP.
	"internal/toolfuzz":     6,
	"internal/toolfuzztest": 8,
	// The test kit for users' agents: the facade's Router on the
	// stand-ins.
	"hybroutetest":       7,
	"examples/agent":     8,
	"examples/dashboard": 8,
	"docs":               8,
}

// forbidden are edges the ranks would allow but the layout does not: the
// guard and the egress check hold no rule about where a URL may go (they
// ask the root), and neither knows of the other; the tab mechanics and the
// sidecar hold no rule either (the sidecar's guard and proxy come from its
// owner, the root); a provider makes sessions and decides nothing about
// the URLs a page opens (it asks netpolicy only to class its own
// endpoint's address, provider/endpoint.go).
var forbidden = map[string][]string{
	"internal/guard":      {"netpolicy", "internal/egress", "internal/urlscan"},
	"internal/egress":     {"netpolicy", "internal/guard", "internal/urlscan"},
	"internal/browsertab": {"netpolicy", "internal/urlscan", "internal/guard", "internal/egress"},
	"internal/sidecar":    {"netpolicy", "internal/urlscan"},
	"internal/remotetab":  {"netpolicy", "internal/urlscan", "internal/egress"},
	"internal/statesync":  {"netpolicy", "internal/urlscan", "internal/guard", "internal/egress"},
	"provider":            {"internal/urlscan"},
}

func TestLayersPointOneWay(t *testing.T) {
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			rel = ""
		}
		base := d.Name()
		if rel != "" && (strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") || base == "testdata" ||
			isModule(path)) {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(path, "go.mod")); rel != "" && err == nil {
			return filepath.SkipDir // a module of its own
		}
		pkg, err := build.Default.ImportDir(path, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		seen[rel] = true
		rank, ok := layer[rel]
		if !ok {
			t.Errorf("package %q has no layer: add it to the table in docs/layers_test.go", "./"+rel)
			return nil
		}
		for _, imp := range pkg.Imports {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			dep := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
			if isTestPart(dep) && !isTestPart(rel) && !strings.HasPrefix(rel, "examples/") {
				t.Errorf("%q imports the test part %q: library code never runs on stand-ins", "./"+rel, "./"+dep)
			}
			if slices.Contains(forbidden[rel], dep) {
				t.Errorf("%q imports %q, which the layout forbids", "./"+rel, "./"+dep)
			}
			if r, ok := layer[dep]; ok && r >= rank {
				t.Errorf("%q (layer %d) imports %q (layer %d): arrows point to lower layers only", "./"+rel, rank, "./"+dep, r)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for p := range layer {
		if !seen[p] {
			t.Errorf("the table names %q, which is no package of the module", "./"+p)
		}
	}
}

// isTestPart reports whether a package is one of the parts tests run on
// (stand-ins, a real redis-server, the store suite, test resolvers, the
// public test kit).
func isTestPart(rel string) bool {
	base := rel[strings.LastIndex(rel, "/")+1:]
	return strings.HasPrefix(rel, "internal/") && (strings.HasSuffix(base, "test") || base == "testenv" || base == "testlog") ||
		rel == "hybroutetest" || strings.HasPrefix(rel, "hybroutetest/")
}

// isModule reports whether dir holds a module of its own (cmd, redisstore,
// bench, ...), whose packages are not the library's.
func isModule(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "go.mod"))
	return err == nil
}
