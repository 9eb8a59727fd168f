package provider

import (
	"net/http"
	"time"
)

// What the black-box tests of this package need of its insides.

// ParseRetryAfter is parseRetryAfter.
var ParseRetryAfter = parseRetryAfter

// GatewayTimeout is how long one request to the managed gateway may take.
const GatewayTimeout = gatewayTimeout

// SetGatewayRetryWait makes the gateway client b wait f(n) before retry n
// when the answer names no Retry-After.
func SetGatewayRetryWait(b *BrowserUse, f func(n int) time.Duration) { b.gateway.wait = f }

// GatewayKeptKey reports the idempotency key the gateway client b keeps
// for a session key, if any.
func GatewayKeptKey(b *BrowserUse, key string) (string, bool) { return b.gateway.kept(key) }

// HTTPClientOf is the HTTP client b sends its requests with.
func HTTPClientOf(b *BrowserUse) *http.Client { return b.client }

// SetPollInterval makes p read a starting session every d.
func SetPollInterval(p *SessionAPI, d time.Duration) { p.pollEvery = d }
