// Package providertest builds the provider client that speaks to a
// cloudtest stand-in, for the tests of package provider and of the Router,
// which run the same clients against the same stand-ins.
package providertest

import (
	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/provider"
)

// DeadWS is a websocket URL for tests that never connect to the browser.
const DeadWS = "ws://127.0.0.1:9/devtools/browser/not-started"

// APIKinds are the providers with a session API (the managed gateway,
// whose create retries, has tests of its own).
var APIKinds = append([]cloudtest.Kind{cloudtest.Browserbase, cloudtest.BrowserUse, cloudtest.BrowserUseV2, cloudtest.Steel},
	cloudtest.SessionAPIKinds...)

// Client builds the client that talks to srv with its key.
func Client(srv *cloudtest.Server, opts ...provider.Option) provider.Provider {
	return ClientWithKey(srv, srv.APIKey, opts...)
}

// ClientWithKey builds the client that talks to srv with key, at srv's
// URL (opts come after that, so they may point it elsewhere).
func ClientWithKey(srv *cloudtest.Server, key string, opts ...provider.Option) provider.Provider {
	opts = append([]provider.Option{provider.WithBaseURL(srv.URL)}, opts...)
	switch srv.Kind {
	case cloudtest.Browserbase:
		return provider.NewBrowserbase(key, srv.ProjectID, opts...)
	case cloudtest.BrowserUse:
		return provider.NewBrowserUse(key, opts...)
	case cloudtest.BrowserUseV2:
		return provider.NewBrowserUse(key, append(opts, provider.WithBrowserUseAPI(provider.BrowserUseV2))...)
	case cloudtest.Nous:
		return provider.NewBrowserUseGateway(srv.URL, key, opts...)
	case cloudtest.Steel:
		return provider.NewSteel(key, opts...)
	case cloudtest.CDP:
		return provider.CDPEndpoint(srv.EndpointURL(), opts...)
	}
	if spec, ok := provider.SessionAPIPreset(string(srv.Kind)); ok {
		p, err := provider.NewSessionAPI(spec, key, opts...)
		if err != nil {
			panic(err)
		}
		return p
	}
	panic("unknown kind " + string(srv.Kind))
}
