// Package provider holds the cloud browser providers a
// [github.com/hybroute/hybroute.Router] sends public URLs to: the
// [Provider] interface a Router calls, the [Session] a provider hands out,
// and the clients of the services hybroute speaks.
//
// A provider creates one browser session per session key and releases it;
// the session names the CDP websocket the Router dials (CDPURL), the HTTP
// client that dials it (HTTPClient), or, for a browser server without CDP,
// a [RESTDriver]. Everything else (which URL may go to the cloud, the
// fallback to the local Chromium, the request guard inside the cloud
// browser) is the Router's: a provider only makes and ends sessions.
//
// The clients:
//
//   - [NewBrowserbase], [NewSteel], [NewBrowserUse] and
//     [NewBrowserUseGateway] (Browser Use's sessions bought through a
//     billing gateway);
//   - [NewBrowserless] and the other session APIs described by data
//     ([SessionAPIPreset], [LoadSessionAPISpec], [NewSessionAPI]);
//   - [CDPEndpoint]: a browser already running behind a CDP URL;
//   - [NewCamofox]: a REST browser server with no CDP endpoint.
//
// A failed call is an [*Error] that matches a sentinel with errors.Is:
// [ErrRateLimited], [ErrAuth], [ErrPayment], [ErrInvalidParam] or
// [ErrUnavailable], by what the provider said, not by its status alone. No error
// text carries an API key or a URL token. The clients are configured with
// [Option] values ([WithBaseURL], [WithHTTPClient], [WithSessionParams],
// [WithProfile], …); the HTTP client given with [WithHTTPClient] also dials
// the sessions' CDP websockets, so one transport governs the whole session.
//
// A provider of one's own implements [Provider] and sets its sessions'
// HTTPClient when the CDP dial needs its own transport or trusted roots.
package provider
