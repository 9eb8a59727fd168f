package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/hybroute/hybroute/provider"
)

// The providers --provider names: what each needs from the environment and
// how it is built. The session API presets come from the library, so a
// preset added there is known here.

// providerKind is one --provider choice.
type providerKind struct {
	name string
	// env are the variables it needs, the key first; the default provider
	// is the first kind (in providerKinds order) whose key is set.
	env []string
	// what says what it is and supports, for the usage text.
	what string
	make func(getenv func(string) string, opts []provider.Option) provider.Provider
}

// presetEnv is the key variable of each session API preset.
var presetEnv = map[string]string{
	"browserless":  "BROWSERLESS_TOKEN",
	"anchor":       "ANCHOR_API_KEY",
	"kernel":       "KERNEL_API_KEY",
	"hyperbrowser": "HYPERBROWSER_API_KEY",
	"browser-cash": "BROWSER_CASH_API_KEY",
}

// providerKinds are the providers with an API, in the order the default is
// picked from the environment; "camofox" (no API key), "cdp", "none"
// (alias "local") and "spec" are handled apart.
func providerKinds() []providerKind {
	kinds := []providerKind{
		{name: "browserbase", env: []string{"BROWSERBASE_API_KEY", "BROWSERBASE_PROJECT_ID"}, what: "Browserbase sessions",
			make: func(getenv func(string) string, opts []provider.Option) provider.Provider {
				return provider.NewBrowserbase(getenv("BROWSERBASE_API_KEY"), getenv("BROWSERBASE_PROJECT_ID"), opts...)
			}},
		{name: "browser-use", env: []string{"BROWSER_USE_API_KEY"}, what: "Browser Use browsers, API v3 (v2, v4 for a key scoped to them)",
			make: func(getenv func(string) string, opts []provider.Option) provider.Provider {
				return provider.NewBrowserUse(getenv("BROWSER_USE_API_KEY"), opts...)
			}},
		{name: "browser-use-v2", env: []string{"BROWSER_USE_API_KEY"}, what: "Browser Use browsers, API v2 first",
			make: func(getenv func(string) string, opts []provider.Option) provider.Provider {
				return provider.NewBrowserUse(getenv("BROWSER_USE_API_KEY"), append(opts, provider.WithBrowserUseAPI(provider.BrowserUseV2))...)
			}},
		// The gateway's origin is BROWSER_USE_GATEWAY_URL, else hermes-agent's
		// default under TOOL_GATEWAY_DOMAIN.
		{name: "nous", env: []string{"TOOL_GATEWAY_USER_TOKEN"}, what: "Browser Use through the managed gateway (idempotent creates)",
			make: func(getenv func(string) string, opts []provider.Option) provider.Provider {
				origin := getenv("BROWSER_USE_GATEWAY_URL")
				if origin == "" {
					origin = provider.GatewayOrigin(getenv("TOOL_GATEWAY_DOMAIN"))
				}
				return provider.NewBrowserUseGateway(origin, getenv("TOOL_GATEWAY_USER_TOKEN"), opts...)
			}},
		{name: "steel", env: []string{"STEEL_API_KEY"}, what: "Steel sessions",
			make: func(getenv func(string) string, opts []provider.Option) provider.Provider {
				return provider.NewSteel(getenv("STEEL_API_KEY"), opts...)
			}},
	}
	for _, name := range provider.SessionAPIPresets() {
		spec, _ := provider.SessionAPIPreset(name)
		env := presetEnv[name]
		if env == "" {
			env = strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + "_API_KEY"
		}
		what := spec.Name + " sessions (session API preset)"
		if spec.SingleConnection {
			what += ", one websocket per session"
		}
		kinds = append(kinds, providerKind{name: name, env: []string{env}, what: what,
			make: func(getenv func(string) string, opts []provider.Option) provider.Provider {
				p, _ := provider.NewSessionAPI(spec, getenv(env), opts...)
				return p
			}})
	}
	return kinds
}

// providerNames lists every --provider value.
func providerNames() []string {
	names := []string{}
	for _, k := range providerKinds() {
		names = append(names, k.name)
	}
	return append(names, "camofox", "spec", "cdp", "none", "local")
}

// specProvider builds the provider of a --provider-spec file, whose key
// is $HYBROUTE_PROVIDER_KEY.
func specProvider(path string, getenv func(string) string, strict bool, opts []provider.Option) (provider.Provider, string, error) {
	if path == "" {
		return nil, "", fmt.Errorf("%w: --provider spec needs --provider-spec FILE", errConfig)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, "", fmt.Errorf("%w: --provider-spec: %w", errConfig, err)
	}
	defer f.Close()
	spec, err := provider.LoadSessionAPISpec(f)
	if err != nil {
		return nil, "", fmt.Errorf("%w: --provider-spec %s: %w", errConfig, path, err)
	}
	if strict && getenv(specKeyEnv) == "" {
		return nil, "", fmt.Errorf("%w: --provider-spec needs %s in the environment", errConfig, specKeyEnv)
	}
	p, err := provider.NewSessionAPI(spec, getenv(specKeyEnv), opts...)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", errConfig, err)
	}
	return p, spec.Name, nil
}

// specKeyEnv holds the key of a --provider-spec provider.
const specKeyEnv = "HYBROUTE_PROVIDER_KEY"
